"""Decoding steps against the roofline: ``python -m tspd bench-step --out results/gpu/{device}.json`` (run by
``scripts/gpu_speed.sh`` on a GPU) writes ``results/gpu/<device>.json``; the step-speed page shows them."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tspd.provenance import REPO_ROOT
from tspd.records.device_files import write_device_file
from tspd.records.files import read_json

DIRECTORY = REPO_ROOT / "results" / "gpu"


@dataclass(frozen=True)
class BenchStep:
    """One device's file: its device and dtype and one row per batch size (dicts as stored)."""
    name: str
    device: str
    dtype: str
    rows: list[dict]

    def batch(self, size: int) -> dict:
        return next(r for r in self.rows if r["batch"] == size)


def load(device: str, directory: str | Path | None = None) -> BenchStep:
    """``results/gpu/<device>.json`` (``device`` as its file names it, e.g. ``NVIDIA-H200``)."""
    d = read_json(Path(directory or DIRECTORY) / f"{device}.json")
    return BenchStep(f"{device}.json", d["device"], d["dtype"], d["rows"])


def load_dicts(directory: str | Path | None = None) -> list[tuple[Path, dict]]:
    return [(p, read_json(p)) for p in sorted(Path(directory or DIRECTORY).glob("*.json"))]


def save(result: dict, template: str) -> Path:
    return write_device_file(result, template)
