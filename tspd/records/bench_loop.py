"""The loop's cost beyond its forwards: ``python -m tspd bench-loop --out results/bench/loop-{device}.json``
writes one ``results/bench/loop-<device>.json`` per machine (rows per controller, CE and cache)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tspd.decoding.names import display_name
from tspd.markdown import table as markdown_table
from tspd.provenance import REPO_ROOT
from tspd.records.files import read_json, shown
from tspd.records.device_files import write_device_file

DIRECTORY = REPO_ROOT / "results" / "bench"
GLOB = "loop-*.json"
CACHES = ("none", "prefix", "dual")   # a row's shares, in this order


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


def share_text(x: float, target: float | None) -> str:
    """``x`` in per cent to one decimal, or to two where one would read as the target itself (5.04 % misses 5 %)."""
    one = f"{100 * x:.1f}"
    return f"{100 * x:.2f}" if target is not None and one == f"{100 * target:.1f}" and x != target else one


def _shares(rows: list[dict] | None) -> str:
    """``1.5 / **5.1** / 7.3``: the rest of a step per cache of :data:`CACHES`, bold where it misses its target."""
    by_cache = {r["cache"]: r for r in rows or []}
    cells = []
    for cache in CACHES:
        r = by_cache.get(cache)
        text = "-" if r is None else share_text(r["rest_of_forward"], r["target"])
        cells.append(f"**{text}**" if r is not None and not r["meets_target"] else text)
    return " / ".join(cells)


def overhead_table(directory: str | Path | None = None) -> str:
    """What a step costs beyond its forward, % of the forward: a row per controller that has a target, a column
    per committed file (its device), then each file's model, window and revision, and its path."""
    recs = [load(n, directory) for n in names(directory)]
    groups = [rec.target_groups() for rec in recs]
    settings = list(dict.fromkeys(key for g in groups for key in g))
    rows = [[display_name(*key), f"{100 * next(g[key] for g in groups if key in g)[0]['target']:g}",
             *[_shares(g.get(key)) for g in groups]] for key in settings]
    rows.append(["model, window, revision", "", *[f"`{r.model}`, {r.gen_length} / {r.block_length}, batch 1, `{r.revision}`"
                                                  for r in recs]])
    rows.append(["record", "", *[f"`{shown(Path(directory or DIRECTORY) / r.name)}`" for r in recs]])
    header = [f"controller: {' / '.join(CACHES)} cache (bold: target missed)", "target, %", *[r.device for r in recs]]
    return "\n".join(markdown_table(header, rows))
