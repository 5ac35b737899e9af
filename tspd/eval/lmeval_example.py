"""Run the README's lm-eval example on an embedded model and keep what it measured
(:mod:`tspd.records.lmeval_example`; the command: ``python -m tspd lmeval-example``, :mod:`tspd.commands.lmeval_example`).

The README's "Evaluating with lm-evaluation-harness" section shows three commands that decode the same
50 problems of the model's own task (``arith``: lm-eval task ``tspd_arith``) with Fast-dLLM at threshold
0.9: the stock ``lm_eval`` (the task named by its YAML), ``python -m tspd.lmeval`` and ``python -m tspd
eval``. This runs the three, each in a fresh process, and stores per command its accuracy, mean NFE, TPF
and wall time, with the machine and the thread count. ``--model`` is an embedded model trained on a
generated task whose lm-eval task ``tspd_<task>`` ships in ``tspd/eval/lmeval/tasks/``.
"""
from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

from tspd.models.loading import DEFAULT_MODEL, checkpoint_task
from tspd.provenance import REPO_ROOT
from tspd.records import lmeval_example as record

LIMIT = 50


class Example:
    """What the three commands decode: the model and its task (``arith``, ``chain``), in lm-eval's spellings."""

    def __init__(self, model: str):
        from tspd.tasks.generated import trained_task
        trained_task(model)   # one line where the model names no generated task
        self.model, self.task = model, checkpoint_task(model)
        self.model_args = f"pretrained={model},controller=fast-dllm,threshold=0.9"
        self.lmeval_task = f"tspd_{self.task}"
        self.yaml = f"tspd/eval/lmeval/tasks/{self.lmeval_task}/{self.lmeval_task}.yaml"   # the README's first command
        if not (REPO_ROOT / self.yaml).is_file():
            raise FileNotFoundError(f"no lm-eval task {self.lmeval_task} ({self.yaml}) for {model}'s task {self.task}: "
                                    "add it beside tspd_arith")


def commands(ex: Example, out: Path, threads: int) -> dict[str, list[str]]:
    """The README's three commands (output paths under ``out``)."""
    bin_ = REPO_ROOT / ".venv" / "bin"
    return {
        "lm_eval": [str(bin_ / "lm_eval"), "--model", "tspd", "--model_args", ex.model_args, "--tasks", ex.yaml,
                    "--limit", str(LIMIT), "--output_path", str(out / "lm_eval")],
        "tspd.lmeval": [str(bin_ / "python"), "-m", "tspd.lmeval", "--model", "tspd", "--model_args", ex.model_args,
                        "--tasks", ex.lmeval_task, "--limit", str(LIMIT), "--threads", str(threads),
                        "--output_path", str(out / "tspd.lmeval"), "--log_samples"],
        "tspd eval": [str(bin_ / "python"), "-m", "tspd", "eval", "--task", ex.task, "--model", ex.model,
                      "--controller", "fast-dllm", "--threshold", "0.9", "--limit", str(LIMIT), "--threads", str(threads),
                      "--out", str(out / f"{ex.task}.jsonl")],
    }


def harness_numbers(ex: Example, out: Path) -> dict:
    """exact_match, nfe and tpf of the one results file lm-eval wrote under ``out``."""
    (path,) = sorted(out.rglob("results_*.json"))
    got = json.loads(path.read_text())["results"][ex.lmeval_task]
    return {"accuracy": got["exact_match,none"], "nfe": got["nfe,none"], "tpf": got.get("tpf,none")}


def eval_numbers(ex: Example, out: Path) -> dict:
    """accuracy, mean NFE and TPF of ``python -m tspd eval``'s summary file."""
    got = json.loads((out / f"{ex.task}.summary.json").read_text())
    summary = got.get("summary", got)
    return {"accuracy": summary["accuracy"], "nfe": summary["nfe_mean"], "tpf": summary.get("tpf")}


def run_example(ex: Example, threads: int) -> record.LmevalExample:
    import torch

    from tspd.provenance import device_name
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
        torch.set_num_threads(threads)   # so that device_name states the commands' thread count
        model = "" if ex.model == DEFAULT_MODEL else f" --model {ex.model}"
        runs = {}
        meta = dict(limit=LIMIT, model_args=ex.model_args, threads=threads, device=device_name("cpu"),
                    date=time.strftime("%Y-%m-%d"), command=f"python -m tspd lmeval-example{model} --threads {threads}",
                    load_average=round(os.getloadavg()[0], 1))   # other work on the machine (1-minute load)
        for name, cmd in commands(ex, out, threads).items():
            start = time.perf_counter()
            subprocess.run(cmd, cwd=REPO_ROOT, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            seconds = time.perf_counter() - start
            numbers = eval_numbers(ex, out) if name == "tspd eval" else harness_numbers(ex, out / name)
            shown = " ".join(Path(c).name if i == 0 else c for i, c in enumerate(cmd)).replace(str(out), "OUT")
            runs[name] = record.CommandRun(command=shown, **numbers, seconds=round(seconds, 1))
        return record.LmevalExample(**meta, runs=runs)
