"""Speed measurements, one module per ``python -m tspd bench-*`` command (the commands: :mod:`tspd.commands`):
each holds what it measures, its record (schema, reader and writer) and the tables read from it.

- :mod:`tspd.bench.step`: decoding steps of a random-weight model against the roofline (``bench-step``)
- :mod:`tspd.bench.forward`: where a full forward's time goes, one speed lever at a time (``bench-forward``)
- :mod:`tspd.bench.loop`: the loop's work beyond its forwards on a real checkpoint (``bench-loop``)

For the notebooks, ``bench.measure(bench.parse(argv), command)`` is ``python -m tspd bench-step ARGV`` run in
the notebook's process.
"""
from __future__ import annotations

import argparse

from tspd.bench.step import measure


def parse(argv: list[str]) -> argparse.Namespace:
    """The arguments of ``python -m tspd bench-step`` from a list (for notebooks and tests)."""
    from tspd.commands.bench_step import add_arguments
    p = argparse.ArgumentParser(prog="python -m tspd bench-step")
    add_arguments(p)
    return p.parse_args(argv)


__all__ = ["measure", "parse"]
