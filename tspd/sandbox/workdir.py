"""The directories of one sandboxed run: a private top directory of the evaluator's (the captured output
lives there, out of the program's reach) with one working directory per sandboxed interpreter, owned by
its uid; and their removal, whatever the program did to their permissions.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from tspd.sandbox.limits import KIB
from tspd.sandbox.uid import SandboxError


def make_top(isolated: bool) -> Path:
    """A fresh top directory: traversable by sandbox uids, not listable (mode 0711 when ``isolated``)."""
    top = Path(tempfile.mkdtemp(prefix="tspd-sandbox-", dir=temp_root(isolated)))
    if isolated:
        os.chmod(top, 0o711)
    return top


def make_work(top: Path, name: str, uid: int | None, files: dict[str, str]) -> Path:
    """``top/name`` holding ``files`` (name -> text), owned by ``uid`` and private to it when given."""
    work = top / name
    work.mkdir()
    for file, text in files.items():
        (work / file).write_text(text, encoding="utf-8")
        if uid is not None:
            os.chown(work / file, uid, uid)
    if uid is not None:
        os.chown(work, uid, uid)
        os.chmod(work, 0o700)
    return work


def remove_tree(path: Path) -> None:
    """Delete a sandbox directory, first giving back permissions the program may have taken away."""
    for root, dirs, _ in os.walk(path):
        for d in dirs:   # chmod before os.walk descends, so unreadable directories can be listed
            try:
                os.chmod(os.path.join(root, d), 0o700)
            except OSError:
                pass
    shutil.rmtree(path, ignore_errors=True)


def read_capped(f, cap: int) -> tuple[str, str]:
    """(first ``cap`` bytes with a truncation note, last 4 KiB) of an output file, decoded leniently."""
    f.flush()
    size = f.seek(0, os.SEEK_END)
    f.seek(0)
    head = f.read(cap).decode("utf-8", errors="replace")
    if size > cap:
        head += f"\n...[truncated {size - cap} bytes]"
    f.seek(max(0, size - 4 * KIB))
    tail = f.read().decode("utf-8", errors="replace")
    return head, tail


def temp_root(isolated: bool) -> str:
    """Where sandbox directories go: the system temp dir, or /tmp if a sandbox uid cannot reach it."""
    base = tempfile.gettempdir()
    if not isolated or _traversable(Path(base)):
        return base
    if _traversable(Path("/tmp")):
        return "/tmp"
    raise SandboxError(f"{base} is not traversable by other users; set TMPDIR to a world-traversable directory")


def _traversable(path: Path) -> bool:
    """Every directory from / to ``path`` lets others search it (mode o+x)."""
    path = path.resolve()
    for p in [path, *path.parents]:
        try:
            if not p.stat().st_mode & 0o001:
                return False
        except OSError:
            return False
    return True
