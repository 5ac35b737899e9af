"""Text from records: every measured number the README and the book's pages state in prose.

Each function is a sentence template over a typed record of :mod:`tspd.records` (a checkpoint's
``evals.json`` / ``probes.json`` / ``regime.json``, the 500-problem controller table and its runs, cache
agreement, the lm-eval example, the fresh-clone times, the bench files) or the claims' verdicts
(:mod:`tspd.book.claims`); :data:`FACTS` names the one a page's ``<!-- NAME -->`` span holds, and
``python -m tspd fill-records`` (:mod:`tspd.book.spans`) writes them. Accuracy differences are stated with
n and a 95 % interval (paired bootstrap over the same problems); accuracies with n and a Wilson interval.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from tspd import markdown
from tspd.book.dynamics import dynamics_summary, shifted_summary
from tspd.book.headline import headline_table
from tspd.book.dashboard import zoo_table
from tspd.book.loop_speed import share_text
from tspd.book.accuracy import accuracy_text, reference_accuracy, reference_steps
from tspd.decoding.names import display_name, slug
from tspd.stats import wilson
from tspd.tasks.generated import trained_task
from tspd.models.loading import DEFAULT_MODEL, resolve_path
from tspd.records import (bench_forward, bench_loop, bench_step, cache_agreement as agreement_record, controller_table,
                          fresh_clone, lmeval_example, regime, train_lm_evals, train_lm_probes)
from tspd.records.files import shown


def span_of(values, fmt: str) -> str:
    """``lo-hi`` of ``values`` in format ``fmt``, or the one value when both read the same."""
    lo, hi = f"{min(values):{fmt}}", f"{max(values):{fmt}}"
    return lo if lo == hi else f"{lo}-{hi}"


def _pct(share: float) -> str:
    return f"{100 * share:.1f} %"


def _with_interval(correct: int, n: int) -> str:
    """``89.4 % (95 % interval 86.4-91.8 %, n = 500)``."""
    lo, hi = wilson(correct, n)
    return f"{100 * correct / n:.1f} % (95 % interval {100 * lo:.1f}-{100 * hi:.1f} %, n = {n})"


def _measured_on(model: str | None, gen_length: int | None = None) -> str:
    """Nothing when a stored table is of the book's model, else which model and window it is of (a switch of
    the book's model lands before its 500-problem tables are measured again)."""
    if (model or DEFAULT_MODEL) == DEFAULT_MODEL:
        return ""
    window = f", window {gen_length}" if gen_length else ""
    return f"measured on `{model}`{window}, not on the book's `{DEFAULT_MODEL}`"


# ------------------------------------------------------------------------------------------------
# The embedded model: its own records (evals.json, probes.json; its config.json and weights)
# ------------------------------------------------------------------------------------------------
def model_accuracy(model: str = DEFAULT_MODEL) -> str:
    acc = reference_accuracy(model)
    if acc is None:
        raise ValueError(f"{model} has no {train_lm_evals.FILENAME} or {regime.FILENAME} with a vanilla "
                         f"1-token-per-step row")
    return accuracy_text(acc)


def model_size(model: str = DEFAULT_MODEL) -> str:
    """``0.55M parameters in 2 blocks`` (counted from the safetensors headers, blocks from config.json)."""
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
    return f"{params / 1e6:.2f}M parameters in {layers} blocks"


def _below(correct: int, n: int, reference: float) -> bool:
    """Whether a row's whole 95 % interval lies below the reference share: a cost the record shows."""
    return wilson(correct, n)[1] < reference


def model_lines(model: str = DEFAULT_MODEL) -> str:
    """What the model's probes and its tokens-per-step sweep say: it reads its own lines, and whether it needs
    them (Sec. 1: parallel decoding costs accuracy only where later tokens depend on earlier ones)."""
    return _lines(model)[0]


def _lines(model: str) -> tuple[str, bool]:
    """:func:`model_lines`'s text and whether it says the model needs its lines.

    Each part comes from its record where the record has it (the probes: arith's counterfactual copy and
    one-forward final in ``probes.json``, or roster's line probes at the last curve point; the sweep: vanilla at
    several tokens per step, from ``evals.json`` or ``regime.json``); a part without its record is left out. A
    cost is said only of a part whose 95 % interval lies below vanilla's accuracy.
    """
    probes = train_lm_probes.load(model)
    steps, vanilla = reference_steps(model), reference_accuracy(model)
    out, sources = [], {vanilla.source} if vanilla else set()
    if probes:
        sources.add(f"{shown(resolve_path(model))}/{train_lm_probes.FILENAME}")
    if probes.get("cf_n") and probes.get("cf_next_copied") is not None:
        cf_n = int(probes["cf_n"])
        copied = round(probes["cf_next_copied"] * cf_n)
        out.append(f"with line 1's result altered and everything after it masked, it copies the altered value in "
                   f"{copied} of {cf_n} problems ({_pct(copied / cf_n)})")
    curve = _roster_probes(model)
    if curve:
        out.append(curve[0])
        sources.add(curve[1])
    parts, costs = [], []
    if probes.get("one_pass_final") is not None and probes.get("n"):
        one, n = round(probes["one_pass_final"] * probes["n"]), int(probes["n"])
        parts.append(f"one forward with the whole answer window masked gets the final right for {_with_interval(one, n)}")
        costs.append(vanilla is not None and _below(one, n, vanilla.share))
    if steps and vanilla is not None:
        rows = [f"{r['tokens_per_step']} tokens per step {_with_interval(r['correct'], r['n'])}" for r in steps]
        cost = any(_below(r["correct"], r["n"], vanilla.share) for r in steps)
        parts.append(f"fewer steps cost it {'accuracy' if cost else 'no accuracy its intervals show'}: "
                     f"{', '.join(rows)}, against {accuracy_text(vanilla, bold=False)}")
        costs.append(cost)
    needs = any(costs)
    if parts:
        lead = "It needs those lines: " if needs else "It does not need them to be right: "
        out.append(lead + ", and ".join(parts) if out else ", and ".join(parts))
    if not out:
        return "its record has no probes yet", False
    return ". ".join(out) + " (" + ", ".join(f"`{s}`" for s in sorted(sources)) + ")", needs


def _roster_probes(model: str) -> tuple[str, str] | None:
    """Roster's line probes (:mod:`tspd.training.roster_probes`) at the checkpoint's last curve point, and the
    file they come from; None for a checkpoint without them."""
    last, path = train_lm_probes.last_curve_point(model)
    if last.get("probe_chore") is None or last.get("probe_pair") is None:
        return None
    text = (f"teacher-forced at its last curve point ({int(last['n'])} problems), it fills one masked chore of a "
            f"day line from the others in {_pct(last['probe_chore'])} of lines and two masked chores in "
            f"{_pct(last['probe_pair'])} (each once, either order), and one forward with the whole window masked "
            f"writes {_pct(last['one_pass_lines'] or 0)} of the day lines right")
    return text, str(shown(path))


# ------------------------------------------------------------------------------------------------
# The paper's claims (results/claims)
# ------------------------------------------------------------------------------------------------
def claims_summary() -> str:
    """The tally of the "What reproduces" page and, per verdict, each claim with the quantity that decided it."""
    from tspd.book import claims
    from tspd.book.claims.page import verdict_rows
    stored = claims.load_all()
    tally = claims.tally(claims.page_rows(stored))
    rows = verdict_rows(stored)
    ns = sorted({r["n"] for r in rows if r["n"] is not None})
    unmeasured = [r["where"] for r in rows if r["verdict"] == "not measured"]
    head = (f"Claims of the paper checked on the embedded model: {tally[claims.HOLDS]} holds, "
            f"{tally[claims.FAILS]} do not hold, {tally[claims.OPEN]} inconclusive ({len(rows)} claims"
            + (f", {' and '.join(unmeasured)} not measured" if unmeasured else "")
            + f"; n = {', '.join(map(str, ns))} problems or prompts; 95 % bootstrap intervals).")
    out = [head]
    for verdict, title in ((claims.HOLDS, "Holds"), (claims.FAILS, "Does not hold"), (claims.OPEN, "Inconclusive")):
        got = [r for r in rows if r["verdict"] == verdict]
        if got:
            out.append(f"{title}: " + "; ".join(f"{r['where']} ({r['decided by']})" for r in got) + ".")
    return " ".join(out)


def verdict_context(model: str = DEFAULT_MODEL, stored: dict | None = None) -> str:
    """What the verdicts can mean on ``model`` (the "What reproduces" page prints it): its accuracy, whether it
    needs its own lines, and what the caches cost it, each from its record."""
    from tspd.book import claims
    stored = claims.load_all() if stored is None else stored
    caches = [f for c in (stored.get("table04_kv_cache") or {}).values() for f in c.findings()
              if f.quantity.startswith("accuracy")]
    cache_text = "; ".join(f"{f.quantity} {f.value:.1f} (95 % interval {f.lo:.1f} to {f.hi:.1f}, n = {f.n})"
                           for f in caches)
    lines, needs = _lines(model)
    if needs:
        meaning = ("So the accuracy a controller keeps says something, but a table notebook's intervals are a few points "
                   "wide at its 200 problems: small accuracy differences stay inconclusive.")
    else:
        meaning = ("So parallel decoding costs this model no accuracy that its record shows, and the accuracy columns "
                   "cannot tell the controllers apart: the claims about forwards and wall time carry the comparison.")
    if any(f.hi < 0 for f in caches):
        cache = ("Unlike LLaDA-8B (Fast-dLLM's report), this small model loses accuracy to a KV cache "
                 f"(Table 4: {cache_text}), which weighs on every claim about a cached method. The claims about "
                 "forwards, wall time and traces do not depend on it.")
    elif caches:
        cache = (f"As for LLaDA-8B (Fast-dLLM's report), the KV caches cost it no accuracy that Table 4's intervals "
                 f"show ({cache_text}).")
    else:
        cache = ""
    task = trained_task(model).SUMMARY
    return (f"**What the verdicts can mean here.** The embedded model answers {model_accuracy(model)} and reads "
            f"its own lines: {lines}. {meaning} " + (cache + " " if cache else "")
            + f"A small model on {task} remains weak evidence about the paper's 8B models on GSM8K.")


# ------------------------------------------------------------------------------------------------
# The 500-problem controller table (tspd.records.controller_table)
# ------------------------------------------------------------------------------------------------
class _Series:
    """A run's rows in a fixed problem order, shaped as the claims' bootstrap takes them."""

    def __init__(self, rows: dict[str, dict], ids: list[str]):
        self.samples = [rows[i] for i in ids]
        self.key = ""


def controller_comparisons(seed: int = 0, table: controller_table.ControllerTable | None = None) -> str:
    """Paired comparisons on the table's problems, as a Markdown table: each adaptive controller without a
    cache against vanilla (accuracy), against TSPD + CE (forwards), CE's effect, and each cache's cost."""
    from tspd.book.claims.runs import fewer_forwards, more_accurate
    from tspd.book.claims.stats import number
    runs = (table or controller_table.load()).runs()
    ids = sorted(set.intersection(*(set(r) for r in runs.values())))
    series = {k: _Series(v, ids) for k, v in runs.items()}

    def label(k):
        return display_name(k[0], k[1]) + ("" if k[2] == "none" else f", {k[2]} cache")

    def compare(how, a, b):
        return how({label(a): series[a], label(b): series[b]}, label(a), label(b), seed=seed)

    ours, vanilla, plain = ("tspd", True, "none"), ("vanilla", False, "none"), ("tspd", False, "none")
    adaptive = [k for k in series if k[2] == "none" and not k[1] and k[0] not in ("vanilla", "tspd")]
    found = [compare(more_accurate, k, vanilla) for k in [ours, *adaptive]]
    found += [compare(fewer_forwards, ours, k) for k in adaptive]
    if plain in series:
        found.append(compare(fewer_forwards, ours, plain))
    found += [compare(more_accurate, k, (k[0], k[1], "none"))
              for k in series if k[2] != "none" and (k[1] == (k[0] == "tspd"))]
    lines = markdown.table(["comparison (paired, same problems)", "value", "95 % interval", "n"],
                           [[f.quantity, number(f.value), f"{number(f.lo)} to {number(f.hi)}", f.n] for f in found])
    return "\n" + "\n".join(lines) + "\n"


def controller_overview(table: controller_table.ControllerTable | None = None) -> str:
    """The book introduction's sentence on the controllers, from the table's rows (n, forwards, accuracy)."""
    table = table or controller_table.load()
    rows = table.by_setting()
    van = rows[("vanilla", False, "none")]
    keep = [rows[k] for k in [("tspd", True, "none"), ("fast-dllm", False, "none"), ("credit", False, "none"),
                              ("learn2pd", False, "none")] if k in rows]
    dual = [rows[(r["controller"], r["ce"], "dual")] for r in keep if (r["controller"], r["ce"], "dual") in rows]
    other = _measured_on(table.model, table.gen_length)
    return (f"without a KV cache, TSPD + CE, Fast-dLLM, Credit Decoding and Learn2PD need "
            f"{span_of([r['nfe'] for r in keep], '.1f')} forwards per problem (vanilla {van['nfe']:.0f}) at "
            f"{span_of([100 * r['accuracy'] for r in keep], '.1f')} % accuracy (vanilla {100 * van['accuracy']:.1f} %), "
            f"and with the dual cache {span_of([100 * r['accuracy'] for r in dual], '.1f')} % (n = {table.n} each, "
            f"the controller table" + (f"; {other}" if other else "") + ")")


# ------------------------------------------------------------------------------------------------
# Cache agreement (tspd.records.cache_agreement)
# ------------------------------------------------------------------------------------------------
def cache_agreement(result: agreement_record.CacheAgreement | None = None) -> str:
    result = result or agreement_record.load()
    rows = result.rows
    keeps = "; ".join(f"{display_name(p)} on " + " and ".join(f"{_pct(r['same_answer'])} ({r['cache']})" for r in rs)
                      for p, rs in result.by_controller().items())
    parted = sum(r["parted"] for r in rows)
    near = sum(r.get("near_tie", 0) for r in rows)
    late = [r for r in rows if r["policy"] == "vanilla"]
    other = _measured_on(result.model)
    when = (f" Vanilla's partings come a median {span_of([r['median_step_in_block'] for r in late], '.0f')} forwards "
            f"after the start of their block." if late else "")
    return (f"The no-cache answer is kept by {keeps} of the {result.n} problems. At the first parting the "
            f"no-cache run's top-1/top-2 margin (slack) has a median of {span_of([r['median_slack'] for r in rows], '.2f')} and the cache "
            f"moved the top-1 confidences by a median of {span_of([r['median_shift'] for r in rows], '.2f')} (shift); {near} of {parted} "
            f"partings are near-ties.{when}" + (f" These figures were {other}." if other else ""))


# ------------------------------------------------------------------------------------------------
# The book model's regime record (tspd.records.regime, tspd.measures.regime)
# ------------------------------------------------------------------------------------------------
def regime_summary(model: str = DEFAULT_MODEL) -> str:
    """What the model's regime record says against LLaDA-8B-Instruct's anchors (their numbers, in brackets), and
    which of the regime targets it meets (:data:`tspd.measures.regime.REGIME_TARGETS`): a band is met when the whole
    95 % interval lies inside it."""
    from tspd.measures.regime import SCHEDULE_TARGETS, THRESHOLD_TARGETS, targets
    rec = regime.load(model)
    if rec is None:
        return "its record has no regime figures yet"
    found = targets(rec.data)
    ival = lambda t: "" if t["lo"] == t["hi"] else f" ({t['lo']:.1f} to {t['hi']:.1f})"  # noqa: E731
    theirs = lambda t: f" [{t['anchor'][0]:g}]" if t["anchor"] else ""  # noqa: E731
    parts, verdicts = [], []     # verdicts: (target's words, met, point met)
    by_cache: dict[str, list[tuple[str, dict]]] = {}
    for t in found:
        if t["target"] == "cache_cost":
            by_cache.setdefault(t["cache"], []).append((display_name(t["controller"], t["ce"]), t))
            continue
        if t["target"] == "vanilla":
            words = f"vanilla {t['band']} %"
        elif t["target"] == "fast_tpf":
            words = f"TPF {t['band']}"
            parts.append(f"Fast-dLLM at 0.9 without a cache makes {t['value']:.2f} non-EOS tokens per forward"
                         + (f" [{t['anchor'][0]:g} with the dual cache]" if t["anchor"] else ""))
        elif t["target"] in THRESHOLD_TARGETS.values():
            words = f"Fast-dLLM {t['threshold']:g} losing {t['band']} points"
            parts.append(f"Fast-dLLM at {t['threshold']:g} loses {t['value']:.1f} points{ival(t)}{theirs(t)}")
        elif t["target"] in SCHEDULE_TARGETS:
            step = "one step per block" if t["target"] == "block_step_loss" else f"{t['tokens_per_step']} tokens per step"
            words = f"{step} losing {t['band']} points"
            parts.append(f"{step} lose{'s' if t['target'] == 'block_step_loss' else ''} {t['value']:.1f} points"
                         f"{ival(t)}{theirs(t)}")
        else:   # long_gap
            window = t["window"]
            words = f"vanilla at {window} losing {t['band']} points"
            parts.append(f"vanilla at {window} tokens loses {t['value']:.1f} points{ival(t)} against the same "
                         f"{rec.rows[f'vanilla_{window}']['n']} problems at {rec.gen_length}{theirs(t)}")
        verdicts.append((words, t["met"], t["point_met"]))
    for cache, costs in by_cache.items():
        parts.append(f"the {cache} cache costs " + ", ".join(f"{who} {t['value']:.1f}{ival(t)}{theirs(t)}"
                                                             for who, t in costs) + " points")
        band = costs[0][1]["band"]
        missed = [who for who, t in costs if not t["met"]]
        verdicts.append((f"the {cache} cache {band} points" + (f" for {', '.join(missed)}" if missed else ""),
                         not missed, all(t["point_met"] for _, t in costs)))
    met = [w for w, ok, _ in verdicts if ok]
    missed = [w + (" (its point estimate is within)" if point else "") for w, ok, point in verdicts if not ok]
    return (f"window {rec.gen_length} / block {rec.block_length}, n = {rec.n} unless said, "
            f"95 % paired intervals, LLaDA-8B-Instruct's own figures in brackets: " + "; ".join(parts)
            + f". Targets met: {'; '.join(met) or 'none'}. Missed: {'; '.join(missed) or 'none'} (`{shown(rec.path)}`)")


# ------------------------------------------------------------------------------------------------
# The README's lm-eval example, the fresh-clone times, the bench files
# ------------------------------------------------------------------------------------------------
def lmeval_numbers(rec: lmeval_example.LmevalExample | None = None) -> str:
    rec = rec or lmeval_example.load()
    got = {name: (r.accuracy, r.nfe, r.tpf) for name, r in rec.runs.items()}
    text = lambda v: f"accuracy {v[0]:.2f}, NFE {v[1]:.2f} and TPF {v[2]:.1f} per problem"  # noqa: E731
    if len(set(got.values())) == 1:
        return f"on {rec.limit} problems all three give {text(next(iter(got.values())))}"
    return f"on {rec.limit} problems: " + "; ".join(f"`{n}` {text(v)}" for n, v in got.items())


def lmeval_times(rec: lmeval_example.LmevalExample | None = None) -> str:
    rec = rec or lmeval_example.load()
    secs = {name: r.seconds for name, r in rec.runs.items()}
    return (f"On the 2-core CPU ({rec.device}, 1-minute load average {rec.load_average} from other work, "
            f"{rec.date}) the first command took {secs['lm_eval']:.1f} s for {rec.limit} problems, the second "
            f"{secs['tspd.lmeval']:.1f} s, `python -m tspd eval` {secs['tspd eval']:.1f} s "
            f"(`{rec.command}`, `{lmeval_example.SHOWN}`)")


def fresh_clone_times(rec: fresh_clone.FreshClone | None = None) -> str:
    """The README's two commands, timed from a fresh clone (``scripts/time_fresh_clone.sh``)."""
    rec = rec or fresh_clone.load()
    summary = rec.tests_summary.split(" in ")[0]
    if rec.venv_seconds is not None:
        tests = (f"took {rec.tests_seconds / 60:.1f} minutes after creating `.venv` ({rec.venv_seconds / 60:.1f} "
                 f"minutes; {(rec.venv_seconds + rec.tests_seconds) / 60:.1f} in all; {summary}")
    else:
        tests = f"took {rec.tests_seconds / 60:.1f} minutes ({summary}; creating `.venv` included"
    return (f"From a fresh clone at {rec.revision} on a {rec.cores}-core {rec.device} ({rec.date}, 1-minute "
            f"load average {rec.load_average_before} before it), the tests " + tests
            + ("; no `../shared` beside the clone, so the tests that read it skipped" if rec.shared is False else "")
            + ") and the "
            f"main job, run next in the same clone, {rec.book_seconds / 60:.1f} minutes "
            f"(`{rec.command}`, `{fresh_clone.SHOWN}`)")


def gpu_speed(device: str = "NVIDIA-H200", rec: bench_step.BenchStep | None = None) -> str:
    """The GPU measurement at LLaDA-8B's shape, batch 1 (``python -m tspd bench-step``), against the issues' goals
    for its card (:data:`tspd.records.bench_step.GOALS`): dual-cache step, full forward, controller + CE."""
    rec = rec or bench_step.load(device)
    row = rec.batch(1)
    ms = lambda step: f"{1e3 * row[step]['seconds']:.2f} ms"   # noqa: E731
    timed, checked = bench_step.decoding_entries(row["generate"]), bench_step.decoding_entries(row["parity"])
    fast = [row["generate"][k]["control_fraction_of_forward"] for k, (*_, cache, on) in timed.items()
            if cache == "dual" and on]
    same = all(row["parity"][k]["same_tokens"] and row["parity"][k]["same_nfe"] for k in checked)
    caches = " and ".join("without one" if c == "none" else f"with the {c} cache"
                          for c in dict.fromkeys(cache for _, _, cache, *_ in checked.values()))
    full = bench_step.best_full_forward(row)["seconds"]
    floor, goal = row["full_forward"]["floor_seconds"], bench_step.goals(rec.device)
    beyond = ", ".join(f"{slug(p, ce)} {100 * share:.1f} %" for k, (p, ce, cache, on) in timed.items()
                       if cache == "dual" and on and (share := bench_step.beyond_forwards(row, k)) is not None)
    return (f"at LLaDA-8B's shape, {rec.dtype}, batch 1, prompt {row['prompt']} + {row['gen']}, block "
            f"{row['block']}, on the {rec.device} the fast path's dual-cache step takes {ms('dual_step_fast')} (eager "
            f"{ms('dual_step')}: {row['dual_step']['kernels']:,} kernel launches a step; goal {goal['dual_step_ms']:g} ms) "
            f"and the full forward {1e3 * full:.2f} ms, {100 * floor / full:.0f} % of its roofline floor of "
            f"{1e3 * floor:.2f} ms (goal on this card {goal['full_forward_ms']:g} ms and "
            f"{100 * bench_step.FLOOR_SHARE_GOAL:.0f} %); the fast path "
            f"decodes {'the same' if same else 'NOT the same'} tokens with the same NFE as the eager loop for "
            f"{', '.join(dict.fromkeys(slug(p, ce) for p, ce, *_ in checked.values()))} {caches}; "
            f"controller + CE take "
            f"{span_of([100 * f for f in fast], '.1f')} % of a fast-path forward, profiled (goal "
            f"{goal['control_percent']:g} %); by wall clock a fast-path call spends {beyond} beyond its forwards "
            f"(`{shown(bench_step.DIRECTORY) / rec.name}`)")


def gpu_forward(device: str = "NVIDIA-H200") -> str:
    """Where the full forward's time goes on a GPU (``python -m tspd bench-forward``): its matmul kernels' rate against
    the measured peak, what compiling the element-wise chains took off, and the CUDA-graph forward's kernels."""
    path, result = bench_forward.load(device)
    rows = {r["variant"]: r for r in bench_forward.variant_rows(result)}
    kinds = {r["kind"]: r for r in bench_forward.kind_rows(result)}
    chains = ("elementwise", "copy", "norm", "compiled")
    spent = {v: sum(kinds[k][f"{v} ms"] for k in chains if k in kinds) for v in ("fused", "graph")}
    kernel_ms = sum(r["graph ms"] for r in kinds.values())
    return (f"on the {result['device']} the matmul kernels run at "
            f"{span_of([100 * r['matmuls of peak'] for r in rows.values()], '.0f')} % of the measured peak (an "
            f"{result['peaks']['matmul_n']}-cubed product), and compiling the chains cut the element-wise, copy and "
            f"norm kernels from {spent['fused']:.1f} to {spent['graph']:.1f} ms per forward; replayed from a CUDA "
            f"graph the full forward takes {rows['graph']['full forward ms']:.2f} ms, "
            f"{100 * rows['graph']['of floor']:.0f} % of the floor of {1e3 * result['floor_seconds']:.2f} ms, its "
            f"kernels {kernel_ms:.1f} ms (matmuls {kinds['matmul']['graph ms']:.1f}, attention "
            f"{kinds['attention']['graph ms']:.1f}, the compiled chains {kinds['compiled']['graph ms']:.1f}) "
            f"(`{shown(path)}`)")


def loop_overhead(name: str | None = None, directory: str | Path | None = None) -> str:
    """What a decoding step costs beyond its forward (``python -m tspd bench-loop``): for each committed
    bench-loop file (or the one ``name``), each setting that has a target (issue 34's, stored in each row),
    without / with the prefix / dual cache."""
    names = [name] if name else bench_loop.names(directory)
    return "; and ".join(_loop_file(bench_loop.load(n, directory)) for n in names)


def _loop_file(rec: bench_loop.BenchLoop) -> str:
    parts, met, missed = [], [], []
    for (controller, ce), rows in rec.target_groups().items():
        shares = " / ".join(share_text(r["rest_of_forward"], r["target"]) for r in rows)
        parts.append(f"{display_name(controller, ce)} {shares} % ({' / '.join(r['cache'] for r in rows)}; target "
                     f"{100 * rows[0]['target']:.0f} %)")
        for r in rows:
            (met if r["meets_target"] else missed).append(display_name(controller, ce, r["cache"]))
    return (f"on `{rec.model}` at gen {rec.gen_length} / block {rec.block_length}, batch 1, {rec.device}, "
            f"everything but the forward costs {'; '.join(parts)} of a forward; targets met: {', '.join(met) or 'none'}; "
            f"missed: {', '.join(missed) or 'none'} (`{shown(bench_loop.DIRECTORY) / rec.name}`, revision {rec.revision})")


FACTS: dict[str, Callable[[], str]] = {
    "headline": headline_table,
    "status-dashboard": zoo_table,
    "dynamics-summary": dynamics_summary,
    "oracle-shifted": shifted_summary,
    "model-accuracy": model_accuracy,
    "model-size": model_size,
    "model-lines": model_lines,
    "regime-summary": regime_summary,
    "regime-summary-tiny-arith-256": lambda: regime_summary("tiny-arith-256"),   # the Regime page's other models
    "regime-summary-roster-dream": lambda: regime_summary("roster-dream"),
    "regime-summary-roster-moe": lambda: regime_summary("roster-moe"),
    "regime-summary-tiny-styled": lambda: regime_summary("tiny-styled"),
    "regime-summary-tiny-leaning": lambda: regime_summary("tiny-leaning"),
    "claims-summary": claims_summary,
    "controller-comparisons": controller_comparisons,
    "controller-overview": controller_overview,
    "cache-agreement": cache_agreement,
    "lmeval-numbers": lmeval_numbers,
    "lmeval-times": lmeval_times,
    "fresh-clone-times": fresh_clone_times,
    "gpu-speed": gpu_speed,
    "gpu-forward": gpu_forward,
    "gpu-speed-h100": lambda: gpu_speed("NVIDIA-H100-80GB-HBM3"),
    "gpu-forward-h100": lambda: gpu_forward("NVIDIA-H100-80GB-HBM3"),
    "loop-overhead": loop_overhead,
}


__all__ = ["FACTS", "model_accuracy", "model_size", "model_lines", "verdict_context", "claims_summary",
           "controller_comparisons", "controller_overview", "cache_agreement", "regime_summary", "lmeval_numbers",
           "lmeval_times", "fresh_clone_times", "gpu_speed", "loop_overhead"]
