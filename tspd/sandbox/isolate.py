"""The kernel's walls around a sandboxed interpreter, raised by the interpreter itself before the program runs.

Why in the child (through ``ctypes``) and not with ``subprocess``: a network or mount namespace needs
privilege, so it is made while the child is still the evaluator (root, or the owner of a fresh user
namespace), and the identity is dropped only after; ``Popen(user=...)`` drops it before any code of ours
runs, and ``preexec_fn`` is unsafe in the threaded grader. Python 3.11 has no ``os.unshare``.

:func:`enter` (privileged) makes the namespaces:

* **network**: a new network namespace. Its only interface is a loopback that is down, so no address, the
  loopback of the machine included, can be reached (``connect`` fails with ENETUNREACH);
* **IPC**: a new IPC namespace, so System V shared memory, semaphores and message queues and POSIX message
  queues, which outlive the process that made them, die with the sandbox;
* **mounts**: a new mount namespace, private, in which the file system the program sees is built
  (:mod:`.root`: an allowlist root; :func:`read_only_view` where it cannot be built);
* **PIDs**: a new PID namespace, entered by the next child (:mod:`.reaper`), with a ``/proc`` of its own.

:func:`read_only_view` is the fallback view: every mount read-only (``mount_setattr``, or a remount of each
mount on kernels before 5.12), private ``tmpfs`` mounts on the world-writable ``/tmp``, ``/var/tmp`` and
``/dev/shm``, the working directory bound back, writable, at its own path, and the directories the grader
names (the benchmark's data, which holds the reference solutions) covered by an empty read-only ``tmpfs``,
unless the interpreter's own library lives under one.

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

CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = (0x00020000, 0x08000000, 0x10000000,
                                                                      0x20000000, 0x40000000)
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_NOATIME, MS_NODIRATIME, MS_RELATIME, MS_STRICTATIME = 1024, 2048, 1 << 21, 1 << 24
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
ST_RELATIME = 4096               # statvfs's flag (its other flags have the MS_ values above)
MNT_DETACH = 2
PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS = 4, 38
SYS_MOUNT_SETATTR = 442          # the same number on every architecture (the generic syscall table)
AT_FDCWD, AT_RECURSIVE, MOUNT_ATTR_RDONLY = -100, 0x8000, 0x1
PRIVATE_DIRS = ("/tmp", "/var/tmp", "/dev/shm")
TMPFS_OPTIONS = "mode=1777,size=64m,nr_inodes=4096"

libc = ctypes.CDLL(None, use_errno=True)


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64), ("propagation", ctypes.c_uint64),
                ("userns_fd", ctypes.c_uint64)]


def must(result: int, what: str) -> None:
    """Raise OSError (errno and ``what``) when a libc call returned non-zero."""
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, "%s: %s" % (what, os.strerror(err)))


def mount(source, target, fstype, flags, data=None) -> None:
    enc = lambda s: None if s is None else os.fsencode(s)   # noqa: E731
    must(libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)), "mount " + target)


def remount(target: str, flags: int) -> None:
    """Remount the mount at ``target`` with ``flags`` (``MS_RDONLY``, ``MS_NOSUID``, ...) added to the nosuid, nodev,
    noexec and atime flags it has (a bind remount replaces them all, and in a user namespace dropping one that
    is locked is refused); a read-only mount not given ``MS_RDONLY`` becomes writable."""
    has = os.statvfs(target).f_flag
    kept = has & (MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOATIME | MS_NODIRATIME)
    kept |= MS_RELATIME if has & ST_RELATIME else (0 if has & MS_NOATIME else MS_STRICTATIME)
    mount(None, target, None, MS_REMOUNT | MS_BIND | kept | flags)


def empty(target: str) -> None:
    """Cover ``target`` with an empty read-only ``tmpfs``."""
    mount("tmpfs", target, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=755")


def enter() -> dict:
    """Make the namespaces (see the module docstring); the file system is left as it was, in a private mount
    namespace. -> status for the grader: ``{"net", "ipc", "mount", "pid", "userns", "allowlist", "proc",
    "readonly": bool, "private": [dirs], "skeleton": {dir: first name of the rebuilt path}, "hidden": [dirs],
    "why": [reasons]}`` (the view and PID 1 fill in the rest)."""
    status = {"net": False, "ipc": False, "mount": False, "pid": False, "userns": False, "allowlist": False,
              "proc": False, "readonly": False, "private": [], "skeleton": {}, "hidden": [], "why": []}
    if os.geteuid() != 0 and not _user_namespace(status):
        return status
    for flag, name in ((CLONE_NEWNET, "net"), (CLONE_NEWIPC, "ipc")):
        try:
            must(libc.unshare(flag), "unshare(CLONE_NEW%s)" % name.upper())
            status[name] = True
        except OSError as e:
            status["why"].append(str(e))
    try:
        must(libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
        mount(None, "/", None, MS_REC | MS_PRIVATE)
        status["mount"] = True
        must(libc.unshare(CLONE_NEWPID), "unshare(CLONE_NEWPID)")
        status["pid"] = True
    except OSError as e:
        status["why"].append(str(e))
    return status


def read_only_view(work: str, hide, status: dict) -> None:
    """The fallback view (see the module docstring), in this process's mount namespace; ``work`` is the real path
    of the working directory, this process's cwd."""
    try:
        private_dirs(work, status)
        writable = status["private"] + [bind_work(work)]
    except OSError as e:
        status["why"].append(str(e))
        status["mount"] = False
        return
    try:   # everything read-only, then the private mounts and the working directory writable again
        _read_only_everywhere()
        for path in writable:
            remount(path, MS_NOSUID | MS_NODEV)
        status["readonly"] = True
    except OSError as e:
        status["why"].append(str(e))
    for path in hide:
        try:
            if _hideable(path):
                empty(path)
                status["hidden"].append(path)
        except OSError as e:
            status["why"].append(str(e))


def mount_proc(target: str, status: dict) -> None:
    """A ``/proc`` of this process's PID namespace at ``target`` (PID 1 calls it: it shows the namespace of its
    mounter)."""
    try:
        mount("proc", target, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        status["proc"] = True
    except OSError as e:
        status["why"].append(str(e))


def _user_namespace(status: dict) -> bool:
    """Not root: a user namespace mapping this uid and gid to themselves (capabilities inside it only)."""
    uid, gid = os.geteuid(), os.getegid()
    try:
        must(libc.unshare(CLONE_NEWUSER), "unshare(CLONE_NEWUSER)")
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
    if libc.syscall(ctypes.c_long(SYS_MOUNT_SETATTR), ctypes.c_int(AT_FDCWD), b"/", ctypes.c_uint(AT_RECURSIVE),
                    ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr))) == 0:
        return
    remount_each_read_only()


def remount_each_read_only(mountinfo: str = "/proc/self/mountinfo") -> None:
    """Kernels before 5.12 (no ``mount_setattr``): remount every mount read-only, one by one, keeping its
    nosuid/nodev/noexec/atime flags (:func:`remount`)."""
    with open(mountinfo) as f:
        targets = [line.split()[4].encode().decode("unicode_escape") for line in f]   # spaces are \040
    for target in targets:
        try:
            remount(target, MS_RDONLY)
        except OSError:
            if target == "/":
                raise


def private_dirs(work: str, status: dict, root: str = "") -> None:
    """Private ``tmpfs`` mounts on ``/tmp``, ``/var/tmp`` and ``/dev/shm`` (made first under ``root``, a new root
    being built; else only those that exist), and the working directory's path rebuilt in the one that held it."""
    for path in PRIVATE_DIRS:
        target = root + path
        if root:
            os.makedirs(target, exist_ok=True)
        elif not os.path.isdir(path) or os.path.islink(path):
            continue
        mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, TMPFS_OPTIONS)
        status["private"].append(path)
        if work.startswith(path + "/"):
            status["skeleton"][path] = os.path.relpath(work, path).partition(os.sep)[0]
            os.makedirs(root + work, 0o755)


def bind_work(work: str, root: str = "") -> str:
    """The working directory (still this process's cwd, even where a mount now covers its path) bound at its own
    path under ``root``; without a root, cwd moves onto the bound copy. -> the bound path."""
    target = root + work
    os.makedirs(target, 0o755, exist_ok=True)
    mount("/proc/self/cwd", target, None, MS_BIND)
    if not root:
        os.chdir(work)
    return target


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
    must(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(NO_NEW_PRIVS)")
    must(libc.prctl(PR_SET_DUMPABLE, int(dumpable), 0, 0, 0), "prctl(DUMPABLE)")


def _drop_capabilities() -> None:
    """Clear the effective, permitted and inheritable sets (``capset``, version 3), so that a program that
    keeps the evaluator's uid (in its own user namespace, or root when uid isolation is off) cannot unmount
    the private mounts or remount anything writable."""
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)
    data = (ctypes.c_uint32 * 6)()
    must(libc.capset(header, data), "capset")
