"""A checkpoint's regime figures, measured: is an embedded model in the regime the paper studies?

LLaDA-8B-Instruct on GSM8K (256-token window, blocks of 32) has four properties that the paper's methods
depend on, and an embedded model stands in for it only where it shares them:

- parallel decoding is hard: Fast-dLLM at threshold 0.9 writes a few tokens per forward (TPF, the d3LLM
  leaderboard's measure: generated tokens that are not EOS, per forward), and a fixed schedule of several
  tokens per step loses accuracy, more the more tokens a step (Sec. 1; :data:`FIXED_ANCHORS`); here also one step
  per block, every token of a block in one forward;
- the KV caches are nearly free (:data:`CACHE_ANCHORS`, Tables 1 and 4);
- longer windows still answer: vanilla at 512 / 1024 within a few points of 256 (Table 3).

:func:`plan` lists the rows (one per decoding, each :class:`Row` carrying what it varies) and :func:`score_rows`
decodes held-out problems through :func:`tspd.decoding.loop.generate`, the path of every benchmark: n, right
answers and TPF per row. Two callers: a training log's evaluations (:func:`regime_figures`, then :func:`headline`,
the few numbers it tracks, ``REGIME_COLUMNS``) and ``python -m tspd regime`` (:mod:`tspd.commands.regime`,
:func:`measure_checkpoint`), which keeps the record.

The record: ``<checkpoint>/regime.json`` (:func:`path_of`; committed for the zoo's models,
``tspd/zoo/<name>/regime.json``): the command, revision and device, one row per decoding with which problems it
answered, written as each row is measured (:func:`measure`, through :func:`save`) and keyed by the weights' hash,
so that a rerun measures only what is missing; :func:`load` reads it. :func:`targets` holds it to the bounds the
regime model is held to (:data:`REGIME_TARGETS`), also as a section of the checkpoint's ``TRAINING.md``
(:func:`markdown`).

The book's Regime page draws its tables and figures from the record: :mod:`tspd.book.regime`. The anchors are
LLaDA-8B's, quoted as theirs (:data:`ANCHORS`, :data:`CACHE_ANCHORS`).
"""
from __future__ import annotations

import dataclasses
import json
import shlex
import time
from dataclasses import dataclass
from pathlib import Path

from tspd import theirs
from tspd.decoding.config import DecodeConfig
from tspd.decoding.loop import generate
from tspd.decoding.names import slug
from tspd.markdown import table as markdown_table
from tspd.models.loading import (DEFAULT_MODEL, Checkpoint, CheckpointError, load_model, resolve_path, task_spec,
                                 weights_hash)
from tspd.provenance import device_name, git_revision
from tspd.records.files import read_json, write_json
from tspd.stats import paired_gap, wilson
from tspd.validate import UsageError

# --------------------------------------------------------------------------------------------------------------
# LLaDA-8B's anchors (theirs), the bands the regime model is held to, what a record measures
# --------------------------------------------------------------------------------------------------------------
# LLaDA-8B-Instruct on GSM8K, gen 256 / block 32: the sources' numbers, not ours (tspd/reported.json, tspd.theirs).
_PARALLEL = theirs.others("llada_gsm8k_parallel")   # Fast-dLLM paper, Fig. 5, read from the plot
_BOARD = theirs.others("d3llm_leaderboard")["boards"][0]["methods"]
_VANILLA = theirs.paper_accuracy("table1", task="gsm8k", controller="vanilla")   # the paper's Table 1
_FAST = theirs.paper_accuracy("table1", task="gsm8k", controller="fast-dllm")
_OURS, _OURS_DUAL = (theirs.paper_accuracy("table4", controller="tspd", cache=c) for c in ("none", "dual"))
_LONGEST = min(theirs.paper_accuracy("table3", controller="vanilla", gen_length=w) for w in (512, 1024))
ANCHORS = {
    "fast_tpf": (max(tpf for tpf, _ in _BOARD["Fast-dLLM"]), "Fast-dLLM at 0.9 with the dual cache, TPF (d3LLM "
                                                             "leaderboard data)"),
    "long_window_gap": (round(_VANILLA - _LONGEST, 1), "largest vanilla loss at 512 / 1024 against 256 (paper Table 3)"),
}
# ... and what a KV cache costs a decoder, by (controller, CE, cache)
CACHE_ANCHORS = {
    ("fast-dllm", False, "dual"): (round(_VANILLA - _FAST, 1), f"points the dual cache costs Fast-dLLM (paper Table 1: "
                                                              f"{_VANILLA:g} to {_FAST:g})"),
    ("tspd", True, "dual"): (round(_OURS - _OURS_DUAL, 1), "points the dual cache costs TSPD + CE (paper Table 4)"),
}


# Vanilla at a fixed k tokens per step: accuracy, %; Fast-dLLM at a threshold: (accuracy, tokens per step).
FIXED_ANCHORS = {int(k): v for k, v in _PARALLEL["fixed"].items()}
THRESHOLD_ANCHORS = {float(t): tuple(v) for t, v in _PARALLEL["threshold"].items()}
THRESHOLD_ANCHOR = THRESHOLD_ANCHORS[0.9]

SECTION = "## Regime record"
# What a row's figures depend on (a fixed schedule's k is its own row, so adding one only adds a row).
ROW_SETTINGS = ("n", "long_n", "threshold", "batch")


@dataclass(frozen=True)
class Band:
    """Where a target is met, around LLaDA-8B-Instruct's own figure (issue 83): ``low`` to ``high`` (None: open on
    that side). A cliff twenty times LLaDA's loss is as far from its regime as no loss at all."""
    low: float | None
    high: float | None
    label: str   # the figure, as the tables name it

    def holds(self, lo: float, hi: float) -> bool:
        """Whether an interval ``[lo, hi]`` (a point: ``lo == hi``) lies inside the band."""
        return (self.low is None or lo >= self.low) and (self.high is None or hi <= self.high)

    def __str__(self) -> str:
        if self.high is None:
            return f">= {self.low:g}"
        return f"<= {self.high:g}" if self.low is None else f"{self.low:g} to {self.high:g}"


# What the regime model is held to: a band around LLaDA-8B's curve per figure (issue 83; the bounds one-sided where
# LLaDA gives no figure: one step per block, the caches, the longer window). A loss or cost is in points of accuracy
# against vanilla (or against the same decoder without a cache, or at the checkpoint's window).
REGIME_TARGETS = {"vanilla": Band(75.0, 95.0, "vanilla accuracy, %"),   # errors happen, as LLaDA's 79 %
                  "fast_tpf": Band(2.0, None, "Fast-dLLM 0.9 TPF"),
                  "fast_loss": Band(None, 2.0, "Fast-dLLM 0.9 loses, points"),
                  "fast70_loss": Band(None, 8.0, "Fast-dLLM 0.7 loses, points"),
                  "fast50_loss": Band(5.0, 35.0, "Fast-dLLM 0.5 loses, points"),
                  "fixed2_loss": Band(2.0, 12.0, "2 tokens per step loses, points"),
                  "fixed_loss": Band(6.0, 30.0, "4 tokens per step loses, points"),
                  "fixed8_loss": Band(25.0, 75.0, "8 tokens per step loses, points"),
                  "block_step_loss": Band(40.0, None, "one step per block loses, points"),
                  "cache_cost": Band(None, 2.0, "largest cost of a cache, points"),
                  "long_gap": Band(None, 3.0, "largest vanilla loss in a longer window, points")}
FIXED_TARGETS = {2: "fixed2_loss", 4: "fixed_loss", 8: "fixed8_loss"}   # the fixed schedules held to a band
SCHEDULE_TARGETS = (*FIXED_TARGETS.values(), "block_step_loss")   # every schedule writing a fixed count a step
THRESHOLD_TARGETS = {0.9: "fast_loss", 0.7: "fast70_loss", 0.5: "fast50_loss"}   # Fast-dLLM's thresholds held to one
# the decoders whose cost of each cache is a target, as (controller, CE): vanilla, Fast-dLLM, TSPD + CE
CACHED = (("vanilla", False), ("fast-dllm", False), ("tspd", True))


@dataclass(frozen=True)
class RegimeConfig:
    """What a regime record measures; the defaults are the command's (a training log's evaluations name their own).
    Stored as the record's ``config`` (with the longer windows resolved), so its fields and their order are fixed."""
    n: int = 500                 # problems for the window's own figures (caches, TPF, the fixed schedule)
    long_n: int = 100            # problems for the longer windows (vanilla: a forward per token, so fewer)
    long_windows: tuple[int, ...] | None = None   # windows beyond the checkpoint's own, vanilla only (None: twice it)
    threshold: float = 0.9       # Fast-dLLM's threshold (the leaderboard's TPF point)
    lower_thresholds: tuple[float, ...] = (0.7, 0.5)   # Fast-dLLM below it: how its curve slopes (LLaDA: Fig. 5)
    tokens_per_step: tuple[int, ...] = (2, 4, 8)   # fixed schedules (k tokens a step): what parallel decoding costs
    block_step: bool = True      # also one step per block (every token of a block in one forward)
    caches: tuple[str, ...] = ("prefix", "dual")
    vanilla_caches: bool = True  # the caches under vanilla too (a forward per token: the costly rows; off during training)
    tspd_ce: bool = False        # also TSPD + CE with each cache (needs the model's trained controllers/tspd)
    batch: int = 100             # prompts per generate() call

    @classmethod
    def from_dict(cls, d: dict) -> "RegimeConfig":
        """The settings a record stored (its JSON lists back to tuples)."""
        d = {**d, "tokens_per_step": d.get("tokens_per_step", cls.tokens_per_step),
             "lower_thresholds": d.get("lower_thresholds", ())}   # a record from before them measured none
        if isinstance(d["tokens_per_step"], int):   # a record from before the schedules were a list
            d["tokens_per_step"] = (d["tokens_per_step"],)
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in d.items()})

    def at(self, gen_length: int) -> "RegimeConfig":
        """The settings for a checkpoint of window ``gen_length``: the longer windows resolved."""
        return self if self.long_windows is not None else dataclasses.replace(self, long_windows=(2 * gen_length,))


@dataclass(frozen=True)
class Row:
    """One row of a record's plan: its name, its decoding, and what it varies. ``kind``: ``decoder`` (vanilla,
    Fast-dLLM, TSPD + CE, with or without a cache: named by :meth:`DecodeConfig.slug` with ``_``), ``fixed`` (k
    tokens a step), ``block_step`` (one step per block), ``long`` (vanilla in a longer window) or ``paired`` (vanilla
    at the checkpoint's window on the longer windows' problems, their paired baseline)."""
    name: str
    decode: DecodeConfig
    kind: str = "decoder"
    tokens_per_step: int | None = None   # fixed and block_step: tokens a step commits
    window: int | None = None            # long and paired: the window decoded in

    @property
    def long(self) -> bool:
        """Decoded on the first ``long_n`` problems (else the first ``n``)."""
        return self.kind in ("long", "paired")


# --------------------------------------------------------------------------------------------------------------
# The measurement: the plan of rows, decoded and scored; a training log's figures
# --------------------------------------------------------------------------------------------------------------
def plan(cfg: RegimeConfig, gen_length: int, block_length: int) -> list[Row]:
    """Every row of a record, in its order."""
    cfg = cfg.at(gen_length)
    base = dict(gen_length=gen_length, block_length=block_length)
    vanilla, fast = DecodeConfig.of(**base), DecodeConfig.of(controller="fast-dllm", threshold=cfg.threshold, **base)
    ours = DecodeConfig.of(controller="tspd", ce=True, **base)   # the paper's method, with the model's own controller
    out = [Row(d.slug("_"), d) for d in (vanilla, fast)]
    out += [Row(threshold_row(t), DecodeConfig.of(fast, threshold=t), "threshold") for t in cfg.lower_thresholds]
    out += [Row(f"fixed{k}", DecodeConfig.of(steps=gen_length // k, **base), "fixed", k) for k in cfg.tokens_per_step]
    if cfg.block_step:
        out.append(Row("block_step", DecodeConfig.of(steps=gen_length // block_length, **base), "block_step",
                       block_length))
    if cfg.tspd_ce:
        out.append(Row(ours.slug("_"), ours))
    cached = [d for d, on in ((vanilla, cfg.vanilla_caches), (fast, True), (ours, cfg.tspd_ce)) if on]
    for cache in cfg.caches:
        out += [Row(d.slug("_"), d) for d in (d.replace(cache=cache) for d in cached)]
    for w in cfg.long_windows:
        out.append(Row(f"vanilla_{w}", DecodeConfig.of(gen_length=w, block_length=block_length), "long", window=w))
    if cfg.long_windows:
        out.append(Row("vanilla_short", vanilla, "paired", window=gen_length))
    return out


def threshold_row(threshold: float) -> str:
    """The row of Fast-dLLM at a lower ``threshold``: ``fast70`` for 0.7."""
    return f"fast{round(100 * threshold):02d}"


def decodings(cfg: RegimeConfig, gen_length: int, block_length: int) -> list[tuple[str, DecodeConfig, bool]]:
    """``(name, decoding, long)`` of each row of :func:`plan` but the paired baseline."""
    return [(r.name, r.decode, r.long) for r in plan(cfg, gen_length, block_length) if r.kind != "paired"]


def score(model, task, problems: list[dict], decode: DecodeConfig, batch: int = 100) -> dict:
    """Decode ``problems`` of ``task`` with ``decode``: right answers (and which: ``right``), TPF, forwards
    (batch max), texts."""
    right, nfe, tokens, forwards, texts = [], 0, 0, 0, []
    for i in range(0, len(problems), batch):
        chunk = problems[i:i + batch]
        out = generate(model, [task.prompt(p) for p in chunk], decode)
        right += [int(task.right(p, t)) for t, p in zip(out.texts, chunk)]
        nfe = max(nfe, out.nfe)
        tokens, forwards = tokens + sum(out.answer_tokens), forwards + sum(out.nfe_per_sample)
        texts += out.texts
    n, correct = len(problems), sum(right)
    return {"n": n, "correct": correct, "accuracy": correct / n if n else None, "nfe": nfe,
            "tpf": tokens / forwards if forwards else None, "right": right, "texts": texts}


def score_rows(model, task, problems: list[dict], rows: list[Row], cfg: RegimeConfig, done: dict | None = None,
               saved=None, log=None) -> dict[str, dict]:
    """``{name: score row (no texts, with its seconds)}`` for each of ``rows`` in order, ``done`` kept as they are
    (not measured again); ``saved(rows so far)`` after each row measured."""
    out = dict(done or {})
    for r in rows:
        if r.name in out:
            continue
        t0 = time.time()
        chosen = problems[:cfg.long_n] if r.long else problems[:cfg.n]
        row = {k: v for k, v in score(model, task, chosen, r.decode, cfg.batch).items() if k != "texts"}
        row["seconds"] = round(time.time() - t0, 1)
        out[r.name] = row
        if saved:
            saved(out)
        if log:
            log(f"regime {r.name}: {row['correct']}/{row['n']}, TPF {row['tpf']:.2f}, {row['seconds']} s")
    return out


def regime_figures(model, task, problems: list[dict], gen_length: int, block_length: int,
                   cfg: RegimeConfig = RegimeConfig(), log=None) -> dict[str, dict]:
    """Every row of :func:`plan` (a training log's evaluation: nothing stored)."""
    return score_rows(model, task, problems, plan(cfg, gen_length, block_length), cfg, log=log)


REGIME_COLUMNS = ("fast_tpf", "fixed_loss", "vanilla_prefix_cost", "vanilla_dual_cost", "fast_prefix_cost",
                  "fast_dual_cost", "long_accuracy", "long_gap", "fixed2_loss", "fixed8_loss", "block_step_loss",
                  "fast_loss", "fast70_loss", "fast50_loss")


def headline(rows: dict[str, dict], cfg: RegimeConfig, gen_length: int, block_length: int) -> dict[str, float | None]:
    """The figures a training log tracks, in points of accuracy (a cost is no-cache minus cached): Fast-dLLM's
    TPF, the fixed schedule's loss, what each cache costs vanilla and Fast-dLLM, and the first longer
    window's accuracy and its gap to the same problems at the checkpoint's window; a figure whose row was not
    measured is None."""
    acc = lambda name: rows[name]["accuracy"] if name in rows else None   # noqa: E731
    diff = lambda a, b: None if acc(a) is None or acc(b) is None else round(100 * (acc(a) - acc(b)), 2)   # noqa: E731
    planned = plan(cfg, gen_length, block_length)
    fixed = lambda k: next((r.name for r in planned if r.kind == "fixed" and r.tokens_per_step == k), "")   # noqa: E731
    long = next((r.name for r in planned if r.kind == "long"), None)   # the first longer window
    figures = {"fast_tpf": rows["fast"]["tpf"], "fixed_loss": diff("vanilla", fixed(4)),
               "vanilla_prefix_cost": diff("vanilla", "vanilla_prefix"), "vanilla_dual_cost": diff("vanilla", "vanilla_dual"),
               "fast_prefix_cost": diff("fast", "fast_prefix"), "fast_dual_cost": diff("fast", "fast_dual"),
               "long_accuracy": acc(long) if long else None, "long_gap": diff("vanilla_short", long) if long else None,
               "fixed2_loss": diff("vanilla", fixed(2)), "fixed8_loss": diff("vanilla", fixed(8)),
               "block_step_loss": diff("vanilla", "block_step"), "fast_loss": diff("vanilla", "fast"),
               **{THRESHOLD_TARGETS[t]: diff("vanilla", threshold_row(t)) for t in (0.7, 0.5)}}
    return {k: figures[k] for k in REGIME_COLUMNS}


# --------------------------------------------------------------------------------------------------------------
# The record: <checkpoint>/regime.json, measured row by row (python -m tspd regime)
# --------------------------------------------------------------------------------------------------------------
FILENAME = "regime.json"


def path_of(checkpoint: str | Path | None) -> Path:
    """The record of the checkpoint (a zoo name or a directory)."""
    return Path(resolve_path(checkpoint)) / FILENAME


def save(path: str | Path, record: dict) -> Path:
    """The record as measured so far (rows in the plan's order)."""
    return write_json(path, record)


@dataclass(frozen=True)
class Regime:
    """The record's window, settings and rows; ``data`` is the record as stored (what ``targets`` reads)."""
    gen_length: int
    block_length: int
    n: int
    rows: dict[str, dict]
    data: dict
    path: Path


def load(checkpoint: str | Path | None) -> Regime | None:
    """The checkpoint's record; None where it has none (or there is no such checkpoint)."""
    try:
        path = path_of(checkpoint)
    except CheckpointError:
        return None
    if not path.is_file():
        return None
    d = read_json(path)
    return Regime(d["gen_length"], d["block_length"], d["config"]["n"], d["rows"], d, path)


def measure(model, task, cfg: RegimeConfig, out: Path, meta: dict, log=print) -> dict:
    """Every row of :func:`plan` into ``out``, resumably: a stored row stays while the weights and what its
    figures depend on (:data:`ROW_SETTINGS`) stay; the other settings (TSPD + CE, the caches, the longer windows)
    only add or drop rows, so adding 1024 measures only 1024. Nothing measured: nothing written."""
    gen_length, block_length = meta["gen_length"], meta["block_length"]
    cfg = cfg.at(gen_length)
    before = read_json(out) if out.is_file() else {}
    settings = json.loads(json.dumps(dataclasses.asdict(cfg)))   # as stored (tuples become lists)
    if not settings["lower_thresholds"]:   # stored as records from before them were: absent means none
        del settings["lower_thresholds"]
    planned = plan(cfg, gen_length, block_length)
    order = [r.name for r in planned]
    was = before.get("config") or {}
    changed = ["weights"] if before.get("weights") != meta["weights"] else \
        [f"{k} {was.get(k)} -> {settings[k]}" for k in ROW_SETTINGS if was.get(k) != settings[k]]
    rows = {} if changed else {name: row for name, row in before.get("rows", {}).items() if name in order}
    if before.get("rows") and changed:   # a user who changed --n by mistake should know before hours are spent
        log(f"{out}: its {len(before['rows'])} stored rows are measured again ({', '.join(changed)} changed)")
    missing = [name for name in order if name not in rows]
    record = {**meta, **measured_by(before if rows else {}, meta, bool(missing)), "config": settings, "rows": rows}
    if missing:
        problems = task.load_split("test", max(cfg.n, cfg.long_n))
        record["rows"] = score_rows(model, task, problems, planned, cfg, rows,
                                    saved=lambda done: save(out, {**record, "rows": done}), log=log)
    if list(record["rows"]) != order:   # rows added to a kept record take their place in the plan
        record["rows"] = {name: record["rows"][name] for name in order}
        save(out, record)
    return record


def measured_by(kept: dict, new: dict, measuring: bool) -> dict:
    """Who measured a record's rows: ``new``'s command, revision and device where no row is kept, the kept
    record's where nothing is measured, and both where rows are added to kept ones."""
    fields = ("command", "git", "device")
    if not kept.get("rows") or any(f not in kept for f in fields):
        return {f: new[f] for f in fields}
    if not measuring:
        return {f: kept[f] for f in fields}
    both = lambda f, word: kept[f] if kept[f] == new[f] else f"{kept[f]}; rows added {word} {new[f]}"   # noqa: E731
    return {"command": new["command"], "git": both("git", "at"), "device": both("device", "on")}


def measure_checkpoint(model: str = DEFAULT_MODEL, cfg: RegimeConfig = RegimeConfig(), tspd_ce: bool | None = None,
           device: str = "cpu", dtype: str | None = None, window: tuple[int, int] = (0, 0), command: str | None = None,
           out: str | Path | None = None, log=print) -> dict:
    """The checkpoint's regime record (``<checkpoint>/regime.json``, or ``out``), measured where it lacks a row.

    ``tspd_ce``: the TSPD + CE rows (None: when the checkpoint has its controller, ``controllers/tspd.json``);
    ``window`` (gen_length, block_length; 0: the checkpoint's own) may only name the checkpoint's own, the window
    the record is of; ``command``: how the record says it was made (None: the ``python -m tspd regime`` options
    that make it)."""
    from tspd.tasks.generated import generated_task
    checkpoint = Checkpoint.open(model)
    path, spec = checkpoint.path, task_spec(checkpoint)
    if not spec:
        raise UsageError(f"{path} names no generated task in its config.json: the regime record is for train-lm "
                         "checkpoints (a real LLaDA-8B's figures are the anchors themselves)")
    own = (spec["gen_length"], spec["block_length"])
    if any(w and w != o for w, o in zip(window, own)):
        raise UsageError(f"the regime record is measured at the checkpoint's own window {own[0]} / {own[1]}; "
                         f"leave gen_length and block_length at 0 (the longer windows are long_windows)")
    has_tspd = (path / "controllers" / "tspd.json").is_file()
    if tspd_ce and not has_tspd:
        raise UsageError(f"--tspd-ce yes, but {path}/controllers has no tspd controller")
    cfg = dataclasses.replace(cfg, tspd_ce=has_tspd if tspd_ce is None else tspd_ce).at(spec["gen_length"])
    lm = load_model(checkpoint, device=device, dtype=dtype or None)
    command = command or shlex.join(["python", "-m", "tspd", "regime", "--model", str(model), "--n", str(cfg.n),
                                     "--long-n", str(cfg.long_n), "--long-windows", ",".join(map(str, cfg.long_windows))])
    meta = {"command": command, "git": git_revision() or "unknown", "device": device_name(lm.device),
            "model": str(model), "weights": weights_hash(checkpoint), "task": spec["name"], "gen_length": own[0],
            "block_length": own[1]}
    out = Path(out) if out else path_of(path)
    return measure(lm, generated_task(spec["name"]), cfg, out, meta, log=log)


def regime_record(model: str, n: int = RegimeConfig.n, long_n: int = RegimeConfig.long_n,
                  long_windows: tuple[int, ...] = (), batch: int = RegimeConfig.batch, device: str = "cpu",
                  dtype: str | None = None, window: tuple[int, int] = (0, 0), log=None, as_recorded: bool = False) -> dict:
    """The notebook's call of :func:`measure_checkpoint` (quiet unless ``log``): ``long_windows`` empty means
    twice the checkpoint's window, ``window`` (0: the checkpoint's own) may only name the checkpoint's own.
    ``as_recorded``: a checkpoint that has a record keeps its own settings (n, long_n, ...) in place of these, so a
    model shown for comparison is read back as measured, not extended to this page's n."""
    stored = load(model) if as_recorded else None
    cfg = (RegimeConfig.from_dict(stored.data["config"]) if stored else
           RegimeConfig(n=n, long_n=long_n, long_windows=tuple(long_windows) or None, batch=batch))
    return measure_checkpoint(model, cfg, device=device, dtype=dtype, window=window, log=log or (lambda s: None))


# --------------------------------------------------------------------------------------------------------------
# What the record meets: the targets, the TRAINING.md section, the book's tables and figures
# --------------------------------------------------------------------------------------------------------------
def targets(record: dict) -> list[dict]:
    """Each target of :data:`REGIME_TARGETS` with the measured value, its 95 % interval and whether it is met
    (a band is met only when the whole interval lies inside it; a loss's or a cost's interval is paired); a target
    whose row the record lacks (a record from before the row was planned) is left out."""
    rows, out = record["rows"], []
    planned = plan(RegimeConfig.from_dict(record["config"]), record["gen_length"], record["block_length"])

    def add(key, what, value, lo, hi, anchor=None, **about):
        """``about``: what the row measures, for readers of the list (cache, decoder: its row's name, and its controller
        and ce; window, tokens_per_step)."""
        band = REGIME_TARGETS[key]
        out.append({"target": key, "what": what or band.label, "value": value, "lo": lo, "hi": hi,
                    "low": band.low, "high": band.high, "band": str(band), "met": band.holds(lo, hi),
                    "point_met": band.holds(value, value), "anchor": anchor, **about})

    v = rows["vanilla"]
    lo, hi = wilson(v["correct"], v["n"])
    add("vanilla", None, 100 * v["accuracy"], 100 * lo, 100 * hi,
        (FIXED_ANCHORS[1], "Fast-dLLM paper, Fig. 5 (read from the plot)"))
    add("fast_tpf", None, rows["fast"]["tpf"], rows["fast"]["tpf"], rows["fast"]["tpf"], ANCHORS["fast_tpf"])
    for t, key in THRESHOLD_TARGETS.items():
        name = "fast" if t == 0.9 else threshold_row(t)
        if name in rows:
            add(key, None, *paired_gap(v["right"], rows[name]["right"]),
                (round(FIXED_ANCHORS[1] - THRESHOLD_ANCHORS[t][0], 1), "Fast-dLLM paper, Fig. 5 (read from the plot)"),
                threshold=t)
    fixed = {r.tokens_per_step: r.name for r in planned if r.kind == "fixed"}
    for k, key in FIXED_TARGETS.items():
        if fixed.get(k) in rows:
            add(key, None, *paired_gap(v["right"], rows[fixed[k]]["right"]),
                (round(FIXED_ANCHORS[1] - FIXED_ANCHORS[k], 1), "Fast-dLLM paper, Fig. 5 (read from the plot)"),
                tokens_per_step=k)
    for r in planned:
        if r.kind == "block_step" and r.name in rows:
            add("block_step_loss", None, *paired_gap(v["right"], rows[r.name]["right"]), tokens_per_step=r.tokens_per_step)
    for controller, ce in CACHED:
        base = slug(controller, ce, sep="_")
        for cache in record["config"]["caches"]:
            cached = slug(controller, ce, cache, sep="_")
            if cached in rows and base in rows:
                add("cache_cost", f"the {cache} cache costs {base}, points",
                    *paired_gap(rows[base]["right"], rows[cached]["right"]), CACHE_ANCHORS.get((controller, ce, cache)),
                    cache=cache, decoder=base, controller=controller, ce=ce)
    paired = next((r.name for r in planned if r.kind == "paired"), None)
    for r in planned:
        if r.kind == "long" and r.name in rows:
            add("long_gap", f"vanilla at {r.window} loses against {record['gen_length']}, points",
                *paired_gap(rows[paired]["right"], rows[r.name]["right"]), ANCHORS["long_window_gap"], window=r.window)
    return out


def met_word(t: dict) -> str:
    """Whether a target (of :func:`targets`) is met: by its whole interval (yes), by its value alone, or not."""
    return "yes" if t["met"] else ("point only" if t["point_met"] else "no")


def markdown(record: dict) -> list[str]:
    """The record as a TRAINING.md section: every row, then the targets beside LLaDA-8B's anchors."""
    lines = [SECTION, "", f"`{record['command']}` (revision {record['git']}, {record['device']}); window "
             f"{record['gen_length']} / block {record['block_length']}; `regime.json` holds every row.", "",
             ]
    lines += markdown_table(["decoding", "accuracy (95 % interval)", "n", "TPF", "forwards (batch max)"],
                            [[name, f"{r['accuracy']:.1%} ({wilson(r['correct'], r['n'])[0]:.1%}-"
                              f"{wilson(r['correct'], r['n'])[1]:.1%})", r["n"], f"{r['tpf']:.2f}", r["nfe"]]
                             for name, r in record["rows"].items()])
    rows = []
    for t in targets(record):
        sign = "" if t["target"] == "vanilla" else "+"
        interval = "" if t["lo"] == t["hi"] else f" ({t['lo']:{sign}.1f} to {t['hi']:{sign}.1f})"
        rows.append([t["what"], f"{t['value']:.2f}{interval}", t["band"], met_word(t)])
    return lines + [""] + markdown_table(["target", "ours (95 % interval)", "bound", "met"], rows) + [
        "", "LLaDA-8B-Instruct's figure beside each target (their numbers, `tspd/reported.json`): the book's Regime page.",
        ""]


__all__ = ["ANCHORS", "CACHE_ANCHORS", "FIXED_ANCHORS", "SCHEDULE_TARGETS", "THRESHOLD_ANCHOR", "THRESHOLD_ANCHORS",
           "THRESHOLD_TARGETS", "REGIME_TARGETS", "REGIME_COLUMNS", "Band", "threshold_row", "RegimeConfig", "Row", "plan",
           "decodings", "score", "score_rows", "regime_figures", "headline", "FILENAME", "path_of", "save",
           "Regime", "load", "measure", "measured_by", "measure_checkpoint", "regime_record", "targets", "met_word",
           "markdown"]
