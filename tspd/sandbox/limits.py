"""What one sandboxed run may use: wall and CPU time, memory, file size, processes, captured output.

Why each bound: a generated program may loop, allocate, fork or print without end; the wall clock covers
what CPU time does not (sleeping, blocking), ``RLIMIT_AS`` memory, ``RLIMIT_FSIZE`` any file written (the
captured output included), ``RLIMIT_NPROC`` fork and thread bombs (it holds because the program runs under
a fresh uid, :mod:`.uid`). A graded run applies them to the program and, separately, to its tests.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from tspd.sandbox.uid import count_tasks

KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30


@dataclass(frozen=True)
class Limits:
    """Resource limits of one sandboxed run (defaults are generous: 2 shared cores, cold starts)."""
    wall_seconds: float = 30.0       # whole run, interpreter start-up included
    cpu_seconds: int = 20            # RLIMIT_CPU (SIGXCPU, then SIGKILL 1 s later); the reference
                                     # of mbpp/123 alone needs ~10 s of CPU on a slow core
    memory_bytes: int = 2 * GIB      # RLIMIT_AS (virtual address space)
    file_bytes: int = 16 * MIB       # RLIMIT_FSIZE: any file written, captured stdout/stderr included
    max_processes: int = 32          # RLIMIT_NPROC: processes/threads of the sandbox uid
    output_bytes: int = 10 * KIB     # kept from the start of each of stdout and stderr
    guard: bool = True               # install the Python audit-hook guard (tspd.sandbox.guard)
    isolate_uid: bool = True         # as root: run under a fresh unprivileged uid (tspd.sandbox.uid)
    namespaces: bool = True          # network, IPC, mount and PID namespaces, the allowlist root (.isolate, .root)


def rlimits(limits: Limits, uid: int | None) -> list[tuple[str, int, int]]:
    """(name, soft, hard) of each resource limit the child sets on itself."""
    cpu = int(limits.cpu_seconds)
    nproc = limits.max_processes
    if uid is None:
        # RLIMIT_NPROC counts every task of the real uid, the evaluator's own threads included.
        nproc += count_tasks(os.getuid())
    return [("RLIMIT_CPU", cpu, cpu + 1), ("RLIMIT_AS", limits.memory_bytes, limits.memory_bytes),
            ("RLIMIT_FSIZE", limits.file_bytes, limits.file_bytes), ("RLIMIT_CORE", 0, 0),
            ("RLIMIT_NPROC", nproc, nproc)]
