"""Where a full forward's time goes: ``python -m tspd bench-forward --out results/gpu/forward/{device}.json`` (run
by ``scripts/gpu_speed.sh`` on a GPU) writes one ``results/gpu/forward/<device>.json`` per card; the step-speed
page shows each as three tables (:func:`variant_rows`, :func:`kind_rows`, :func:`matmul_rows`)."""
from __future__ import annotations

from pathlib import Path

from tspd.records import bench_step
from tspd.records.device_files import write_device_file
from tspd.records.files import read_json

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
