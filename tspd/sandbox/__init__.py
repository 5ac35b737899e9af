"""Run untrusted Python (a generated program and the tests that grade it) under limits, and grade it with a
verdict the program cannot write.

Used by the HumanEval and MBPP graders (pass@1; :func:`tspd.tasks.code.run_tests`). The layers, each
covering what the others miss (the threat model, with the test that shows each, is on the book's page
``book/sandbox.md``):

1. **Verdict** (:mod:`.checked`): the tests run in a second sandboxed process under another uid and call
   the program through a pipe that carries plain values only (:mod:`.codec`, :mod:`.serve`,
   :mod:`.check`); the verdict is theirs, so no printed line, exit status or lying ``__eq__`` passes.
2. **Process** (:mod:`.process`): a fresh interpreter (``python -I -B``) in a new session, stdin
   ``/dev/null``, output to files outside the working directory, only their first ``output_bytes`` kept.
3. **Resource limits** (:mod:`.limits`): CPU time, address space, file size, no core dumps, processes.
4. **Identity** (:mod:`.uid`): as root, a fresh unprivileged uid per process; every process of it is
   killed at the end.
5. **Namespaces** (:mod:`.isolate`): no network (a network namespace whose loopback is down), no IPC that
   outlives the run, and an allowlist root (:mod:`.root`, from :mod:`.allowlist`): a fresh read-only root
   holding only what the interpreter needs, the working directory and private ``/tmp``, ``/var/tmp`` and
   ``/dev/shm`` (nothing is left behind: what was left is counted, :mod:`.leftovers`), so no copy of the
   answer key anywhere on the machine is visible; a PID namespace whose PID 1 (:mod:`.reaper`) ends every
   process with the run and whose ``/proc`` shows the sandbox's processes only.
6. **Python guard** (:mod:`.guard`): an audit hook that refuses writes outside the working directory,
   signals, new processes and sockets with a clear error; ``ctypes`` bypasses it, not the layers above.

:func:`run_python` runs one self-checking program (a printed sentinel after its tests: a pass rule that
cooperating programs keep and hostile ones can forge, so the graders use :func:`run_checked`).
"""
from __future__ import annotations

import tempfile  # noqa: F401  (tests patch tempfile.mkdtemp through this module)

from tspd.sandbox.checked import run_checked
from tspd.sandbox.limits import GIB, KIB, MIB, Limits
from tspd.sandbox.outcome import SandboxResult, classify, last_exception
from tspd.sandbox.program import run_python
from tspd.sandbox.uid import UID_RANGE, SandboxError, interpreter, kill_uid, pids_of_uid

__all__ = ["GIB", "KIB", "MIB", "UID_RANGE", "Limits", "SandboxError", "SandboxResult", "classify", "interpreter",
           "kill_uid", "last_exception", "pids_of_uid", "run_checked", "run_python"]
