"""Drop the rows of batches whose wall time a disturbance inflated, so that the harness decodes them again.

A CPU run's seconds are wall time: a batch decoded while another heavy job shared the two cores (or while its
process was stopped) took several times its fellows per forward. Greedy decoding gives the same tokens again,
so removing those rows and rerunning the command that made the run (the harness computes missing rows)
measures their time again, alone. Its summary file goes too (the harness writes it anew).

    .venv/bin/python scripts/redo_disturbed.py RUNS_DIR [--ratio 1.8] [--dry-run]

A batch is disturbed when its seconds per forward (its wall time over its longest decoding's forwards) exceed
``--ratio`` times the median of its run's batches. Undisturbed batches of one run stay within about 1.6x of
each other on the 2-core AMD EPYC (their prompts differ in length); a stopped process or a second heavy job
gives 3x to several hundred times.
"""
from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from tspd.records.rows import ResultsFile


def disturbed(rows: list[dict], ratio: float) -> set[str]:
    """The batches of one run whose seconds per forward exceed ``ratio`` times the run's median."""
    batches: dict[str, tuple[float, int]] = {}
    for r in rows:
        seconds, nfe = batches.get(r["batch"], (r["batch_seconds"], 0))
        batches[r["batch"]] = (seconds, max(nfe, r["nfe"]))
    per_forward = {b: s / max(n, 1) for b, (s, n) in batches.items()}
    median = statistics.median(per_forward.values())
    return {b for b, v in per_forward.items() if v > ratio * median}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs_dir", type=Path)
    ap.add_argument("--ratio", type=float, default=1.8)
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args(argv)
    for path in sorted({p.with_name(p.name.removesuffix(".gz"))
                        for p in [*args.runs_dir.glob("*.jsonl"), *args.runs_dir.glob("*.jsonl.gz")]}):
        rows = ResultsFile(path).load()   # plain or packed (the controller table's)
        if not rows or "batch_seconds" not in rows[0]:
            continue
        bad = disturbed(rows, args.ratio)
        if not bad:
            continue
        kept = [r for r in rows if r["batch"] not in bad]
        print(f"{path.name}: {len(rows) - len(kept)} of {len(rows)} rows in {len(bad)} disturbed batches")
        if args.dry_run:
            continue
        ResultsFile(path).keep(kept)   # plain again (the harness appends the redone rows to it), summary gone
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
