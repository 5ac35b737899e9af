"""Files a sandboxed program left outside its working directory: counted, and gone.

Why two ways: where the program had a mount namespace (:mod:`.isolate`), everything it wrote outside its
directory went to private ``tmpfs`` mounts of ``/tmp``, ``/var/tmp`` and ``/dev/shm`` (the rest of the file
system is read-only to it), which the kernel frees with the namespace. The grader pins those mounts before
the program starts (a descriptor opened through ``/proc/<pid>/root``), so that it can count what was
left in them once the program is dead, then lets them go. Where there was no mount namespace, the
world-writable directories are swept instead: every entry owned by the program's uid is removed (that
finds nothing when the program ran under the evaluator's own uid, which is why the page on the threat model
names that case).
"""
from __future__ import annotations

import os
import shutil

WORLD_WRITABLE = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")   # the usual ones (/var/lock links to /run/lock)
MAX_COUNT = 100_000   # entries counted before giving up (the tmpfs holds at most a few thousand)


def pin(pid: int, directory: str) -> int | None:
    """A descriptor of ``directory`` as process ``pid`` sees it (its private mount), or None."""
    try:
        return os.open(f"/proc/{pid}/root{directory}", os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return None


def count_pinned(fd: int, skip: str | None = None) -> int:
    """Entries (files, directories, links) under a pinned mount, except the top-level entry ``skip`` (the
    path the sandbox rebuilt to its working directory); closes ``fd``."""
    total = 0
    try:
        for root, dirs, files, _ in os.fwalk(".", dir_fd=fd):
            if root == ".":
                dirs[:] = [d for d in dirs if d != skip]
                files = [f for f in files if f != skip]
            total += len(dirs) + len(files)
            if total >= MAX_COUNT:
                break
    finally:
        os.close(fd)
    return total


def sweep_uid(uid: int, directories=WORLD_WRITABLE) -> int:
    """Remove every entry owned by ``uid`` at the top of ``directories``. -> entries removed (with their
    contents). Run after the uid's processes are dead, so nothing is added behind the sweep."""
    removed = 0
    for directory in directories:
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.stat(follow_symlinks=False).st_uid != uid:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    removed += 1 + sum(len(d) + len(f) for _, d, f in os.walk(entry.path))
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    removed += 1
                    os.unlink(entry.path)
            except OSError:
                continue
    return removed
