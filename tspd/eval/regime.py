"""The regime figures of a checkpoint: is an embedded model in the regime the paper studies?

LLaDA-8B-Instruct on GSM8K (256-token window, blocks of 32) has four properties that the paper's methods
depend on, and an embedded model stands in for it only where it shares them:

- parallel decoding is hard: Fast-dLLM at threshold 0.9 writes 2.77 tokens per forward (TPF, the d3LLM
  leaderboard's measure: generated tokens that are not EOS, per forward), and a fixed schedule of several
  tokens per step loses accuracy (Sec. 1): 74.8 / 66.5 / 30.7 % at 2 / 4 / 8 tokens per step against 79.3 %
  at one (:data:`FIXED_ANCHORS`); here also one step per block, every token of a block in one forward;
- the KV caches are nearly free: the dual cache costs Fast-dLLM 0.8 points and TSPD + CE 0.6 (Table 4);
- longer windows still answer: vanilla at 512 / 1024 within 2.3 points of 256 (Table 3).

:func:`regime_figures` measures each on held-out problems through :func:`tspd.decoding.loop.generate`,
the path of every benchmark: one row per decoding, with n, right answers and TPF. :func:`headline` turns the
rows into the few numbers a training log tracks (``REGIME_COLUMNS``). The anchors are LLaDA-8B's, quoted
as theirs (:data:`ANCHORS`, :data:`CACHE_ANCHORS`).
"""
from __future__ import annotations

from dataclasses import dataclass

from tspd.decoding.config import DecodeConfig
from tspd.decoding.loop import generate

# LLaDA-8B-Instruct on GSM8K, gen 256 / block 32: the sources' numbers, not ours.
ANCHORS = {
    "fast_tpf": (2.77, "Fast-dLLM at 0.9 with the dual cache, TPF (d3LLM leaderboard data)"),
    "long_window_gap": (2.3, "largest vanilla loss at 512 / 1024 against 256 (paper Table 3)"),
}
# ... and what a KV cache costs a decoder, by (policy, CE, cache)
CACHE_ANCHORS = {
    ("fast-dllm", False, "dual"): (0.8, "points the dual cache costs Fast-dLLM (paper Table 4: 79.3 to 78.5)"),
    ("tspd", True, "dual"): (0.6, "points the dual cache costs TSPD + CE (paper Table 4)"),
}


# LLaDA-8B-Instruct on GSM8K (gen 256 / block 32), vanilla at a fixed k tokens per step: accuracy, %. Fast-dLLM
# paper, Fig. 5, values read from the plot (their numbers); and Fast-dLLM at threshold 0.9 in the same figure:
# (accuracy, tokens per step).
FIXED_ANCHORS = {1: 79.3, 2: 74.8, 4: 66.5, 8: 30.7}
THRESHOLD_ANCHOR = (79.2, 3.25)


@dataclass(frozen=True)
class RegimeConfig:
    n: int = 100                 # problems for the window's own figures (caches, TPF, the fixed schedule)
    long_n: int = 32             # problems for the longer windows (vanilla: a forward per token, so fewer)
    long_windows: tuple[int, ...] = (512,)   # windows beyond the checkpoint's own, vanilla only
    threshold: float = 0.9       # Fast-dLLM's threshold (the leaderboard's TPF point)
    tokens_per_step: tuple[int, ...] = (2, 4, 8)   # fixed schedules (k tokens a step): what parallel decoding costs
    block_step: bool = True      # also one step per block (every token of a block in one forward)
    caches: tuple[str, ...] = ("prefix", "dual")
    vanilla_caches: bool = True  # the caches under vanilla too (a forward per token: the costly rows; off during training)
    tspd_ce: bool = False        # also TSPD + CE with each cache (needs the model's trained controllers/tspd)
    batch: int = 100             # prompts per generate() call

    @classmethod
    def from_dict(cls, d: dict) -> "RegimeConfig":
        """The settings a record stored (its JSON lists back to tuples)."""
        d = {**d, "tokens_per_step": d.get("tokens_per_step", cls.tokens_per_step)}
        if isinstance(d["tokens_per_step"], int):   # a record from before the schedules were a list
            d["tokens_per_step"] = (d["tokens_per_step"],)
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in d.items()})


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


def decodings(cfg: RegimeConfig, gen_length: int, block_length: int) -> list[tuple[str, DecodeConfig, bool]]:
    """``(name, decoding, long)`` of every figure; ``long`` ones run on the first ``cfg.long_n`` problems.

    The rows of vanilla, Fast-dLLM and TSPD + CE, with each cache, are named by their decoding
    (:meth:`DecodeConfig.slug` with ``_``: ``vanilla``, ``fast_dual``, ``tspd_ce_prefix``); the fixed
    schedules, one step per block and the longer windows by what they change (``fixed4``, ``block_step``,
    ``vanilla_512``)."""
    base = dict(gen_length=gen_length, block_length=block_length)
    vanilla, fast = DecodeConfig.of(**base), DecodeConfig.of(policy="fast-dllm", threshold=cfg.threshold, **base)
    ours = DecodeConfig.of(policy="tspd", ce=True, **base)   # the paper's method, with the model's own controller
    out = [(d.slug("_"), d, False) for d in (vanilla, fast)]
    out += [(f"fixed{k}", DecodeConfig.of(steps=gen_length // k, **base), False) for k in cfg.tokens_per_step]
    if cfg.block_step:
        out.append(("block_step", DecodeConfig.of(steps=gen_length // block_length, **base), False))
    if cfg.tspd_ce:
        out.append((ours.slug("_"), ours, False))
    cached = [d for d, on in ((vanilla, cfg.vanilla_caches), (fast, True), (ours, cfg.tspd_ce)) if on]
    for cache in cfg.caches:
        out += [(d.slug("_"), d, False) for d in (d.replace(cache=cache) for d in cached)]
    for w in cfg.long_windows:
        out.append((f"vanilla_{w}", DecodeConfig.of(gen_length=w, block_length=block_length), True))
    return out


def regime_figures(model, task, problems: list[dict], gen_length: int, block_length: int,
                   cfg: RegimeConfig = RegimeConfig(), log=None) -> dict[str, dict]:
    """``{name: score row}`` for every decoding of :func:`decodings`, plus ``vanilla_short``: vanilla at
    ``gen_length`` on the longer windows' problems, their paired baseline."""
    rows = {}
    for name, decode, long in decodings(cfg, gen_length, block_length):
        chosen = problems[:cfg.long_n] if long else problems[:cfg.n]
        rows[name] = {k: v for k, v in score(model, task, chosen, decode, cfg.batch).items() if k != "texts"}
        if log:
            log(f"regime {name}: {rows[name]['correct']}/{rows[name]['n']}, TPF {rows[name]['tpf']:.2f}")
    if cfg.long_windows:
        short = problems[:cfg.long_n]
        rows["vanilla_short"] = {k: v for k, v in score(model, task, short, DecodeConfig.of(
            gen_length=gen_length, block_length=block_length), cfg.batch).items() if k != "texts"}
    return rows


def paired_gap(a: list[int], b: list[int], z: float = 1.96) -> tuple[float, float, float]:
    """Accuracy of ``a`` minus ``b`` on the same problems, in points, with its paired 95 % interval (the
    normal interval of a paired difference of proportions: only the problems the two disagree on count)."""
    n = len(a)
    if n == 0 or len(b) != n:
        raise ValueError(f"paired_gap needs two right/wrong lists of one length, got {len(a)} and {len(b)}")
    only_a = sum(x > y for x, y in zip(a, b))
    only_b = sum(y > x for x, y in zip(a, b))
    d = (only_a - only_b) / n
    half = z * max(only_a + only_b - (only_a - only_b) ** 2 / n, 0.0) ** 0.5 / n
    return 100 * d, 100 * max(d - half, -1.0), 100 * min(d + half, 1.0)   # a difference lies in [-100, 100]


REGIME_COLUMNS = ("fast_tpf", "fixed_loss", "vanilla_prefix_cost", "vanilla_dual_cost", "fast_prefix_cost",
                  "fast_dual_cost", "long_accuracy", "long_gap", "fixed2_loss", "fixed8_loss", "block_step_loss",
                  "fast_loss")


def headline(rows: dict[str, dict], cfg: RegimeConfig = RegimeConfig()) -> dict[str, float | None]:
    """The figures a training log tracks, in points of accuracy (a cost is no-cache minus cached): Fast-dLLM's
    TPF, the fixed schedule's loss, what each cache costs vanilla and Fast-dLLM, and the first longer
    window's accuracy and its gap to the same problems at the checkpoint's window; a figure whose row was not
    measured is None."""
    acc = lambda name: rows[name]["accuracy"] if name in rows else None   # noqa: E731
    diff = lambda a, b: None if acc(a) is None or acc(b) is None else round(100 * (acc(a) - acc(b)), 2)   # noqa: E731
    long = f"vanilla_{cfg.long_windows[0]}" if cfg.long_windows else None
    figures = {"fast_tpf": rows["fast"]["tpf"], "fixed_loss": diff("vanilla", "fixed4"),
               "vanilla_prefix_cost": diff("vanilla", "vanilla_prefix"), "vanilla_dual_cost": diff("vanilla", "vanilla_dual"),
               "fast_prefix_cost": diff("fast", "fast_prefix"), "fast_dual_cost": diff("fast", "fast_dual"),
               "long_accuracy": acc(long) if long else None, "long_gap": diff("vanilla_short", long) if long else None,
               "fixed2_loss": diff("vanilla", "fixed2"), "fixed8_loss": diff("vanilla", "fixed8"),
               "block_step_loss": diff("vanilla", "block_step"), "fast_loss": diff("vanilla", "fast")}
    return {k: figures[k] for k in REGIME_COLUMNS}


__all__ = ["ANCHORS", "FIXED_ANCHORS", "THRESHOLD_ANCHOR", "RegimeConfig", "score", "decodings", "regime_figures", "REGIME_COLUMNS", "headline", "paired_gap"]
