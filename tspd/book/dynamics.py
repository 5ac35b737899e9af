"""The regime page's dynamics section: does each model's confidence have the middle that TSPD and CE read
(paper Section 3), and does the method's gain grow with it? (beyond the paper)

The record is ``dynamics.json`` in the checkpoint directory (:mod:`tspd.records.dynamics`), measured by
:mod:`tspd.measures.dynamics` (``python -m tspd dynamics``: only the problems it lacks). This module presents it: the
shares with their 95 % intervals over prompts, the targets a model with the paper's middle is held to
(:data:`tspd.measures.dynamics.TARGETS`), what LLaDA-8B shows (:data:`THEIRS`: other papers' numbers, labelled as
theirs), and one figure: TSPD + CE's forwards relative to Fast-dLLM's against the model's right-but-unsure share.
"""
from __future__ import annotations

from tspd import theirs
from tspd.markdown import table
from tspd.measures.dynamics import FAST, OURS, TARGETS, VANILLA, DynamicsConfig, measure_checkpoint, targets
from tspd.provenance import REPO_ROOT
from tspd.records import dynamics as dynamics_file
from tspd.records.files import read_json, shown

ORACLE = REPO_ROOT / "results" / "training" / "oracle" / "oracle.json"   # python -m tspd oracle-dynamics

# LLaDA-8B-Instruct on GSM8K: what other papers saw of its middle (their numbers, not measured here; tspd/reported.json)
THEIRS = [tuple(f) for f in theirs.others("llada_dynamics")["findings"]]


def dynamics_record(model: str, n: int = DynamicsConfig.n, batch: int = DynamicsConfig.batch, device: str = "cpu",
                    as_recorded: bool = False) -> dict:
    """The notebook's call of :func:`tspd.measures.dynamics.measure_checkpoint` (quiet): ``as_recorded``: a model that
    has a record keeps its own settings in place of these (read back as measured, not extended to this page's n)."""
    stored = dynamics_file.load(model) if as_recorded else None
    cfg = DynamicsConfig(**stored["config"]) if stored else DynamicsConfig(n=n, batch=batch)
    return measure_checkpoint(model, cfg, device=device, command=(stored or {}).get("command") or
                              f"python -m tspd dynamics --model {model} --n {cfg.n}", log=lambda s: None)


def _cell(v: dict | None, digits: int = 1) -> str:
    return "" if v is None else f"{v['value']:.{digits}f} [{v['lo']:.{digits}f}, {v['hi']:.{digits}f}]"


def dynamics_table(records: dict[str, dict]) -> list[dict]:
    """A row per measure, a column per model: value [95 % interval over prompts]."""
    measures = [("answer tokens (problems)", lambda s: f"{s['answer_tokens']} ({s['prompts']})"),
                ("certain at their block's first forward, %", lambda s: _cell(s["certain_first"])),
                ("right but unsure (>= 2 steps final at conf 0.5-0.9), %", lambda s: _cell(s["unsure"])),
                ("cross 0.9 after a rise of >= 3 steps, %", lambda s: _cell(s["rise_crossed"])),
                ("cross 0.9 after the first forward, %", lambda s: _cell(s["crossed"])),
                ("moved traces, % of token-steps at conf 0.3-0.9", lambda s: _cell(s["moved_middle"])),
                ("Fig. 1: P_flip moved - steady, points", lambda s: _cell(s["flip_gap"])),
                ("EGP / Fast-dLLM 0.9 forwards (the oracle's headroom)",
                 lambda s: _cell(s["oracle"]["egp_over_fast"], 2)),
                ("TSPD + CE / Fast-dLLM 0.9 forwards", lambda s: _cell((s.get(OURS) or {}).get("over_fast"), 2)),
                ("right answers: vanilla / Fast-dLLM / TSPD + CE",
                 lambda s: " / ".join(str(s.get(f"{k}_correct", "-")) for k in (VANILLA, FAST, OURS)))]
    return [{"measure": name, **{label: get(r["summary"]) for label, r in records.items()}} for name, get in measures]


def band_table(records: dict[str, dict]) -> list[dict]:
    """Per model and confidence band: token-steps before commit, and how often the argmax is not the final token
    for steady and for recently-moved traces (Fig. 1's definition; states with 4 steps of history)."""
    return [{"model": label, "confidence": b["band"], "token-steps": b["token_steps"],
             "steady: states": b["steady_states"], "steady: P_flip, %": _cell(b["steady_flip"]),
             "moved: states": b["moved_states"], "moved: P_flip, %": _cell(b["moved_flip"])}
            for label, r in records.items() for b in r["summary"]["bands"]]


def target_table(records: dict[str, dict]) -> list[dict]:
    """A row per target of :data:`tspd.measures.dynamics.TARGETS`, a column per model: value [interval], met or not."""
    rows: dict[str, dict] = {}
    for label, r in records.items():
        for t in targets(r["summary"]):
            row = rows.setdefault(t["target"], {"target": t["what"], "bound": f">= {t['bound']:g}"})
            row[label] = ("-" if t["value"] is None else
                          f"{t['value']:.1f} [{t['lo']:.1f}, {t['hi']:.1f}]") + (", met" if t["met"] else ", not met")
    return list(rows.values())


def oracle_table(measured: dict[str, dict], path=ORACLE) -> list[dict]:
    """The oracle record's designs (what a perfectly learned model shows on each task's data,
    :mod:`tspd.measures.oracle`) beside the trained models of ``measured`` (their dynamics records): a row each,
    the certain share and the four targets, value [95 % interval]."""
    record = read_json(path)
    rows = [(f"oracle: {name}", d["summary"], f"{record['n']} answers") for name, d in record["designs"].items()]
    rows += [(f"trained: {label}", r["summary"], f"{r['summary']['prompts']} problems") for label, r in measured.items()]
    cols = {"unsure": "right but unsure, %", "moved_middle": "moved, % of the middle", "flip_gap": "Fig. 1's gap, points",
            "rise_crossed": "rise >= 3 before 0.9, %"}
    table = [{"decoded": name, "n": n, "certain at first forward, %": _cell(s["certain_first"]),
              **{cols[k]: _cell(s[k]) for k in cols}} for name, s, n in rows]
    bound = {key: f">= {b:g}" for key, b, _ in TARGETS}
    return table + [{"decoded": "target", "n": "", "certain at first forward, %": "", **{cols[k]: bound[k] for k in cols}}]


def sweep_ratios() -> dict[str, dict]:
    """Per model with a Pareto record (the book's ``results/pareto.json``, a training record's
    ``results/training/*/pareto/pareto.json``): TSPD + CE's forwards at Fast-dLLM 0.9's accuracy along its gate
    sweep, over Fast-dLLM's (:func:`tspd.book.pareto.equal_accuracy`)."""
    from tspd.book.pareto import RECORD, equal_accuracy
    out = {}
    for path in [RECORD, *sorted((REPO_ROOT / "results" / "training").glob("*/pareto/pareto.json"))]:
        got = equal_accuracy(path) if path.is_file() else None
        if got:
            out.setdefault(got["model"], got)
    return out


def premise_figure(records: dict[str, dict], sweeps: dict[str, dict] | None = None):
    """Beyond the paper (issue 67, item 5): per model, TSPD + CE's forwards relative to Fast-dLLM 0.9's at equal
    accuracy (95 % interval; below 1: the method is faster) against the share of answer tokens that are right but
    unsure (the premise it reads). A model with a gate sweep (``sweeps``, :func:`sweep_ratios`) is placed at
    Fast-dLLM's accuracy along it (named, not placed, where no gate of the sweep reaches it); another at the default
    gate, whose right answers the legend gives, where they agree with Fast-dLLM's within one answer; where they do
    not, the model is named in the legend and not placed (its forwards are not at equal accuracy). An interval open at the top (the sweep short of the accuracy in some
    resamples) is drawn to the frame with an arrow."""
    import matplotlib.pyplot as plt

    sweeps = sweep_ratios() if sweeps is None else sweeps
    points, unplaced = [], []
    for label, r in records.items():
        s = r["summary"]
        if label in sweeps:
            q = sweeps[label]
            how = f"at Fast-dLLM 0.9's {q['reference_accuracy']:.1f} % along the gate sweep, n = {q['n']}"
            if q["value"] == float("inf"):   # no gate of the sweep reaches Fast-dLLM's accuracy
                unplaced.append(f"{label} (its gate sweep never reaches Fast-dLLM 0.9's {q['reference_accuracy']:.1f} %, "
                                f"n = {q['n']}: not placed)")
                continue
        elif (s.get(OURS) or {}).get("over_fast"):
            q, ours, fast = s[OURS]["over_fast"], s.get(OURS + "_correct"), s.get(FAST + "_correct")
            how = f"default gate; right: TSPD + CE {ours}, Fast-dLLM {fast} of {s['prompts']}"
            if ours is None or fast is None or abs(ours - fast) > 1:
                unplaced.append(f"{label} ({how}: not at equal accuracy, not placed; no gate sweep)")
                continue
        else:
            continue
        points.append((label, s["unsure"], q, how))
    top = max([1.2] + [1.1 * v for _, _, q, _ in points for v in (q["value"], q["hi"]) if v < float("inf")])
    fig, ax = plt.subplots(figsize=(8.0, 4.8))
    for label, u, q, how in points:
        hi = min(q["hi"], top)
        line = ax.errorbar(u["value"], q["value"], xerr=[[u["value"] - u["lo"]], [u["hi"] - u["value"]]],
                           yerr=[[q["value"] - q["lo"]], [hi - q["value"]]], fmt="o", capsize=3,
                           label=f"{label} ({how})")
        if q["hi"] > top:
            ax.plot(u["value"], top, marker="^", color=line[0].get_color(), clip_on=False)
    for text in unplaced:
        ax.plot([], [], marker="x", ls="none", color="gray", label=text)
    ax.set_ylim(0, top)
    ax.legend(fontsize=8.5, loc="upper left", bbox_to_anchor=(0.0, -0.16), frameon=False)
    ax.axhline(1.0, color="gray", lw=0.8, ls="--")
    ax.set_xlabel("right but unsure, % of answer tokens (vanilla traces)")
    ax.set_ylabel("TSPD + CE forwards / Fast-dLLM 0.9's\nat equal accuracy")
    ax.set_title("Does the method's gain grow with its premise? (ours, each model's own test problems)", fontsize=9,
                 loc="left")
    fig.tight_layout()
    return fig


ZOO_COLUMNS = ["model (n)", "right but unsure, %", "Fig. 1's gap, points", "rise >= 3 steps before 0.9, %",
               "TSPD + CE / Fast-dLLM 0.9 forwards", "right: vanilla / Fast-dLLM / TSPD + CE", "record"]


def zoo_dynamics_table() -> str:
    """The status page's table: a row per zoo model with a dynamics record, the premise (right but unsure, Fig. 1's
    gap, rises before 0.9) and what TSPD + CE made of it against Fast-dLLM 0.9, value [95 % interval over problems];
    a dash where the record lacks a figure."""
    from tspd.models.loading import ZOO
    rows = []
    for path in sorted(ZOO.glob(f"*/{dynamics_file.FILENAME}")):
        s = dynamics_file.load(path.parent.name, path)["summary"]
        right = " / ".join(str(s.get(f"{k}_correct", "-")) for k in (VANILLA, FAST, OURS))
        rows.append([f"`{path.parent.name}` ({s['prompts']})", *[_cell(s.get(k)) or "-" for k in
                                                                 ("unsure", "flip_gap", "rise_crossed")],
                     _cell((s.get(OURS) or {}).get("over_fast"), 2) or "-", right, f"`{shown(path)}`"])
    return "\n".join(table(ZOO_COLUMNS, rows))


def shifted_table(path=ORACLE) -> str:
    """The status page's table of the oracle's two-token-form designs (:data:`tspd.measures.oracle.SHIFTED`): their
    moved traces and rises before 0.9 beside the ``leaning`` design's, against the dynamics targets."""
    from tspd.measures.oracle import SHIFTED
    from tspd.tasks import leaning
    record = read_json(path)
    bound = {key: b for key, b, _ in TARGETS}
    base = f"styled, odds {leaning.P_PLAIN} / {leaning.P_MIXED_FIRST}"
    names = [base] + [name for name, _, _ in SHIFTED if name in record["designs"]]
    rows = []
    for name in names:
        s = record["designs"][name]["summary"]
        both = all(s[k]["value"] >= bound[k] for k in ("moved_middle", "rise_crossed"))
        rows.append([f"`leaning` ({name})" if name == base else name, _cell(s["moved_middle"]), _cell(s["rise_crossed"]),
                     "yes" if both else "no"])
    header = [f"oracle design (n = {record['n']} answers each)", f"moved traces, % of the middle (target >= "
              f"{bound['moved_middle']:g})", f"rise before 0.9, % (target >= {bound['rise_crossed']:g})", "meets both"]
    return "\n".join(table(header, rows + [["record", f"`{shown(path)}`", "", ""]]))


__all__ = ["THEIRS", "ORACLE", "dynamics_record", "dynamics_table", "band_table", "target_table", "oracle_table",
           "sweep_ratios", "premise_figure", "ZOO_COLUMNS", "zoo_dynamics_table", "shifted_table"]
