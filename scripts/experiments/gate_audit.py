"""When does a controller commit a styled roster's hours, and what does its learned gate see then? (issue 67)

On ``tiny-leaning`` TSPD + CE answers none of its problems: every answer has a line whose hours do not add up.
This audit decodes the first ``--n`` test problems with a controller and, for every hour token (a digit after a
chore, ``styled``'s hours), records the step of its block at which it was committed, its confidence through those
steps, the gate's probability through them (TSPD only), how many hours of its line were committed in the same
forward, and whether the line's hours add up. With ``--traces`` it also counts, in the EGP trace file the gate was
trained on, the middle token-steps (confidence in [0.5, 0.9)) at each step of a block, how many of them are steady
(confidence within 0.05 of the step before) and how often those are fix-safe.

    python scripts/experiments/gate_audit.py --model tiny-leaning --n 20 --controller tspd --ce \\
        --traces runs/controllers/tiny-leaning-traces-egp-200.pt --out results/training/leaning-c1/gate-audit.json
"""
from __future__ import annotations

import argparse
import json
import statistics

import torch

from tspd import load_model
from tspd.decoding.controllers.tspd import TSPD
from tspd.decoding.loop import generate
from tspd.models.loading import window
from tspd.provenance import device_name, git_revision
from tspd.tasks import leaning, styled

MIDDLE = (0.5, 0.9)   # the confidence band a threshold of 0.9 holds back
STEADY = 0.05         # a trace that moved by less than this since the step before is steady


class RecordingTSPD(TSPD):
    """TSPD that keeps the gate probabilities of every step ([B, Lb] each)."""

    def __init__(self, weights=None):
        super().__init__(weights=weights)
        self.seen: list[torch.Tensor] = []

    def decide(self, view):
        decision = super().decide(view)
        self.seen.append(self.rt.probs.clone())
        return decision


def hour_positions(pieces: list[str]) -> list[int]:
    """Positions of the hour digits: a digit after a chore's name and an item marker (`` `` or ``:``), not a day
    number (after `` day``) nor the final line's count (after ``####``)."""
    markers = set(styled.FORMS["item"])
    return [j for j in range(2, len(pieces))
            if pieces[j] in {str(h) for h in styled.HOURS} and pieces[j - 1] in markers
            and pieces[j - 2].strip().isalpha() and pieces[j - 2] != " day"]


def audit_row(problem, pieces, trace, b, block_length, gate_steps) -> list[dict]:
    """One record per hour token of row ``b``."""
    line_of, line = [], 0
    for p in pieces:
        line_of.append(line)
        line += p.count("\n")
    lines = "".join(pieces).split("\n")
    ok = {k: styled.line_fault(problem, k + 1, text) is None for k, text in enumerate(lines) if text.startswith("On day")}
    committed_at = trace.committed[:, b, :].float().argmax(0).tolist()
    hours = hour_positions(pieces)
    out = []
    for j in hours:
        s = committed_at[j]
        first = int((trace.block == trace.block[s]).nonzero()[0])
        steps = range(first, s + 1)
        out.append(dict(row=b, position=j, token=pieces[j], step_in_block=s - first,
                        conf=[round(float(trace.conf[t, b, j]), 3) for t in steps],
                        gate=[round(float(gate_steps[t][b, j % block_length]), 3) for t in steps] if gate_steps else None,
                        hours_of_line_same_forward=sum(line_of[k] == line_of[j] and committed_at[k] == s for k in hours),
                        line_adds_up=ok.get(line_of[j], False)))
    return out


def trace_coverage(path: str, steps: int = 4) -> list[dict]:
    """Middle token-steps at each step of a block in a trace file, how many are steady, how often fix-safe."""
    from tspd.training.traces import load_traces
    d = load_traces(path)
    conf, labels, masked, off = d["features"][..., d["channels"].index("conf")], d["labels"].bool(), d["masked"].bool(), d["offsets"]
    lengths = (off[1:] - off[:-1]).tolist()
    rows = []
    for s in range(steps):
        idx = torch.tensor([off[k] + s for k, n in enumerate(lengths) if n > s], dtype=torch.long)
        c = conf[idx]
        mid = masked[idx] & (c >= MIDDLE[0]) & (c < MIDDLE[1])
        steady = mid & ((c - conf[idx - 1]).abs() < STEADY) if s else mid
        rows.append(dict(step=s, middle=int(mid.sum()), steady=int(steady.sum()),
                         steady_fix_safe=round(float(labels[idx][steady].float().mean()), 3) if steady.any() else None,
                         middle_fix_safe=round(float(labels[idx][mid].float().mean()), 3) if mid.any() else None))
    return rows


def summary(records: list[dict]) -> dict:
    by_step = {}
    for r in records:
        by_step.setdefault(r["step_in_block"], []).append(r)
    later = [r for r in records if r["gate"] and r["step_in_block"] >= 1]
    return dict(hours=len(records),
                committed_below_0_9=sum(r["conf"][-1] < MIDDLE[1] for r in records),
                median_conf_at_commit=statistics.median(r["conf"][-1] for r in records),
                mean_hours_of_line_same_forward=round(statistics.mean(r["hours_of_line_same_forward"] for r in records), 2),
                lines_adding_up=round(statistics.mean(r["line_adds_up"] for r in records), 3),
                by_step={s: dict(hours=len(rs), lines_adding_up=round(statistics.mean(r["line_adds_up"] for r in rs), 3))
                         for s, rs in sorted(by_step.items())},
                steady_then_committed=sum(abs(r["conf"][-1] - r["conf"][-2]) < STEADY for r in later),
                later_commits=len(later),
                median_gate_one_step_before=statistics.median(r["gate"][-2] for r in later) if later else None,
                median_gate_at_commit=statistics.median(r["gate"][-1] for r in later) if later else None)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="tiny-leaning")
    ap.add_argument("--task", choices=("styled", "leaning"), default="leaning", help="the model's task")
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--controller", default="tspd", help="tspd (its gate recorded) or any controller's name")
    ap.add_argument("--ce", action="store_true")
    ap.add_argument("--weights", default=None, help="a TSPD weight stem other than the model's own (a Table 9 variant)")
    ap.add_argument("--traces", default=None, help="the EGP trace file its gate was trained on")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    model = load_model(args.model)
    task = {"styled": styled, "leaning": leaning}[args.task]
    problems = task.load_split("test", args.n)
    controller = RecordingTSPD(args.weights) if args.controller == "tspd" else args.controller
    out = generate(model, [task.prompt(p) for p in problems], controller=controller, ce=args.ce, record_trace=True)
    _, Lb = window(model)
    gate_steps = controller.seen if isinstance(controller, RecordingTSPD) else None
    records = [r for b, p in enumerate(problems)
               for r in audit_row(p, [model.tokenizer.decode([i]) for i in out.token_ids[b].tolist()], out.trace, b,
                                  Lb, gate_steps)]
    result = dict(model=args.model, n=args.n, controller=args.controller, ce=args.ce, weights=args.weights,
                  right=sum(task.right(p, t) for p, t in zip(problems, out.texts)), tpf=out.tokens_per_forward,
                  summary=summary(records), trace_coverage=trace_coverage(args.traces) if args.traces else None,
                  git=git_revision(), device=device_name("cpu"), threads=args.threads, records=records)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps({k: v for k, v in result.items() if k != "records"}, indent=1))


if __name__ == "__main__":
    main()
