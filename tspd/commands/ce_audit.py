"""``python -m tspd ce-audit``: does CE lift the tokens that rise, and what stops it (:mod:`tspd.measures.ce_audit`);
kept in ``<checkpoint>/ce_audit.json``."""
from __future__ import annotations

import argparse

from tspd.measures.ce_audit import measure_checkpoint, sweep
from tspd.models.loading import DEFAULT_MODEL
from tspd.provenance import invoked


def _floats(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"comma-separated numbers, e.g. 0.6,0.3,0 (got {text!r})") from None


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=DEFAULT_MODEL, help="a checkpoint directory or zoo name trained by train-lm")
    p.add_argument("--n", type=int, default=40, help="test problems")
    p.add_argument("--batch", type=int, default=10, help="prompts per generate() call")
    p.add_argument("--tau", type=_floats, default=(0.6, 0.3, 0.0), help="CE coverage thresholds (the paper's 0.6 first)")
    p.add_argument("--z", type=_floats, default=(1.645, 1.0, 0.5), help="CE risk tolerances (the paper's 1.645 first)")
    p.add_argument("--H", type=_floats, default=(20,), help="CE look-ahead horizons (the paper's 20 first)")
    p.add_argument("--device", default="cpu", help="cpu or cuda")


def main(args: argparse.Namespace) -> int:
    if args.n < 1 or args.batch < 1 or not (args.tau and args.z and args.H):
        raise ValueError("--n and --batch must be >= 1 and --tau, --z, --H each need a value")
    if not all(0 <= t < 1 for t in args.tau) or not all(h >= 1 and h == int(h) for h in args.H):
        raise ValueError(f"--tau lies in [0, 1) and --H is a whole number >= 1, got {args.tau} and {args.H}")
    command = invoked("ce-audit")
    settings = sweep(tau=args.tau, z=args.z, H=tuple(int(h) for h in args.H))
    rec = measure_checkpoint(args.model, args.n, args.batch, settings, args.device, command,
                             log=lambda s: print(s, flush=True))
    for a, d in zip(rec["audit"], rec["decode"][1:]):
        lifted = a["lifted"]["value"] if a["lifted"] else float("nan")
        print(f"{a['setting']}: {lifted:.1f} % of {a['rising']} rising tokens lifted early; Fast-dLLM 0.9 + CE "
              f"{d['right']} / {d['n']} right in {d['forwards']} forwards ({d['over_none']['value']:.3f} of none's)")
    return 0
