"""Token-trace dynamics (paper Section 3): does a model's confidence have the middle that TSPD and CE read?

The paper's premise, seen on LLaDA-8B: a token's confidence is not a step function. Within one confidence bin,
traces that moved recently end on another token more often than steady ones (Fig. 1), and many right tokens
climb along a trend for several steps before they cross a 0.9 threshold (Figs. 3/4). Where every token is
certain at once or split between free choices, a threshold already commits all that history could justify,
and no trace-aware controller can gain. This module measures how much middle a model has, from its own vanilla
decoding (one token per step, the checkpoint's window), over *answer tokens*: generated positions whose final
token is not EOS, each followed through the steps of its block while it is masked (the step that commits it
included: its forward saw it masked).

Per answer token (:func:`block_measures`, on one block's trace):

- ``certain_first``: certain at its block's first forward (argmax already final, confidence >= 0.9);
- ``unsure``: **right but unsure**: >= ``unsure_steps`` steps with the argmax already final, and staying so until
  the commit, while its confidence sits in [0.5, 0.9): what a trace-aware controller can commit before a
  threshold does;
- ``crossed``: its confidence first reaches 0.9 after the block's first forward, on its final token; its
  ``rise``: the steps in a row, ending at that crossing, in which the confidence grew by more than ``min_gain``
  with its argmax already the final token (a jump from 0.5 to 1 is a rise of 1; a climb on another token, such as
  a free choice's share growing as its rivals are written elsewhere, is none: CE's filter restarts when the argmax
  changes); CE's opportunity is a crossing after a rise of >= ``rise_steps``.

Per masked answer token-step (Fig. 1's states): its confidence band, and whether its trace *moved* (std of its
confidence over the last ``window`` steps, the current one included, > ``moved_std``; only steps with that much
history) and whether its argmax is not the final token (a flip). :func:`flip_gap` is Fig. 1's claim on them.

And the oracle's headroom: EGP (which knows vanilla's answer) against Fast-dLLM at 0.9, forwards per problem; where
the model has its controllers, TSPD + CE's forwards against Fast-dLLM's on the same problems (does the method's gain
grow with the middle it reads?).

Everything is counted per prompt (:func:`prompt_measures`), so that a record is resumable prompt by prompt and
every share has a cluster-bootstrap interval over prompts (:func:`summary`); a model with the paper's middle is held
to :data:`TARGETS` (:func:`targets`).

The record: ``python -m tspd dynamics`` (:mod:`tspd.commands.dynamics`) keeps ``dynamics.json`` beside the
checkpoint (committed for the zoo's models, ``tspd/zoo/<name>/dynamics.json``): the command, revision, device,
weights hash and settings, one row of counts per prompt and their summary. :func:`measure_checkpoint` writes it
batch by batch, measuring only the problems it lacks, so an interrupted measurement resumes; :func:`load` reads it.

The book (the regime page's dynamics section and the status page; beyond the paper): the shares with their 95 %
intervals over prompts (:func:`dynamics_table`, :func:`band_table`), the targets (:func:`target_table`), what
LLaDA-8B shows (:data:`THEIRS`: other papers' numbers, labelled as theirs), a row per zoo model
(:func:`zoo_dynamics_table`), and TSPD + CE's forwards relative to Fast-dLLM's at equal accuracy
(:func:`equal_accuracy_ratio`), which the regime page's premise map places (:func:`tspd.book.regime.premise_map`). The oracle's record, beside the trained models', is read in
:mod:`tspd.measures.oracle`.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from tspd import theirs
from tspd.decoding.config import DecodeConfig
from tspd.decoding.controllers.egp import EGP
from tspd.decoding.loop import generate
from tspd.decoding.names import slug
from tspd.markdown import table
from tspd.models.loading import ZOO, Checkpoint, CheckpointError, load_model, resolve_path, task_spec, weights_hash
from tspd.provenance import device_name, git_revision
from tspd.records.files import measure_by_batch, read_json, write_rows_json
from tspd.stats import cluster_bootstrap
from tspd.validate import UsageError

# --------------------------------------------------------------------------------------------------------------
# What a record compares and measures, and the bounds a model with the paper's middle meets
# --------------------------------------------------------------------------------------------------------------
# the decodings a record compares, named as regime.json names its rows (tspd.decoding.names)
VANILLA, FAST, OURS = slug("vanilla", sep="_"), slug("fast-dllm", sep="_"), slug("tspd", True, sep="_")
BANDS = (0.0, 0.3, 0.6, 0.9)      # lower edges of the confidence bands: [0, .3), [.3, .6), [.6, .9), [.9, 1]
MAX_RISE = 8                      # rise lengths are counted up to this (longer ones in its bucket)


@dataclass(frozen=True)
class DynamicsConfig:
    """What a dynamics record measures (stored as the record's ``config``; a changed field measures it again)."""
    n: int = 200               # problems of the task's test split
    batch: int = 10            # prompts per generate() call (on a CPU a larger batch is no faster; the test reruns one)
    window: int = 4            # Fig. 1's k: the steps a trace's spread is taken over, the current one included
    moved_std: float = 0.05    # a trace moved when that spread exceeds this (Fig. 1's "unstable")
    unsure_low: float = 0.5    # right but unsure: confidence in [unsure_low, certain) ...
    unsure_steps: int = 2      # ... for at least this many steps with the final argmax
    certain: float = 0.9       # the threshold a token is certain at (Fast-dLLM's, CE's c_min)
    min_gain: float = 0.01     # a step is part of a rise when the confidence of the final token grows by more than this
    rise_steps: int = 3        # CE's opportunity: a crossing after a rise of at least this many steps
    bins: int = 10             # Fig. 1's equal-width confidence bins


# What a model with the paper's Section-3 middle shows: (figure of the summary, bound, what it is). A bound is met
# when the whole 95 % interval is above it.
TARGETS = (("unsure", 15.0, "right but unsure, % of answer tokens"),
           ("moved_middle", 20.0, "moved traces, % of token-steps with confidence in [0.3, 0.9)"),
           ("flip_gap", 5.0, "Fig. 1: P_flip moved - steady within a bin, points (point >= 5, interval above 0)"),
           ("rise_crossed", 5.0, "cross 0.9 after a rise of >= 3 steps, % of answer tokens"))


# --------------------------------------------------------------------------------------------------------------
# One block's trace -> per-token and per-step measures (pure functions over tensors)
# --------------------------------------------------------------------------------------------------------------
@dataclass
class BlockMeasures:
    """One block of one prompt: per answer token (first four) and per masked answer token-step with history."""
    certain_first: torch.Tensor   # [T] bool
    unsure: torch.Tensor          # [T] bool: right but unsure
    crossed: torch.Tensor         # [T] bool: reaches the threshold after the first forward, on its final token
    rise: torch.Tensor            # [T] long: the rise that ended at that crossing (0 where none)
    conf: torch.Tensor            # [N] confidence of each masked answer token-step (every step, history or not)
    spread: torch.Tensor          # [N] std over the last ``window`` steps (NaN without that much history)
    flip: torch.Tensor            # [N] bool: the step's argmax is not the final token


def block_measures(conf: torch.Tensor, right: torch.Tensor, masked: torch.Tensor, answer: torch.Tensor,
                   cfg: DynamicsConfig = DynamicsConfig()) -> BlockMeasures:
    """The measures of one block: ``conf`` [S, L] top-1 confidence at each of the block's steps, ``right`` [S, L]
    whether that argmax is the final token, ``masked`` [S, L] whether the position was masked when the step's
    forward ran, ``answer`` [L] whether its final token is an answer token (not EOS)."""
    S, L = conf.shape
    conf = conf.float()
    t = torch.arange(S)[:, None].expand(S, L)
    tokens = answer & masked[0]                                       # the block's answer tokens (masked at its start)
    certain_first = masked[0] & right[0] & (conf[0] >= cfg.certain)
    last_wrong = torch.where(masked & ~right, t, -1).amax(0)          # the argmax is final from last_wrong + 1 on
    settled = masked & (t > last_wrong)
    in_band = (conf >= cfg.unsure_low) & (conf < cfg.certain)
    unsure = (settled & in_band).sum(0) >= cfg.unsure_steps
    high = masked & (conf >= cfg.certain)
    first_high = torch.where(high, t, S).amin(0)                      # S: never certain while masked
    crossing = (first_high >= 1) & (first_high < S)
    c = first_high.clamp(max=S - 1)
    crossed = crossing & right.gather(0, c[None])[0]
    gain = torch.zeros(S, L)
    gain[1:] = conf[1:] - conf[:-1]
    grew = (gain > cfg.min_gain) & right & masked & torch.cat([torch.zeros(1, L, dtype=torch.bool), masked[:-1]])
    # rise = length of the run of growing steps ending at the crossing: steps s <= c since the last non-growing one
    not_grew = torch.where(~grew & (t <= c), t, -1).amax(0)
    rise = torch.where(crossed, c - not_grew, 0)
    states = masked & answer                                          # every masked answer token-step
    spread = torch.full((S, L), float("nan"))
    if S >= cfg.window:
        spread[cfg.window - 1:] = conf.unfold(0, cfg.window, 1).std(-1)
    return BlockMeasures(certain_first[tokens], unsure[tokens], crossed[tokens], rise[tokens],
                         conf[states], spread[states], ~right[states])


# --------------------------------------------------------------------------------------------------------------
# Per-prompt counts (what a record stores) and Fig. 1's gap
# --------------------------------------------------------------------------------------------------------------
def band_of(conf: torch.Tensor) -> torch.Tensor:
    """Index of each confidence's band in :data:`BANDS`."""
    return torch.bucketize(conf, torch.tensor(BANDS[1:]), right=True)


def fig1_counts(conf: torch.Tensor, spread: torch.Tensor, flip: torch.Tensor, cfg: DynamicsConfig) -> np.ndarray:
    """[bins, 2, 2]: per equal-width confidence bin, (steady, moved) x (states, flips) of the states with history."""
    has = ~torch.isnan(spread)
    which = torch.bucketize(conf[has].clamp(0, 1 - 1e-9), torch.linspace(0, 1, cfg.bins + 1)[1:-1], right=True)
    moved = (spread[has] > cfg.moved_std).long()
    counts = np.zeros((cfg.bins, 2, 2), dtype=np.int64)
    np.add.at(counts, (which.numpy(), moved.numpy(), 0), 1)
    np.add.at(counts, (which.numpy(), moved.numpy(), 1), flip[has].long().numpy())
    return counts


def flip_gap_of(per_prompt: list[np.ndarray]) -> float:
    """Fig. 1: P_flip(moved) - P_flip(steady) within confidence bins, averaged over the bins that hold both kinds
    of state (weighted by their states), in points; NaN where no bin holds both."""
    c = np.sum(per_prompt, axis=0)
    both = (c[:, 0, 0] > 0) & (c[:, 1, 0] > 0)
    if not both.any():
        return float("nan")
    rate = c[both, :, 1] / c[both, :, 0]
    weight = c[both, :, 0].sum(1)
    return 100.0 * float(np.sum(weight * (rate[:, 1] - rate[:, 0])) / weight.sum())


def prompt_measures(blocks: list[BlockMeasures], cfg: DynamicsConfig) -> dict:
    """One prompt's counts over its blocks: what :func:`summary` adds up (JSON-ready)."""
    cat = {k: torch.cat([getattr(b, k) for b in blocks]) for k in BlockMeasures.__dataclass_fields__}
    band = band_of(cat["conf"])
    has = ~torch.isnan(cat["spread"])
    moved = has & (cat["spread"] > cfg.moved_std)
    flips = [[[int((band == i)[has & (moved == m)].sum()), int(cat["flip"][(band == i) & has & (moved == m)].sum())]
              for m in (False, True)] for i in range(len(BANDS))]
    rises = torch.bincount(cat["rise"][cat["crossed"]].clamp(max=MAX_RISE), minlength=MAX_RISE + 1)
    return {"tokens": len(cat["certain_first"]), "certain_first": int(cat["certain_first"].sum()),
            "unsure": int(cat["unsure"].sum()), "crossed": int(cat["crossed"].sum()),
            "rise_crossed": int((cat["crossed"] & (cat["rise"] >= cfg.rise_steps)).sum()),
            "rises": rises.tolist(),
            "band_steps": torch.bincount(band, minlength=len(BANDS)).tolist(),
            "band_flips": flips,                     # [band][steady, moved][states, flips] (states with history)
            "fig1": fig1_counts(cat["conf"], cat["spread"], cat["flip"], cfg).tolist()}


# --------------------------------------------------------------------------------------------------------------
# Decoding: vanilla's traces, EGP's and Fast-dLLM's forwards
# --------------------------------------------------------------------------------------------------------------
def measure_batch(model, task, problems: list[dict], gen_length: int, block_length: int,
                  cfg: DynamicsConfig = DynamicsConfig(), tspd_ce: bool = False) -> list[dict]:
    """Per problem of ``task``: :func:`prompt_measures` of its vanilla decoding, and the forwards vanilla, EGP
    (replaying vanilla's answer) and Fast-dLLM at ``cfg.certain`` take, with whether vanilla's and Fast-dLLM's
    answers are right; with ``tspd_ce``, TSPD + CE's (the model's own controller) too."""
    prompts = [task.prompt(p) for p in problems]
    base = DecodeConfig.of(gen_length=gen_length, block_length=block_length)
    out = generate(model, prompts, base, record_trace=True)
    egp = generate(model, prompts, base, controller=EGP(reference=out.token_ids))
    runs = {FAST: DecodeConfig.of(controller="fast-dllm", threshold=cfg.certain, gen_length=gen_length,
                                  block_length=block_length)}
    if tspd_ce:
        runs[OURS] = DecodeConfig.of(controller="tspd", ce=True, gen_length=gen_length, block_length=block_length)
    decoded = {name: generate(model, prompts, d) for name, d in runs.items()}
    tr, final = out.trace, out.token_ids.cpu()
    answer = ~torch.isin(final, torch.tensor(model.special.stop_ids()))
    rows = []
    for b, problem in enumerate(problems):
        blocks = []
        for k in range(gen_length // block_length):
            lo, hi = k * block_length, (k + 1) * block_length
            steps = (tr.block == k) & tr.masked[:, b, lo:hi].any(-1)
            conf, x0, masked = tr.conf[steps, b, lo:hi], tr.x0[steps, b, lo:hi], tr.masked[steps, b, lo:hi]
            blocks.append(block_measures(conf, x0 == final[b, lo:hi], masked, answer[b, lo:hi], cfg))
        row = {**prompt_measures(blocks, cfg), f"{VANILLA}_nfe": out.nfe_per_sample[b],
               f"{VANILLA}_right": bool(task.right(problem, out.texts[b])), "egp_nfe": egp.nfe_per_sample[b],
               "egp_same": bool((egp.token_ids[b] == out.token_ids[b]).all())}
        for name, g in decoded.items():
            row[f"{name}_nfe"], row[f"{name}_right"] = g.nfe_per_sample[b], bool(task.right(problem, g.texts[b]))
        rows.append(row)
    return rows


# --------------------------------------------------------------------------------------------------------------
# The record's summary: shares of answer tokens and token-steps, with intervals over prompts
# --------------------------------------------------------------------------------------------------------------
def cluster_interval(clusters: list, stat, digits: int = 3, **boot) -> dict | None:
    """``stat(clusters)`` with its cluster-bootstrap interval (prompts resampled); None where it is undefined."""
    if not clusters or not np.isfinite(stat(clusters)):
        return None
    value, lo, hi = cluster_bootstrap(clusters, stat, **boot)
    return {"value": round(value, digits), "lo": round(lo, digits), "hi": round(hi, digits)}


def cluster_share(rows: list[dict], num, den, **boot) -> dict | None:
    """100 x sum(num) / sum(den) over prompts, with its interval (None where the denominator is 0)."""
    def stat(ps):
        d = sum(b for _, b in ps)
        return 100.0 * sum(a for a, _ in ps) / d if d else float("nan")
    return cluster_interval([(num(r), den(r)) for r in rows], stat, **boot)


def _forwards_ratio(pairs: list[tuple]) -> float:
    """sum(a) / sum(b) over (a, b) pairs of forwards (a denominator of at least 1)."""
    return sum(a for a, _ in pairs) / max(sum(b for _, b in pairs), 1)


def summary(rows: list[dict], cfg: DynamicsConfig = DynamicsConfig(), seed: int = 0) -> dict:
    """The record's figures from its per-prompt rows (percentages with 95 % intervals over prompts)."""
    boot = {"seed": seed}
    tokens = lambda r: r["tokens"]  # noqa: E731
    middle = lambda r: sum(r["band_flips"][i][m][0] for i in (1, 2) for m in (0, 1))  # noqa: E731
    out = {"prompts": len(rows), "answer_tokens": sum(map(tokens, rows)),
           "certain_first": cluster_share(rows, lambda r: r["certain_first"], tokens, **boot),
           "unsure": cluster_share(rows, lambda r: r["unsure"], tokens, **boot),
           "crossed": cluster_share(rows, lambda r: r["crossed"], tokens, **boot),
           "rise_crossed": cluster_share(rows, lambda r: r["rise_crossed"], tokens, **boot),
           "rises": np.sum([r["rises"] for r in rows], axis=0).tolist(),
           "moved_middle": cluster_share(rows, lambda r: sum(r["band_flips"][i][1][0] for i in (1, 2)), middle, **boot)}
    bands = []
    for i, lo in enumerate(BANDS):
        row = {"band": f"[{lo:.1f}, {BANDS[i + 1] if i + 1 < len(BANDS) else 1.0:.1f}{')' if i + 1 < len(BANDS) else ']'}",
               "token_steps": int(sum(r["band_steps"][i] for r in rows))}
        for m, name in ((0, "steady"), (1, "moved")):
            n = sum(r["band_flips"][i][m][0] for r in rows)
            row[f"{name}_states"] = int(n)
            row[f"{name}_flip"] = cluster_share(rows, lambda r, i=i, m=m: r["band_flips"][i][m][1],
                                         lambda r, i=i, m=m: r["band_flips"][i][m][0], **boot)
        bands.append(row)
    out["bands"] = bands
    out["flip_gap"] = cluster_interval([np.array(r["fig1"]) for r in rows], flip_gap_of, **boot)
    if rows and "egp_nfe" in rows[0]:   # decoded by a model (tspd.measures.oracle's traces have no forwards)
        ratio = cluster_interval([(r["egp_nfe"], r[f"{FAST}_nfe"]) for r in rows], _forwards_ratio, digits=4, **boot)
        out["oracle"] = {**{f"{k}_nfe": sum(r[f"{k}_nfe"] for r in rows) / len(rows) for k in (VANILLA, "egp", FAST)},
                         "egp_over_fast": ratio, "egp_same": sum(r["egp_same"] for r in rows)}
    if rows and f"{OURS}_nfe" in rows[0]:   # the method against Fast-dLLM on the same problems
        out[OURS] = {"nfe": sum(r[f"{OURS}_nfe"] for r in rows) / len(rows),
                     "over_fast": cluster_interval([(r[f"{OURS}_nfe"], r[f"{FAST}_nfe"]) for r in rows],
                                                   _forwards_ratio, digits=4, **boot)}
    for k in (VANILLA, FAST, OURS):
        if rows and f"{k}_right" in rows[0]:
            out[f"{k}_correct"] = sum(r[f"{k}_right"] for r in rows)
    return out


def targets(summary_: dict) -> list[dict]:
    """Each target with its value, interval and whether it is met (Fig. 1's gap: its point at the bound and its
    whole interval above 0, as the issue that set it reads; the others: the whole interval at the bound)."""
    out = []
    for key, bound, what in TARGETS:
        v = summary_.get(key)
        met = v is not None and (v["value"] >= bound and v["lo"] > 0 if key == "flip_gap" else v["lo"] >= bound)
        out.append({"target": key, "what": what, "bound": bound, "value": v and v["value"], "lo": v and v["lo"],
                    "hi": v and v["hi"], "met": bool(met)})
    return out


# --------------------------------------------------------------------------------------------------------------
# The record: <checkpoint>/dynamics.json, measured batch by batch
# --------------------------------------------------------------------------------------------------------------
FILENAME = "dynamics.json"


def path_of(checkpoint: str | Path | None) -> Path:
    """The record of the checkpoint (a zoo name or a directory)."""
    return Path(resolve_path(checkpoint)) / FILENAME


def load(checkpoint: str | Path | None, path: str | Path | None = None) -> dict | None:
    """The checkpoint's record (or the one at ``path``); None where it has none."""
    try:
        path = Path(path) if path else path_of(checkpoint)
    except CheckpointError:
        return None
    return read_json(path) if path.is_file() else None


def save(path: str | Path, record: dict) -> Path:
    """Write the record (:func:`~tspd.records.files.write_rows_json`: its per-prompt rows one line each, about 400
    bytes a problem)."""
    return write_rows_json(path, record)


def measure_checkpoint(model: str, cfg: DynamicsConfig = DynamicsConfig(), device: str = "cpu", command: str = "",
                       out: str | Path | None = None, log=print) -> dict:
    """The checkpoint's dynamics record (``<checkpoint>/dynamics.json``, or ``out``): the rows it lacks measured
    batch by batch on the first ``cfg.n`` problems of its task's test split, the record written after each batch
    (an interrupted run resumes; a changed weight file or setting measures every row again, and says so)."""
    from tspd.tasks.generated import generated_task
    checkpoint = Checkpoint.open(model)
    spec = task_spec(checkpoint)
    if not spec:
        raise UsageError(f"{checkpoint.path} names no generated task in its config.json: the dynamics record reads "
                         "a train-lm checkpoint's own task (collect-traces reads any prompts)")
    task, path = generated_task(spec["name"]), Path(out) if out else path_of(checkpoint.path)
    problems = task.load_split("test", cfg.n)
    meta = {"command": command, "git": git_revision() or "unknown", "device": device_name(device),
            "model": str(model), "weights": weights_hash(checkpoint), "task": spec["name"],
            "gen_length": spec["gen_length"], "block_length": spec["block_length"], "config": dataclasses.asdict(cfg),
            OURS: (checkpoint.path / "controllers" / "tspd.json").is_file()}   # the method, where the model has it
    lm = []                                       # the model, loaded once there is something to measure

    def measure(chunk):
        lm[:] = lm or [load_model(checkpoint, device=device)]
        rows = measure_batch(lm[0], task, chunk, spec["gen_length"], spec["block_length"], cfg, meta[OURS])
        return [{"id": p["id"], **r} for p, r in zip(chunk, rows)]
    return measure_by_batch(path, meta, ("weights", "config", "gen_length", "block_length", OURS), problems, cfg.batch,
                            measure, lambda rows: {"summary": summary(rows, cfg)}, f"dynamics {model}", log)


def dynamics_record(model: str, n: int = DynamicsConfig.n, batch: int = DynamicsConfig.batch, device: str = "cpu",
                    as_recorded: bool = False) -> dict:
    """The notebook's call of :func:`measure_checkpoint` (quiet): ``as_recorded``: a model that has a record keeps
    its own settings in place of these (read back as measured, not extended to this page's n)."""
    stored = load(model) if as_recorded else None
    cfg = DynamicsConfig(**stored["config"]) if stored else DynamicsConfig(n=n, batch=batch)
    return measure_checkpoint(model, cfg, device=device, command=(stored or {}).get("command") or
                              f"python -m tspd dynamics --model {model} --n {cfg.n}", log=lambda s: None)


# --------------------------------------------------------------------------------------------------------------
# The book: the regime page's tables and figure, the status page's table
# --------------------------------------------------------------------------------------------------------------
# LLaDA-8B-Instruct on GSM8K: what other papers saw of its middle (their numbers, not measured here; tspd/reported.json)
THEIRS = [tuple(f) for f in theirs.others("llada_dynamics")["findings"]]


def interval_cell(v: dict | None, digits: int = 1) -> str:
    """A figure as ``value [lo, hi]`` (its 95 % interval), empty where it is None."""
    return "" if v is None else f"{v['value']:.{digits}f} [{v['lo']:.{digits}f}, {v['hi']:.{digits}f}]"


def _right_answers(s: dict) -> str:
    """Right answers of vanilla / Fast-dLLM / TSPD + CE (a dash where the record has none)."""
    return " / ".join(str(s.get(f"{k}_correct", "-")) for k in (VANILLA, FAST, OURS))


def dynamics_table(records: dict[str, dict]) -> list[dict]:
    """A row per measure, a column per model: value [95 % interval over prompts]."""
    measures = [("answer tokens (problems)", lambda s: f"{s['answer_tokens']} ({s['prompts']})"),
                ("certain at their block's first forward, %", lambda s: interval_cell(s["certain_first"])),
                ("right but unsure (>= 2 steps final at conf 0.5-0.9), %", lambda s: interval_cell(s["unsure"])),
                ("cross 0.9 after a rise of >= 3 steps, %", lambda s: interval_cell(s["rise_crossed"])),
                ("cross 0.9 after the first forward, %", lambda s: interval_cell(s["crossed"])),
                ("moved traces, % of token-steps at conf 0.3-0.9", lambda s: interval_cell(s["moved_middle"])),
                ("Fig. 1: P_flip moved - steady, points", lambda s: interval_cell(s["flip_gap"])),
                ("EGP / Fast-dLLM 0.9 forwards (the oracle's headroom)",
                 lambda s: interval_cell(s["oracle"]["egp_over_fast"], 2)),
                ("TSPD + CE / Fast-dLLM 0.9 forwards",
                 lambda s: interval_cell((s.get(OURS) or {}).get("over_fast"), 2)),
                ("right answers: vanilla / Fast-dLLM / TSPD + CE", _right_answers)]
    return [{"measure": name, **{label: get(r["summary"]) for label, r in records.items()}} for name, get in measures]


def band_table(records: dict[str, dict]) -> list[dict]:
    """Per model and confidence band: token-steps before commit, and how often the argmax is not the final token
    for steady and for recently-moved traces (Fig. 1's definition; states with 4 steps of history)."""
    return [{"model": label, "confidence": b["band"], "token-steps": b["token_steps"],
             "steady: states": b["steady_states"], "steady: P_flip, %": interval_cell(b["steady_flip"]),
             "moved: states": b["moved_states"], "moved: P_flip, %": interval_cell(b["moved_flip"])}
            for label, r in records.items() for b in r["summary"]["bands"]]


def target_table(records: dict[str, dict]) -> list[dict]:
    """A row per target of :data:`TARGETS`, a column per model: value [interval], met or not."""
    rows: dict[str, dict] = {}
    for label, r in records.items():
        for t in targets(r["summary"]):
            row = rows.setdefault(t["target"], {"target": t["what"], "bound": f">= {t['bound']:g}"})
            row[label] = ("-" if t["value"] is None else
                          f"{t['value']:.1f} [{t['lo']:.1f}, {t['hi']:.1f}]") + (", met" if t["met"] else ", not met")
    return list(rows.values())


def equal_accuracy_ratio(label: str, record: dict, sweeps: dict[str, dict]) -> tuple[dict | None, str]:
    """Beyond the paper (issues 67 and 83): TSPD + CE's forwards relative to Fast-dLLM 0.9's at equal accuracy for one
    model's dynamics ``record``, as ``(ratio, how)``; ``ratio`` is ``{value, lo, hi}`` (95 % interval; below 1 the
    method decodes in fewer) or None where no such ratio exists, and ``how`` says where it was read or why not.

    A model with a gate sweep (``sweeps[label]``: :func:`tspd.book.pareto.sweep_ratios`, from the book's Pareto
    records) is read along it at Fast-dLLM's accuracy (none where no gate of the sweep reaches it); another at the
    record's default gate, only where its right answers equal Fast-dLLM's within one (0.49 of the forwards at 0 of
    100 right is no gain)."""
    s = record["summary"]
    if label in sweeps:
        q = sweeps[label]
        if q["value"] == float("inf"):
            return None, f"its gate sweep never reaches Fast-dLLM 0.9's {q['reference_accuracy']:.1f} %, n = {q['n']}"
        return q, f"at Fast-dLLM 0.9's {q['reference_accuracy']:.1f} % along the gate sweep, n = {q['n']}"
    q = (s.get(OURS) or {}).get("over_fast")
    if not q:
        return None, "no TSPD + CE run"
    ours, fast = s.get(OURS + "_correct"), s.get(FAST + "_correct")
    how = f"default gate; right: TSPD + CE {ours}, Fast-dLLM {fast} of {s['prompts']}"
    if ours is None or fast is None or abs(ours - fast) > 1:
        return None, how + ": not at equal accuracy"
    return q, how


ZOO_COLUMNS = ["model (n)", "right but unsure, %", "Fig. 1's gap, points", "rise >= 3 steps before 0.9, %",
               "TSPD + CE / Fast-dLLM 0.9 forwards", "right: vanilla / Fast-dLLM / TSPD + CE"]


def zoo_dynamics_table() -> str:
    """The status page's table: a row per zoo model with a dynamics record, the premise (right but unsure, Fig. 1's
    gap, rises before 0.9) and what TSPD + CE made of it against Fast-dLLM 0.9, value [95 % interval over problems];
    a dash where the record lacks a figure. Each row's record is ``tspd/zoo/<model>/dynamics.json``."""
    rows = []
    for path in sorted(ZOO.glob(f"*/{FILENAME}")):
        s = load(path.parent.name, path)["summary"]
        rows.append([f"`{path.parent.name}` ({s['prompts']})",
                     *[interval_cell(s.get(k)) or "-" for k in ("unsure", "flip_gap", "rise_crossed")],
                     interval_cell((s.get(OURS) or {}).get("over_fast"), 2) or "-", _right_answers(s)])
    return "\n".join(table(ZOO_COLUMNS, rows))


__all__ = ["DynamicsConfig", "BlockMeasures", "block_measures", "prompt_measures", "fig1_counts", "flip_gap_of",
           "measure_batch", "summary", "targets", "BANDS", "TARGETS", "VANILLA", "FAST", "OURS",
           "FILENAME", "path_of", "load", "save", "measure_checkpoint", "dynamics_record",
           "THEIRS", "interval_cell", "dynamics_table", "band_table", "target_table", "equal_accuracy_ratio", "ZOO_COLUMNS",
           "zoo_dynamics_table"]
