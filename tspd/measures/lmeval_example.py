"""Run the README's lm-eval example on an embedded model and keep what it measured.

The README's "Evaluating with lm-evaluation-harness" section shows three commands that decode the same
50 problems of the model's own task (``arith``: lm-eval task ``tspd_arith``) with Fast-dLLM at threshold
0.9: the stock ``lm_eval`` (the task named by its YAML), ``python -m tspd.lmeval`` and ``python -m tspd
eval``. This runs the three, each in a fresh process, and stores per command its accuracy, mean NFE, TPF
and wall time, with the machine and the thread count. ``--model`` is an embedded model trained on a
generated task whose lm-eval task ``tspd_<task>`` ships in ``tspd/eval/lmeval/tasks/``.

The record: ``python -m tspd lmeval-example`` (:mod:`tspd.commands.lmeval_example`) writes
``results/lmeval_example.json`` (:class:`LmevalExample`: per command, a :class:`CommandRun`); :func:`load` reads it,
:func:`save` writes one. Its table: :func:`example_table`.
"""
from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from tspd.markdown import table as markdown_table
from tspd.models.loading import DEFAULT_MODEL, checkpoint_task
from tspd.provenance import REPO_ROOT
from tspd.records.files import read_json, write_json

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


# --------------------------------------------------------------------------------------------------------------
# What the example measures, per command: the record's schema
# --------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CommandRun:
    """One command of the example and what it measured."""
    command: str
    accuracy: float
    nfe: float
    tpf: float | None
    seconds: float


@dataclass(frozen=True)
class LmevalExample:
    limit: int
    model_args: str
    threads: int
    device: str
    date: str
    command: str
    load_average: float
    runs: dict[str, CommandRun]

    @property
    def model(self) -> str:
        """The checkpoint the commands decoded (``pretrained=`` of the model arguments)."""
        return dict(kv.split("=", 1) for kv in self.model_args.split(","))["pretrained"]

    def to_dict(self) -> dict:
        return asdict(self)


# --------------------------------------------------------------------------------------------------------------
# The example: the README's three commands, each run in a fresh process, and the numbers each wrote
# --------------------------------------------------------------------------------------------------------------
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


def run_example(ex: Example, threads: int) -> LmevalExample:
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
            runs[name] = CommandRun(command=shown, **numbers, seconds=round(seconds, 1))
        return LmevalExample(**meta, runs=runs)


# --------------------------------------------------------------------------------------------------------------
# The record: results/lmeval_example.json
# --------------------------------------------------------------------------------------------------------------
PATH = REPO_ROOT / "results" / "lmeval_example.json"
SHOWN = "results/lmeval_example.json"   # as the README cites it


def from_dict(data: dict) -> LmevalExample:
    return LmevalExample(**{**data, "runs": {name: CommandRun(**r) for name, r in data["runs"].items()}})


def load(path: str | Path | None = None) -> LmevalExample:
    return from_dict(read_json(path or PATH))


def save(record: LmevalExample, path: str | Path | None = None) -> Path:
    return write_json(path or PATH, record.to_dict())


# --------------------------------------------------------------------------------------------------------------
# The record's table
# --------------------------------------------------------------------------------------------------------------
def example_table(rec: LmevalExample | None = None) -> str:
    """The example's three commands, a row each (accuracy, NFE and TPF a problem, wall time), and the record."""
    rec = rec or load()
    rows = [[f"`{name}`", f"{r.accuracy:.2f}", f"{r.nfe:.2f}", "-" if r.tpf is None else f"{r.tpf:.1f}",
             f"{r.seconds:.1f}"] for name, r in rec.runs.items()]
    rows.append(["record", f"`{SHOWN}` (`{rec.command}`; 1-minute load average {rec.load_average} from other work)",
                 "", "", ""])
    header = [f"command (`{rec.model}`, {rec.limit} problems)", "accuracy", "NFE a problem", "TPF",
              f"seconds ({rec.device}, {rec.date})"]
    return "\n".join(markdown_table(header, rows))


__all__ = ["LIMIT", "Example", "CommandRun", "LmevalExample", "commands", "harness_numbers", "eval_numbers",
           "run_example", "PATH", "SHOWN", "from_dict", "load", "save", "example_table"]
