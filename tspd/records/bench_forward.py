"""Where a full forward's time goes: ``python -m tspd bench-forward --out results/gpu/forward/{device}.json`` (run
by ``scripts/gpu_speed.sh`` on a GPU) writes one ``results/gpu/forward/<device>.json`` per card; the step-speed
page shows each as three tables (:func:`variant_rows`, :func:`kind_rows`, :func:`matmul_rows`), the status page
every card's in one (:func:`forward_table`)."""
from __future__ import annotations

from pathlib import Path

from tspd.records import bench_step
from tspd.records.device_files import write_device_file
from tspd.records.files import read_json, shown

DIRECTORY = bench_step.DIRECTORY / "forward"


def load_all(directory: str | Path | None = None) -> list[tuple[Path, dict]]:
    """Every file under ``directory`` (default the committed ones) as stored, by file name."""
    return [(p, read_json(p)) for p in sorted(Path(directory or DIRECTORY).glob("*.json"))]


def load(device: str, directory: str | Path | None = None) -> tuple[Path, dict]:
    """``results/gpu/forward/<device>.json`` (``device`` as its file names it, e.g. ``NVIDIA-H200``) and its dict."""
    path = Path(directory or DIRECTORY) / f"{device}.json"
    return path, read_json(path)


def save(result: dict, template: str) -> Path:
    """``result`` at ``template`` (``{device}`` replaced by the device's name)."""
    return write_device_file(result, template)


def matmul_flops(result: dict) -> float:
    """FLOPs of one forward's matmuls (its shapes as stored), attention's excluded."""
    return sum(2 * m["m"] * m["k"] * m["n"] * m["per_forward"] for m in result["matmuls"].values() if isinstance(m, dict))


def variant_rows(result: dict) -> list[dict]:
    """One row per lever: the full forward's ms and share of the floor, the dual step's ms, the logits' distance
    from the first variant, the kernels a forward launches and its matmul kernels' rate as a share of the measured
    peak (both None off CUDA)."""
    peak_seconds = matmul_flops(result) / result["peaks"]["matmul_flops"]
    rows = []
    for name, v in result["variants"].items():
        kernels = v["kernels"] or {}
        matmul = kernels.get("seconds", {}).get("matmul")
        rows.append({"variant": name, "full forward ms": 1e3 * v["seconds"], "of floor": v["floor_fraction"],
                     "dual step ms": 1e3 * v["dual_step_seconds"], "max |logit diff|": v["max_abs_logit_diff"],
                     "kernels": kernels.get("kernels"), "matmuls of peak": matmul and peak_seconds / matmul})
    return rows


def kind_rows(result: dict) -> list[dict]:
    """Kernel ms per forward by kind (rows) for each variant (columns); empty off CUDA."""
    measured = {name: v["kernels"]["seconds"] for name, v in result["variants"].items() if v["kernels"]}
    kinds = list(dict.fromkeys(k for by_kind in measured.values() for k in by_kind))
    return [{"kind": k, **{f"{name} ms": 1e3 * by_kind.get(k, 0.0) for name, by_kind in measured.items()}}
            for k in kinds]


def matmul_rows(result: dict) -> list[dict]:
    """Each matmul shape of the forward timed alone: ms, per forward, and its share of the measured peak."""
    return [{"matmul": name, "M x K x N": f"{m['m']} x {m['k']} x {m['n']}", "per forward": m["per_forward"],
             "ms alone": 1e3 * m["seconds"], "of peak": m["peak_fraction"]}
            for name, m in result["matmuls"].items() if isinstance(m, dict)]


FORWARD_ROWS = ["matmul kernels, % of the measured peak, per variant", "element-wise, copy and norm kernels, ms a "
                "forward: fused, then compiled and replayed", "full forward from a CUDA graph, ms",
                "its kernels, ms: all (matmuls, attention, compiled chains)", "record"]


def forward_cells(path: Path, result: dict) -> list[str]:
    """A card's column of :func:`forward_table`, a cell per :data:`FORWARD_ROWS` (dashes off CUDA)."""
    rows = {r["variant"]: r for r in variant_rows(result)}
    kinds = {r["kind"]: r for r in kind_rows(result)}
    if "graph" not in rows or "matmul" not in kinds:
        return ["-"] * (len(FORWARD_ROWS) - 1) + [f"`{shown(path)}`"]
    spent = {v: sum(kinds[k][f"{v} ms"] for k in ("elementwise", "copy", "norm", "compiled") if k in kinds)
             for v in ("fused", "graph")}
    peak = ", ".join(f"{name} {100 * r['matmuls of peak']:.0f}" for name, r in rows.items() if r["matmuls of peak"])
    graph = {k: kinds[k]["graph ms"] if k in kinds else 0.0 for k in ("matmul", "attention", "compiled")}
    return [f"{peak} (peak: an {result['peaks']['matmul_n']}-cubed product)", f"{spent['fused']:.1f}, then {spent['graph']:.1f}",
            f"{rows['graph']['full forward ms']:.2f}, {100 * rows['graph']['of floor']:.0f} % of its floor "
            f"({1e3 * result['floor_seconds']:.2f} ms)",
            f"{sum(r['graph ms'] for r in kinds.values()):.1f} ({graph['matmul']:.1f}, {graph['attention']:.1f}, "
            f"{graph['compiled']:.1f})", f"`{shown(path)}`"]


def forward_table(cards: tuple[str, ...] = bench_step.CARDS, directory: str | Path | None = None) -> str:
    """Where the full forward's time goes on each card of ``cards`` with a file: a row per :data:`FORWARD_ROWS`."""
    found = [load(card, directory) for card in cards if (Path(directory or DIRECTORY) / f"{card}.json").is_file()]
    return bench_step.card_table(FORWARD_ROWS, {result["device"]: forward_cells(path, result) for path, result in found})
