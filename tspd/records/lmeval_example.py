"""The README's lm-eval example: ``python -m tspd lmeval-example`` writes ``results/lmeval_example.json``,
per command (``lm_eval``, ``tspd.lmeval``, ``tspd eval``) its accuracy, mean NFE, TPF and wall time."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from tspd.markdown import table as markdown_table
from tspd.provenance import REPO_ROOT
from tspd.records.files import read_json, write_json

PATH = REPO_ROOT / "results" / "lmeval_example.json"
SHOWN = "results/lmeval_example.json"   # as the README cites it


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


def from_dict(data: dict) -> LmevalExample:
    return LmevalExample(**{**data, "runs": {name: CommandRun(**r) for name, r in data["runs"].items()}})


def load(path: str | Path | None = None) -> LmevalExample:
    return from_dict(read_json(path or PATH))


def save(record: LmevalExample, path: str | Path | None = None) -> Path:
    return write_json(path or PATH, record.to_dict())


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
