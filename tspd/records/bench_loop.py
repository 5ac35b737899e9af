"""The loop's cost beyond its forwards: ``python -m tspd bench-loop --out results/bench/loop-{device}.json``
writes one ``results/bench/loop-<device>.json`` per machine (rows per controller, CE and cache)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tspd.provenance import REPO_ROOT
from tspd.records.files import read_json
from tspd.records.device_files import write_device_file

DIRECTORY = REPO_ROOT / "results" / "bench"
GLOB = "loop-*.json"


@dataclass(frozen=True)
class BenchLoop:
    """One machine's file: where it was measured and its rows (each a dict as stored)."""
    name: str              # the file's name, loop-<device>.json
    model: str
    gen_length: int
    block_length: int
    device: str
    revision: str
    rows: list[dict]

    def target_groups(self) -> dict[tuple, list[dict]]:
        """(controller, ce) -> its rows that have a target, in stored order."""
        groups: dict[tuple, list[dict]] = {}
        for r in self.rows:
            if r.get("target") is not None:
                groups.setdefault((r["policy"], r["ce"]), []).append(r)
        return groups


def names(directory: str | Path | None = None) -> list[str]:
    return sorted(p.name for p in Path(directory or DIRECTORY).glob(GLOB))


def load_all(directory: str | Path | None = None) -> list[tuple[Path, dict]]:
    """Every file under ``directory`` (default the committed ones) as stored, by file name."""
    return [(p, read_json(p)) for p in sorted(Path(directory or DIRECTORY).glob(GLOB))]


def load(name: str, directory: str | Path | None = None) -> BenchLoop:
    d = read_json(Path(directory or DIRECTORY) / name)
    return BenchLoop(name, d["model"], d["gen_length"], d["block_length"], d["device"], d["revision"], d["rows"])


def save(result: dict, template: str) -> Path:
    """``result`` at ``template`` (``{device}`` replaced by the device's name)."""
    return write_device_file(result, template)
