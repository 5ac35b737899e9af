"""A checkpoint's own record as one table (span ``model-accuracy``): its size, its accuracy at 1, 2, 4 and 8 tokens
per step (:mod:`tspd.book.accuracy`) and its probes (:mod:`tspd.records.train_lm_probes`), each row with n, its 95 %
interval where it has one and the file it comes from.

A row is marked as costing accuracy where its whole Wilson interval lies below vanilla's accuracy at one token per
step (Sec. 1: parallel decoding costs accuracy only where later tokens depend on earlier ones).
"""
from __future__ import annotations

import json
from pathlib import Path

from tspd.book.accuracy import reference_accuracy, reference_steps
from tspd.markdown import table
from tspd.models.loading import DEFAULT_MODEL, resolve_path
from tspd.measures import regime
from tspd.records import train_lm_evals, train_lm_probes
from tspd.records.files import shown
from tspd.stats import wilson

# the probes at a curve point, as the table names them: a roster model's day lines (tspd.training.roster_probes),
# a serial model's chains (tspd.training.serial_probes); a model's log leaves the other task's empty
CURVE_PROBES = {"probe_chore": "one masked chore of a day line filled from the others (teacher-forced)",
                "probe_pair": "two masked chores of a day line, each once, either order (teacher-forced)",
                **{f"probe_hop{h}": f"a chain's token {h} step{'s' * (h > 1)} past what is written (teacher-forced)"
                   for h in (1, 2, 4)},
                "one_pass_lines": "lines right in one forward, whole window masked (a roster's days, a game's cups)"}
COLUMNS = ["value", "95 % interval", "n", "below 1 token a step", "record"]


def size(model: str = DEFAULT_MODEL) -> str:
    """``0.90M parameters, 4 blocks`` (counted from the safetensors headers, blocks from config.json); a dash
    without weights."""
    from safetensors import safe_open
    path = Path(resolve_path(model))
    params = 0
    for f in sorted(path.glob("*.safetensors")):
        with safe_open(str(f), "pt") as st:
            for k in st.keys():
                n = 1
                for d in st.get_slice(k).get_shape():
                    n *= d
                params += n
    layers = json.loads((path / "config.json").read_text()).get("n_layers")
    return f"{params / 1e6:.2f}M parameters, {layers} blocks" if params else "-"


def _share(correct: int, n: int, reference: float | None) -> list:
    """value, interval, n and whether the whole interval lies below ``reference`` (blank without one)."""
    lo, hi = wilson(correct, n)
    below = "" if reference is None else ("yes" if hi < reference else "no")
    return [f"{100 * correct / n:.1f} %", f"{100 * lo:.1f}-{100 * hi:.1f} %", n, below]


def accuracy_rows(model: str) -> list[list]:
    """Vanilla at one token per step, then at each coarser schedule of the same record (fewest tokens first)."""
    vanilla = reference_accuracy(model)
    if vanilla is None:
        return [["right, 1 token a step (no evaluation or regime record)", "-", "-", "-", "", ""]]
    out = [["right, 1 token a step", *_share(vanilla.correct, vanilla.n, None)[:3], "", vanilla.source]]
    source = (f"{shown(resolve_path(model))}/{train_lm_evals.FILENAME}" if train_lm_evals.vanilla_steps(model)
              else str(shown(regime.path_of(model))))
    for r in sorted(reference_steps(model), key=lambda r: r["tokens_per_step"]):
        out.append([f"right, {r['tokens_per_step']} tokens a step", *_share(r["correct"], r["n"], vanilla.share), source])
    return out


def probe_rows(model: str) -> list[list]:
    """The final evaluation's probes (``probes.json``: the counterfactual copy, the one-forward final) and the task's
    probes at the last curve point (``eval_log.csv``; those its log ever filled: another task's columns stay empty),
    each where its record has it; a dash for a missing figure."""
    probes, out = train_lm_probes.load(model), []
    vanilla = reference_accuracy(model)
    where = f"{shown(resolve_path(model))}/{train_lm_probes.FILENAME}"
    if probes.get("cf_n"):
        n, share = int(probes["cf_n"]), probes.get("cf_next_copied")
        copied = None if share is None else round(share * n)
        out.append(["line 1's altered result copied, the rest masked",
                    "-" if copied is None else f"{100 * copied / n:.1f} % ({copied} of {n})", "", n, "", where])
    if probes.get("n") and "one_pass_final" in probes:
        n, share = int(probes["n"]), probes["one_pass_final"]
        cells = ["-", "-", n, ""] if share is None else _share(round(share * n), n, vanilla and vanilla.share)
        out.append(["final right in one forward, whole window masked", *cells, where])
    points, path = train_lm_probes.curve_points(model)
    last = points[-1] if points else {}
    logged = {k for row in points for k, v in row.items() if v is not None}   # its task's probes
    for key, what in CURVE_PROBES.items():
        if key in logged:
            value = "-" if last.get(key) is None else f"{100 * last[key]:.1f} %"
            out.append([what, value, "", int(last.get("n") or 0) or "-", "", str(shown(path))])
    return out


def card_rows(model: str = DEFAULT_MODEL) -> list[list]:
    """The table's rows: size, accuracy, probes."""
    return [["size", size(model), "", "", "", f"{shown(resolve_path(model))}/"]] + accuracy_rows(model) + probe_rows(model)


def needs_lines(model: str = DEFAULT_MODEL) -> bool:
    """Whether any row's interval lies below vanilla's accuracy: the model needs its own lines to be right."""
    return any(r[4] == "yes" for r in card_rows(model))


def model_table(model: str = DEFAULT_MODEL) -> str:
    """The model's record as a Markdown table, named in its header."""
    body = [[*r[:5], f"`{r[5]}`" if r[5] else ""] for r in card_rows(model)]
    return "\n".join(table([f"`{Path(str(model)).name}`", *COLUMNS], body))


__all__ = ["CURVE_PROBES", "size", "accuracy_rows", "probe_rows", "card_rows", "needs_lines", "model_table"]
