"""``python -m tspd regime``: a train-lm checkpoint's regime figures (TPF, the caches' costs, longer windows, the
fixed schedules), kept in ``<checkpoint>/regime.json`` and its TRAINING.md (:mod:`tspd.measures.regime`)."""
from __future__ import annotations

import argparse

from tspd.measures.regime import SECTION, RegimeConfig, markdown, measure_checkpoint, path_of, targets
from tspd.models.loading import DEFAULT_MODEL
from tspd.provenance import invoked
from tspd.records import training_md


def add_arguments(p: argparse.ArgumentParser) -> None:
    d = RegimeConfig()
    p.add_argument("--model", default=DEFAULT_MODEL, help="a checkpoint directory or zoo name trained by train-lm")
    p.add_argument("--n", type=int, default=d.n, help="test problems for the window's own figures")
    p.add_argument("--long-n", type=int, default=d.long_n, help="test problems for the longer windows (vanilla: costly)")
    p.add_argument("--long-windows", default=None, help="comma-separated longer windows, e.g. 512,1024 ('' for none; "
                   "default: twice the checkpoint's window)")
    p.add_argument("--tspd-ce", choices=("auto", "yes", "no"), default="auto",
                   help="TSPD + CE rows: auto = when the model has controllers/tspd")
    p.add_argument("--batch", type=int, default=d.batch, help="prompts per generate() call")
    p.add_argument("--out", default=None, help="the record's JSON (default: <model>/regime.json)")


def main(args: argparse.Namespace) -> int:
    windows = None if args.long_windows is None else tuple(int(w) for w in args.long_windows.split(",") if w.strip())
    cfg = RegimeConfig(n=args.n, long_n=args.long_n, long_windows=windows, batch=args.batch)
    command = invoked("regime")
    rec = measure_checkpoint(args.model, cfg, {"auto": None, "yes": True, "no": False}[args.tspd_ce], command=command,
                             out=args.out, log=lambda s: print(s, flush=True))
    training_md.write_section(path_of(args.model).parent, SECTION, markdown(rec))
    for t in targets(rec):
        print(f"{t['what']}: {t['value']:.2f} (band {t['band']}) {'met' if t['met'] else 'not met'}")
    return 0
