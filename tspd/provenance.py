"""Where a stored result came from: the code revision and the device, written beside every number.

The project's standard: stored results carry the command, revision and device that made them. These
two helpers are the one place that spells revision and device, so a training record, a run file and a
bench file name them the same way.
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path

import torch

REPO_ROOT = Path(__file__).resolve().parent.parent


def repo_relative(path: Path) -> str | None:
    """``path`` (absolute) relative to the repository root, or None where it lies outside the repository."""
    try:
        return path.relative_to(REPO_ROOT).as_posix()
    except ValueError:
        return None


def relative_arg(arg: str) -> str:
    """A command-line argument with an absolute path inside the repository (alone or as ``--opt=PATH``) written
    relative to the repository root, so that a stored command runs from any clone; any other argument as given.
    Symlinks are kept as typed (a worktree's ``runs`` link stays ``runs/...``)."""
    key, eq, value = arg.partition("=") if arg.startswith("--") and "=" in arg else ("", "", arg)
    if value.startswith("/"):
        value = repo_relative(Path(os.path.abspath(value))) or value
    return f"{key}{eq}{value}"


def invoked(command: str, argv: list[str] | None = None) -> str:
    """``python -m tspd COMMAND ARGS`` as this process was started (``argv``: ``sys.argv`` by default), with paths
    inside the repository relative to it: the command a stored record carries."""
    argv = list(sys.argv if argv is None else argv)[1:]
    argv = argv[1:] if argv[:1] == [command] else argv
    return shlex.join(["python", "-m", "tspd", command, *map(relative_arg, argv)])


def portable_path(value):
    """``value`` written ``<repo>/relative/path`` where it is an absolute path inside the repository; else as given."""
    if isinstance(value, str) and value.startswith("/"):
        relative = repo_relative(Path(value).resolve())
        if relative is not None:
            return "<repo>/" + relative
    return value


def portable(settings: dict) -> dict:
    """``settings`` with every path inside the repository written ``<repo>/relative/path`` (:func:`portable_path`).

    Keys of stored runs hash their settings; a controller's ``weights`` under ``results/variants`` is
    an absolute path, different in every clone. Hashing it relative to the repository lets a fresh
    clone find the runs committed from another (the files themselves still get the absolute path).
    """
    return {k: portable_path(v) for k, v in settings.items()}


def local(settings: dict) -> dict:
    """The inverse of :func:`portable`: ``<repo>/x`` becomes this clone's absolute path of ``x``."""
    return {k: str(REPO_ROOT / v[len("<repo>/"):]) if isinstance(v, str) and v.startswith("<repo>/") else v
            for k, v in (settings or {}).items()}


def git_revision() -> str | None:
    """``abc1234``, ``abc1234 + uncommitted`` when tracked files other than ``results/`` differ, or None outside a
    clone; ``$TSPD_REVISION`` first where the sender of a copied tree set it (the device tool's copy on a lent GPU
    carried a ``.git`` of an older commit: its files said 5b51b3e for code sent at f2413df).
    Untracked files (a scratch notebook, a linked ``.venv``) do not make code uncommitted."""
    if os.environ.get("TSPD_REVISION"):
        return os.environ["TSPD_REVISION"]

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(REPO_ROOT), *args], capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()
    try:
        rev = git("rev-parse", "--short", "HEAD")
        # stored results are not code, and neither are untracked files
        dirty = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)results")
    except (OSError, subprocess.SubprocessError):
        return None
    return (rev + (" + uncommitted" if dirty else "")) or None


def device_name(device: str | torch.device) -> str:
    """``NVIDIA H100 80GB HBM3`` for a GPU; the CPU model and torch's thread count for the CPU."""
    d = torch.device(device)
    if d.type == "cuda" and torch.cuda.is_available():
        return torch.cuda.get_device_name(d)
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    n = torch.get_num_threads()
    return f"{cpu} ({n} thread{'s' if n != 1 else ''})"


def settings_digest(settings) -> str:
    """12 hex digits of a SHA-256 over ``settings`` as sorted-key JSON (what is not JSON, as its str): the name
    of a stored result made from those settings (a trace set, a trained variant, Figures 3-4's reduction)."""
    return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()[:12]
