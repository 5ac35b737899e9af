"""Ending a sandbox uid's processes (tspd.sandbox.uid): a process counts as dying once killed, and waiting for
dying processes returns when they exit, not after a fixed poll."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from tspd.sandbox.uid import dying, wait_gone


def _sleeper() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])


def test_a_live_process_is_not_dying_and_a_gone_one_is():
    p = _sleeper()
    try:
        assert not dying(p.pid)
    finally:
        p.kill()
        p.wait()
    assert dying(p.pid)          # reaped: no /proc entry left


def test_a_killed_process_is_dying_and_waiting_ends_at_its_exit():
    p = _sleeper()
    os.kill(p.pid, signal.SIGSTOP)
    p.send_signal(signal.SIGKILL)    # SIGKILL wakes it; it exits at its next scheduling
    try:
        assert dying(p.pid)
        start = time.monotonic()
        wait_gone([p.pid], timeout=10.0)
        assert time.monotonic() - start < 5.0 and p.poll() is not None
    finally:
        p.kill()
        p.wait()


def test_waiting_for_a_live_process_gives_up_at_its_timeout():
    p = _sleeper()
    try:
        wait_gone([p.pid], timeout=0.05)
        assert p.poll() is None
    finally:
        p.kill()
        p.wait()
