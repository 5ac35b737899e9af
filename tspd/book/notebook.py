"""What every notebook of the book does the same way: set up, measure a set of runs, tabulate, plot.

A notebook names its runs as ``{label: RunConfig}``, calls :func:`measure` (which reads back what
any notebook already measured with the same configuration, see :mod:`tspd.eval.experiments`), turns the
results into rows with :func:`rows` (speedup against a baseline run of the same call) and shows them
beside the paper's with :func:`tspd.book.reported.side_by_side`. Bar charts go through :func:`bars`
so that the pages look alike; :func:`pareto_front` marks the speed-accuracy front.
"""
from __future__ import annotations

import dataclasses

import importlib.util
import random
import warnings
from pathlib import Path
from typing import Any, Mapping

import torch

from tspd.book.reported import Table
from tspd.eval.experiments import RunConfig, RunResult, ours_label, result
from tspd.records.runs import RUNS_DIR
from tspd.eval.results import tpf
from tspd.tasks.generated import row_answer
from tspd.provenance import device_name
from tspd.models.loading import window


# The paper's row labels (Tables 1-3) -> what they decode with. "†" marks a run without KV cache;
# Fast-dLLM and Credit Decoding use their own default cache, which the paper leaves unnamed (dual here).
METHODS = {
    "Vanilla": dict(controller="vanilla"),
    "F-dLLM": dict(controller="fast-dllm", cache="dual"),
    "CD": dict(controller="credit", cache="dual"),
    "Prophet †": dict(controller="prophet"),
    "Learn2PD †": dict(controller="learn2pd"),
    "Ours †": dict(controller="tspd", ce=True),
    "Ours": dict(controller="tspd", ce=True, cache="dual"),
}


def method_config(base: RunConfig, method: str, **changes) -> RunConfig:
    """``base`` with the decoding of one of :data:`METHODS` (then ``changes``) applied."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; known: {', '.join(METHODS)}")
    fields = dict(controller="vanilla", ce=False, cache="none", controller_kwargs={})
    fields.update(METHODS[method])
    fields.update(changes)
    return base.replace(**fields)


def row_label(method: str, label: str | None = None) -> str:
    """The paper's row label of ``method`` (a :data:`METHODS` key, shown as ``label``): " †" marks the
    rows decoded without KV cache, as the paper's tables do (Vanilla's row has no mark)."""
    label = label or method
    cache = METHODS[method].get("cache", "none")
    return label if method == "Vanilla" or "†" in label or cache != "none" else label + " †"


def agreement(reference: RunResult, run: RunResult) -> dict:
    """How often ``run`` gives what ``reference`` gives, over their common problems (Table 4, Pareto):
    ``n``, ``identical output (%)`` (the same text) and ``identical answer (%)`` (the same answer as the grade
    reads it: the extracted final answer, or the whole answer where the task grades it,
    :func:`tspd.tasks.generated.row_answer`)."""
    by_id = {s["id"]: s for s in run.samples}
    pairs = [(s, by_id[s["id"]]) for s in reference.samples if s["id"] in by_id]
    answer = row_answer(reference.config.task)

    def share(same) -> float:
        return 100.0 * sum(same(a, b) for a, b in pairs) / max(len(pairs), 1)

    return {"n": len(pairs), "identical output (%)": share(lambda a, b: a.get("output") == b.get("output")),
            "identical answer (%)": share(lambda a, b: answer(a) == answer(b))}


PAPER_BACKBONES = {"dream": "Dream-7B", "llada-moe": "LLaDA-MoE"}   # Table 2's rows, by Checkpoint.backbone


def paper_model(model: str) -> str:
    """The paper's name for ``model`` in Table 2's rows (a Dream or LLaDA-MoE checkpoint directory: its rows are
    matched with the paper's), else its own name: a LLaDA model, and every embedded model (``tspd/zoo``), whose
    rows stand below the paper's as ours alone."""
    from tspd.models.loading import ZOO, Checkpoint
    checkpoint = Checkpoint.open(model)
    embedded = checkpoint.path.parent == ZOO
    return Path(model).name if embedded else PAPER_BACKBONES.get(checkpoint.backbone, Path(model).name)


def paper_rows(table_id: str, **where) -> list[dict]:
    """The paper's rows of a table with " †" appended to the method of rows without KV cache."""
    from tspd.book.reported import paper_table
    rename = {"L2PD": "Learn2PD"}     # Table 1's MBPP block abbreviates Learn2PD
    return [{**r, "method": rename.get(r["method"], r["method"]) + (" †" if r.get("dagger") else "")}
            for r in paper_table(table_id, **where)]


def progress_bar(*args, **kwargs):
    """tqdm's notebook widget where ipywidgets is installed (JupyterLab), its text bar elsewhere."""
    if importlib.util.find_spec("ipywidgets") is not None:
        from tqdm.auto import tqdm
    else:
        from tqdm import tqdm
    return tqdm(*args, **kwargs)


lengths = window   # a notebook's gen_length / block_length: the checkpoint's own where 0 or None


# the parameters a table notebook's run reads by name: the run's own fields, the window and the seed
RUN_PARAMETERS = tuple(f.name for f in dataclasses.fields(RunConfig) if f.name not in ("task", "decode", "checkpoint")) \
    + ("gen_length", "block_length", "steps", "seed")


def base_run(params: Mapping[str, Any], **changes) -> RunConfig:
    """The run a table notebook starts from (vanilla decoding), read by name from its parameter cell:
    ``book.base_run(globals())``; ``changes`` replace parameters (``gen_length=L``).

    Parameters of :data:`RUN_PARAMETERS` that are absent keep :class:`RunConfig`'s defaults, and the
    parameter cell's "unset" values mean the defaults too: ``gen_length`` / ``block_length`` 0 the
    checkpoint's own window, ``steps`` 0 one token per step, ``dtype`` "" the device's (float32 on a
    CPU, bfloat16 on a GPU), ``limit`` 0 the whole test split.
    """
    p = {**{k: params[k] for k in RUN_PARAMETERS if k in params}, **changes}
    for unset_is_default in ("gen_length", "block_length", "steps", "dtype"):
        if unset_is_default in p:
            p[unset_is_default] = p[unset_is_default] or None
    return RunConfig(**p)


def setup(device: str = "cpu", threads: int = 0, seed: int = 0) -> str:
    """Seed everything and size torch's CPU thread pool; returns the device's name for labels.

    ``threads`` 0 keeps torch's default (all cores). Batched decoding of the embedded model is
    compute-bound, so all cores help; set 1 when several notebooks run side by side.
    """
    if threads:
        torch.set_num_threads(threads)
    try:   # without ipywidgets tqdm.auto warns once per process; book.progress_bar falls back quietly
        from tqdm import TqdmExperimentalWarning, TqdmWarning
        warnings.filterwarnings("ignore", category=TqdmWarning)
        warnings.filterwarnings("ignore", category=TqdmExperimentalWarning)
    except ImportError:
        pass
    random.seed(seed)
    torch.manual_seed(seed)
    if torch.device(device).type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(f"device={device!r} but torch sees no CUDA device; use device='cpu'")
    return device_name(device)


def results_dir(path: str | None) -> Path:
    """The notebook's ``results_dir`` parameter: empty means the repository's ``results/runs``."""
    return Path(path).expanduser().resolve() if path else RUNS_DIR


def variants_dir(path: str | None) -> Path:
    """Where :mod:`tspd.training.variants` keeps traces and trained controllers for this ``results_dir``."""
    from tspd.training.variants import DEFAULT_DIR
    return results_dir(path) / "variants" if path else DEFAULT_DIR


def measure(configs: dict[str, RunConfig], results_dir: str | Path | None = None,
            progress: bool = True) -> dict[str, RunResult]:
    """Run (or read back) every config, with one progress bar over them; keyed like ``configs``."""
    out = {}
    bar = progress_bar(configs.items(), total=len(configs), desc="runs", unit="run", disable=not progress)
    for label, cfg in bar:
        bar.set_postfix_str(label)
        out[label] = result(cfg, progress=False, results_dir=results_dir)
    bar.close()
    return out


def rows(results: dict[str, RunResult], baseline: str | None = None, **fields) -> list[dict]:
    """One row per run: ``method`` (its label), accuracy (%), TPS, NFE, TPF (:func:`tspd.eval.results.tpf`
    of its stored rows), n, speedup over ``baseline``.

    ``baseline`` names one of ``results`` (TPS of that run = 1.0x); ``fields`` maps a column name to
    a function of the RunConfig (e.g. ``task=lambda c: c.task``) to add setting columns.
    """
    ref = results[baseline].summary["tps"] if baseline else None
    out = []
    for label, r in results.items():
        s = r.summary
        row = {"method": label, **{k: f(r.config) for k, f in fields.items()},
               "accuracy": s["accuracy"], "tps": s["tps"], "nfe_mean": s["nfe_mean"], "tpf": tpf(r.samples),
               "n": s["n"],
               "speedup": (s["tps"] / ref) if ref and s["tps"] else None, "key": r.key}
        out.append(row)
    return out


# a deterministic check's measures of :func:`rows`' rows, as :func:`formatted` columns
MEASURES = {"accuracy, %": "accuracy:.1f", "forwards a problem (NFE)": "nfe_mean:.1f", "TPF": "tpf:.2f", "n": "n"}


def formatted(rows_: list[dict], columns: Mapping[str, str], caption: str | None = None) -> Table:
    """``rows_`` as a :class:`~tspd.book.reported.Table` of strings, each column formatted as a listing would.

    ``columns`` maps each header to ``"field"`` or ``"field:spec"`` (a format spec: ``"accuracy:.1f"``); a
    field that a row lacks or holds as None shows as "–". A check cell's table:
    ``book.formatted(ours, {"task": "task", "method": "method", **book.MEASURES})``.
    """
    def cell(row: dict, spec: str) -> str | None:
        field, _, fmt = spec.partition(":")
        return None if row.get(field) is None else format(row[field], fmt)
    return Table([{h: cell(r, spec) for h, spec in columns.items()} for r in rows_], list(columns), caption)


def provenance(results: dict[str, RunResult]) -> str:
    """``ours (tiny-arith, <cpu> (2 threads), n=8)``: what the measured numbers are."""
    first = next(iter(results.values()))
    ns = sorted({r.summary["n"] for r in results.values()})
    devices = " + ".join(dict.fromkeys(r.device_name for r in results.values()))   # all of them, in order
    return ours_label(first.config.model, devices, "/".join(map(str, ns)))


def bars(rows_: list[dict], metrics: tuple[str, ...] = ("tps", "accuracy"), label: str = "method",
         paper: list[dict] | None = None, title: str = ""):
    """One bar chart per metric: ours (and, if given, the paper's rows matched on ``label``)."""
    import matplotlib.pyplot as plt
    names = [r[label] for r in rows_]
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.2 * len(metrics), 3.2), squeeze=False)
    for ax, m in zip(axes[0], metrics):
        ours = [r.get(m) or 0.0 for r in rows_]
        x = torch.arange(len(names)).float()
        width = 0.4 if paper else 0.8
        ax.bar(x - (width / 2 if paper else 0), ours, width, label="ours")
        if paper:
            by = {p.get(label, p.get("method")): p.get(m) for p in paper}
            ax.bar(x + width / 2, [by.get(n) or 0.0 for n in names], width, label="paper", alpha=0.7)
            ax.legend(fontsize=8)
        ax.set_xticks(x.tolist(), names, rotation=30, ha="right", fontsize=8)
        ax.set_title({"tps": "tokens / s", "accuracy": "accuracy (%)", "nfe_mean": "NFE per sample",
                      "speedup": "speedup", "tpf": "tokens per forward (TPF)"}.get(m, m), fontsize=10)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def pareto_front(points: list[tuple[float, float]]) -> list[int]:
    """Indices of the points not dominated when both coordinates are to be maximised, by x."""
    idx = sorted(range(len(points)), key=lambda i: (-points[i][0], -points[i][1]))
    front, best = [], float("-inf")
    for i in idx:
        if points[i][1] > best:
            front.append(i)
            best = points[i][1]
    return sorted(front, key=lambda i: points[i][0])


__all__ = ["METHODS", "method_config", "row_label", "agreement", "paper_model", "paper_rows", "lengths", "base_run", "RUN_PARAMETERS",
           "setup", "results_dir", "variants_dir", "progress_bar", "measure", "rows", "MEASURES", "formatted",
           "provenance", "bars", "pareto_front"]
