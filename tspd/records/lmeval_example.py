"""The README's lm-eval example: ``python -m tspd lmeval-example`` writes ``results/lmeval_example.json``,
per command (``lm_eval``, ``tspd.lmeval``, ``tspd eval``) its accuracy, mean NFE, TPF and wall time."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

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
