"""The regime page: is the book's model in the regime the paper studies, beside LLaDA-8B's anchors?

The record is :mod:`tspd.eval.regime_record`'s ``regime.json`` in the checkpoint directory: read back
when its weights and settings match, otherwise measured (only the missing rows). The page shows each
target (:data:`tspd.eval.regime_record.TARGETS`) with its 95 % interval, the bound, and LLaDA-8B-Instruct's
value where a source gives one (their numbers, :data:`tspd.eval.regime.ANCHORS`).
"""
from __future__ import annotations

import json
import shlex

from tspd.eval.regime import RegimeConfig
from tspd.eval.regime_record import measure, targets, weights_hash
from tspd.provenance import device_name, git_revision


def regime_record(model: str, n: int = 500, long_n: int = 100, long_windows: tuple[int, ...] = (),
                  batch: int = 100, device: str = "cpu", dtype: str | None = None, window: tuple[int, int] = (0, 0),
                  log=None) -> dict:
    """The checkpoint's regime record, measured where ``regime.json`` lacks a row (``long_windows`` empty:
    twice the checkpoint's window; TSPD + CE when the checkpoint has its controller). ``window`` (gen_length,
    block_length; 0: the checkpoint's own) may only name the checkpoint's own: the record is of that window."""
    from tspd.eval.tasks.generated import generated_task
    from tspd.models.loading import Checkpoint, load_model

    checkpoint = Checkpoint.open(model)
    path = checkpoint.path
    spec = json.loads((path / "config.json").read_text()).get("tspd_task")
    if not spec:
        raise ValueError(f"{path} names no generated task in its config.json: the regime record is for "
                         "train-lm checkpoints (a real LLaDA-8B's figures are the anchors themselves)")
    own = (spec["gen_length"], spec["block_length"])
    if any(w and w != o for w, o in zip(window, own)):
        raise ValueError(f"the regime record is measured at the checkpoint's own window {own[0]} / {own[1]}; "
                         f"leave gen_length and block_length at 0 (the longer windows are long_windows)")
    cfg = RegimeConfig(n=n, long_n=long_n, long_windows=tuple(long_windows) or (2 * spec["gen_length"],),
                       batch=batch, tspd_ce=(path / "controllers" / "tspd.json").is_file())
    out = path / "regime.json"
    lm = load_model(checkpoint, device=device, dtype=dtype or None)
    command = shlex.join(["python", "-m", "tspd", "regime", "--model", str(model), "--n", str(n), "--long-n",
                          str(long_n), "--long-windows", ",".join(map(str, cfg.long_windows))])
    meta = {"command": command, "git": git_revision() or "unknown",   # the stored record's where its rows are kept
            "device": device_name(lm.device), "model": str(model), "weights": weights_hash(path),
            "task": spec["name"], "gen_length": spec["gen_length"], "block_length": spec["block_length"]}
    return measure(lm, generated_task(spec["name"]), cfg, out, meta, log=log or (lambda s: None))


def target_rows(record: dict) -> list[dict]:
    """One row per target: ours with its interval, the bound, met or not, LLaDA-8B's value (theirs)."""
    rows = []
    for t in targets(record):
        a = t["anchor"]
        rows.append({"figure": t["what"], "ours": round(t["value"], 2),
                     "95 % interval": "" if t["lo"] == t["hi"] else f"{t['lo']:.1f} to {t['hi']:.1f}",
                     "target": f"{'>=' if t['kind'] == 'min' else '<='} {t['bound']:g}",
                     "met": "yes" if t["met"] else ("point only" if t["point_met"] else "no"),
                     "LLaDA-8B-Instruct (theirs)": "" if a is None else a[0]})
    return rows


def regime_figure(record: dict):
    """Five panels, one per target: ours (dot, 95 % interval) against the target (shaded: where it is met)
    and LLaDA-8B-Instruct's value (diamond, theirs)."""
    import matplotlib.pyplot as plt

    groups = [("TPF (Fast-dLLM 0.9)", ("fast_tpf",)), ("accuracy, %", ("vanilla",)),
              ("points a fixed schedule loses", ("fixed_loss",)), ("points a longer window loses", ("long_gap",)),
              ("points a cache costs", ("cache_cost",))]
    found = targets(record)
    fig, axes = plt.subplots(1, 5, figsize=(16, 3.6), gridspec_kw={"width_ratios": [1, 1, 1, 1, 2.4]})
    for ax, (title, keys) in zip(axes, groups):
        ts = [t for t in found if t["target"] in keys]
        for i, t in enumerate(ts):
            ax.errorbar(i, t["value"], yerr=[[t["value"] - t["lo"]], [t["hi"] - t["value"]]], fmt="o",
                        color="tab:green" if t["met"] else "tab:red", capsize=3)
            if t["anchor"] is not None:
                ax.plot(i, t["anchor"][0], "D", color="k", ms=6, label="LLaDA-8B (theirs)" if i == 0 else None)
        if ts:
            bound, kind = ts[0]["bound"], ts[0]["kind"]
            lo, hi = ax.get_ylim()
            ax.axhspan(bound, max(hi, bound * 1.1), alpha=0.12, color="tab:green") if kind == "min" else \
                ax.axhspan(min(lo, 0), bound, alpha=0.12, color="tab:green")
            ax.axhline(bound, color="tab:green", lw=1)
        ax.set_xticks(range(len(ts)), [_short(t["what"]) for t in ts], rotation=30, ha="right", fontsize=7)
        ax.set_title(title, fontsize=9)
    axes[0].legend(fontsize=7, loc="best")
    fig.suptitle(f"{record['model']}: dots ours with 95 % intervals (green: target met), shaded where the "
                 "target is met, diamonds LLaDA-8B-Instruct's own values", fontsize=9)
    fig.tight_layout()
    return fig


def _short(what: str) -> str:
    return (what.replace(", points", "").replace("the ", "").replace(" cache costs", "").replace("vanilla accuracy, %",
            "vanilla").replace("tokens per step loses", "tok/step").replace(" loses against", " vs"))


__all__ = ["regime_record", "target_rows", "regime_figure"]

