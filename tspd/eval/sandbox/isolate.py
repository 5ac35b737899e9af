"""The kernel's walls around a sandboxed interpreter, raised by the interpreter itself before the program runs.

Why in the child (through ``ctypes``) and not with ``subprocess``: a network or mount namespace needs
privilege, so it is made while the child is still the evaluator (root, or the owner of a fresh user
namespace), and the identity is dropped only after; ``Popen(user=...)`` drops it before any code of ours
runs, and ``preexec_fn`` is unsafe in the threaded grader. Python 3.11 has no ``os.unshare``.

:func:`enter` (privileged):

* **network**: a new network namespace. Its only interface is a loopback that is down, so no address, the
  loopback of the machine included, can be reached (``connect`` fails with ENETUNREACH);
* **IPC**: a new IPC namespace, so System V shared memory, semaphores and message queues and POSIX message
  queues, which outlive the process that made them, die with the sandbox;
* **files**: a new mount namespace in which every mount is read-only (``mount_setattr``, or a remount of
  each mount on kernels before 5.12), with private ``tmpfs`` mounts on the world-writable ``/tmp``,
  ``/var/tmp`` and ``/dev/shm``, and the working directory bound back, writable, at its own path. Whatever
  the program writes outside that directory lands in those private mounts and vanishes with the namespace;
* **hidden**: directories the grader names (the benchmark's data, which holds the reference solutions)
  covered by an empty read-only ``tmpfs``, unless the interpreter's own library lives under one.

When the evaluator is not root it first makes a user namespace that maps its own uid (unprivileged user
namespaces), and :func:`drop` then gives up every capability in it. Each wall that cannot be raised is
reported, not fatal: the grader warns and falls back (:mod:`.leftovers` sweeps by uid).

:func:`drop` (then): no supplementary groups, the sandbox uid and gid, ``PR_SET_NO_NEW_PRIVS`` (no setuid
binary gives privilege back), and ``PR_SET_DUMPABLE`` so that ``/proc/<pid>`` belongs to that uid (the
grader finds and kills the uid's processes through it); except for the tests' process when it shares the
evaluator's uid with the program: that one is made undumpable, out of the program's ``ptrace`` reach.

Stdlib only, Python 3.8 syntax: this file is loaded by the sandboxed interpreter (:mod:`.boot`).
"""
from __future__ import annotations

import ctypes
import os
import sys

CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWNET = 0x00020000, 0x08000000, 0x10000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
_MOUNT_FLAGS = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC, "noatime": 1024,
                "nodiratime": 2048, "relatime": 1 << 21, "strictatime": 1 << 24}
PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS = 4, 38
SYS_MOUNT_SETATTR = 442          # the same number on every architecture (the generic syscall table)
AT_FDCWD, AT_RECURSIVE, MOUNT_ATTR_RDONLY = -100, 0x8000, 0x1
PRIVATE_DIRS = ("/tmp", "/var/tmp", "/dev/shm")
TMPFS_OPTIONS = "mode=1777,size=64m,nr_inodes=4096"

_libc = ctypes.CDLL(None, use_errno=True)


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64), ("propagation", ctypes.c_uint64),
                ("userns_fd", ctypes.c_uint64)]


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, "%s: %s" % (what, os.strerror(err)))


def _mount(source, target, fstype, flags, data=None) -> None:
    enc = lambda s: None if s is None else os.fsencode(s)   # noqa: E731
    _check(_libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)), "mount " + target)


def enter(work: str, hide=()) -> dict:
    """Make the namespaces and mounts (see the module docstring). -> status for the grader:
    ``{"net", "ipc", "mount", "readonly", "userns": bool, "private": [dirs], "skeleton": {dir: first name of the
    rebuilt path}, "hidden": [dirs], "why": [reasons]}``."""
    status = {"net": False, "ipc": False, "mount": False, "readonly": False, "userns": False, "private": [],
              "skeleton": {}, "hidden": [], "why": []}
    if os.geteuid() != 0 and not _user_namespace(status):
        return status
    try:
        _check(_libc.unshare(CLONE_NEWNET), "unshare(CLONE_NEWNET)")
        status["net"] = True
    except OSError as e:
        status["why"].append(str(e))
    try:
        _check(_libc.unshare(CLONE_NEWIPC), "unshare(CLONE_NEWIPC)")
        status["ipc"] = True
    except OSError as e:
        status["why"].append(str(e))
    try:
        _check(_libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
        _mount(None, "/", None, MS_REC | MS_PRIVATE)
        _private_dirs(work, status)
        writable = status["private"] + [_bind_work(work)]
        status["mount"] = True
    except OSError as e:
        status["why"].append(str(e))
        return status
    try:   # everything read-only, then the private mounts and the working directory writable again
        _read_only_everywhere()
        for path in writable:
            _mount(None, path, None, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV)
        status["readonly"] = True
    except OSError as e:
        status["why"].append(str(e))
    for path in hide:
        try:
            if _hideable(path):
                _mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=755")
                status["hidden"].append(path)
        except OSError as e:
            status["why"].append(str(e))
    return status


def _user_namespace(status: dict) -> bool:
    """Not root: a user namespace mapping this uid and gid to themselves (capabilities inside it only)."""
    uid, gid = os.geteuid(), os.getegid()
    try:
        _check(_libc.unshare(CLONE_NEWUSER), "unshare(CLONE_NEWUSER)")
        for name, text in (("setgroups", "deny"), ("uid_map", "%d %d 1" % (uid, uid)), ("gid_map", "%d %d 1" % (gid, gid))):
            with open("/proc/self/" + name, "w") as f:
                f.write(text)
    except OSError as e:
        status["why"].append(str(e))
        return False
    status["userns"] = True
    return True


def _read_only_everywhere() -> None:
    attr = _MountAttr(MOUNT_ATTR_RDONLY, 0, 0, 0)
    if _libc.syscall(ctypes.c_long(SYS_MOUNT_SETATTR), ctypes.c_int(AT_FDCWD), b"/", ctypes.c_uint(AT_RECURSIVE),
                     ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr))) == 0:
        return
    remount_each_read_only()


def remount_each_read_only(mountinfo: str = "/proc/self/mountinfo") -> None:
    """Kernels before 5.12 (no ``mount_setattr``): remount every mount read-only, one by one, keeping its
    nosuid/nodev/noexec/atime flags (a bind remount replaces them all)."""
    with open(mountinfo) as f:
        rows = [line.split() for line in f]
    for row in rows:
        target = row[4].encode().decode("unicode_escape")   # mountinfo escapes spaces as \040
        flags = MS_REMOUNT | MS_BIND | MS_RDONLY
        for option in row[5].split(","):
            flags |= _MOUNT_FLAGS.get(option, 0)
        try:
            _mount(None, target, None, flags)
        except OSError:
            if target == "/":
                raise


def _private_dirs(work: str, status: dict) -> None:
    real_work = os.path.realpath(work)
    for path in PRIVATE_DIRS:
        if not os.path.isdir(path) or os.path.islink(path):
            continue
        _mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, TMPFS_OPTIONS)
        status["private"].append(path)
        if real_work.startswith(path + "/"):       # the working directory was under it: rebuild its path
            status["skeleton"][path] = os.path.relpath(real_work, path).partition(os.sep)[0]
            os.makedirs(real_work, 0o755)


def _bind_work(work: str) -> str:
    """The working directory (still this process's cwd, even where a tmpfs now covers its path) bound back at
    its own path; cwd moves onto the bound copy. -> its path."""
    real_work = os.path.realpath(work)
    _mount("/proc/self/cwd", real_work, None, MS_BIND)
    os.chdir(real_work)
    return real_work


def _hideable(path: str) -> bool:
    """An existing directory that holds neither the interpreter's library, its site-packages, nor the working
    directory."""
    path = os.path.realpath(path)
    if not os.path.isdir(path) or path == "/":
        return False
    import site
    keep = [os.path.dirname(os.__file__), os.getcwd(), sys.prefix, sys.base_prefix, *site.getsitepackages()]
    return not any(k == path or k.startswith(path + "/") for k in map(os.path.realpath, keep))


def drop(uid, dumpable: bool = True) -> None:
    """Become ``uid`` (None: stay who we are) for good: see the module docstring. ``dumpable=False`` (the
    tests' process when both run under the evaluator's uid) keeps a process of the same uid from reading its
    memory or descriptors through ``ptrace`` or ``/proc``."""
    if uid is not None:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)   # from root to another uid: every capability goes
    else:
        _drop_capabilities()
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(NO_NEW_PRIVS)")
    _check(_libc.prctl(PR_SET_DUMPABLE, int(dumpable), 0, 0, 0), "prctl(DUMPABLE)")


def _drop_capabilities() -> None:
    """Clear the effective, permitted and inheritable sets (``capset``, version 3), so that a program that
    keeps the evaluator's uid (in its own user namespace, or root when uid isolation is off) cannot unmount
    the private mounts or remount anything writable."""
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)
    data = (ctypes.c_uint32 * 6)()
    _check(_libc.capset(header, data), "capset")
