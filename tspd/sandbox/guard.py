"""The Python guard of a sandboxed interpreter: an audit hook (PEP 578) installed before the program runs.

Why a hook when the kernel layers exist: it turns what they would let through, or stop only with a bare
errno, into a PermissionError that names what was refused, and it is the only layer where the kernel ones
are missing (an evaluator that is not root and has no user namespaces). Audit hooks cannot be removed, but
``ctypes`` calls into libc never raise audit events, so this layer is bypassable; the uid, the namespaces
and the read-only mounts (:mod:`.isolate`) are not.

It refuses: writes, deletions and renames outside the working directory; signals to processes outside the
sandbox's process group; starting processes; and every socket connection, datagram or bind (the network
namespace already leaves nothing to reach; this is its second layer).

Stdlib only, Python 3.8 syntax: this file is loaded by the sandboxed interpreter (:mod:`.boot`).
"""
from __future__ import annotations

import os
import sys

_SPAWN = {"os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty", "subprocess.Popen",
          "pty.spawn"}
# event -> indices of the path arguments it mutates
_MUTATE = {"os.remove": (0,), "os.rmdir": (0,), "os.rename": (0, 1), "os.mkdir": (0,), "os.symlink": (1,),
           "os.link": (0, 1), "os.truncate": (0,), "os.chmod": (0,), "os.chown": (0,), "os.utime": (0,),
           "shutil.rmtree": (0,), "os.mkfifo": (0,), "os.mknod": (0,)}
_NETWORK = {"socket.connect", "socket.sendto", "socket.sendmsg", "socket.bind"}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
_ALLOWED = ("/dev/null",)


def install_guard(root: str) -> None:
    """Install the hook; ``root`` is the directory the program may write in (its working directory)."""
    realpath, fsdecode, sep = os.path.realpath, os.fsdecode, os.sep
    root = realpath(root)
    own_pgid = os.getpgid(0)

    def inside(path) -> bool:
        if isinstance(path, int):          # an already open descriptor
            return True
        p = realpath(fsdecode(path))
        return p == root or p.startswith(root + sep) or p in _ALLOWED

    def deny(what):
        raise PermissionError("sandbox: " + what)

    def signal_allowed(event, target) -> bool:
        if event == "os.killpg" or target < 0:
            return abs(target) == own_pgid or target == 0
        try:
            return target == 0 or os.getpgid(target) == own_pgid
        except OSError:
            return True                    # no such process: let kill() report it

    def hook(event, args):
        if event == "open":
            path, mode, flags = args
            writing = ((isinstance(mode, str) and any(c in mode for c in "wax+"))
                       or (isinstance(flags, int) and bool(flags & _WRITE_FLAGS)))
            if writing and path is not None and not inside(path):
                deny("write outside the sandbox directory: %s" % (path,))
        elif event in _MUTATE:
            for i in _MUTATE[event]:
                if i < len(args) and args[i] is not None and not inside(args[i]):
                    deny("%s outside the sandbox directory: %s" % (event, args[i]))
        elif event in ("os.kill", "os.killpg"):
            if not signal_allowed(event, args[0]):
                deny("signal to a process outside the sandbox")
        elif event in _SPAWN:
            deny("starting processes is not allowed (%s)" % event)
        elif event in _NETWORK:
            deny("network access is not allowed (%s %s)" % (event, args[1] if len(args) > 1 else ""))

    sys.addaudithook(hook)
