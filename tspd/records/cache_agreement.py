"""Cache agreement: ``python -m tspd cache-agreement`` writes ``results/cache_agreement.json`` (one row per
controller and cache) and its per-problem rows, ``results/cache_agreement.samples.jsonl``, as they are made."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tspd.markdown import table as markdown_table
from tspd.provenance import REPO_ROOT
from tspd.records.files import append_jsonl, read_json, read_jsonl, write_json

PATH = REPO_ROOT / "results" / "cache_agreement.json"


def samples_path(path: str | Path | None = None) -> Path:
    """The per-problem rows beside the summary at ``path``: ``<name>.samples.jsonl``."""
    return Path(path or PATH).with_suffix(".samples.jsonl")


@dataclass(frozen=True)
class CacheAgreement:
    """The stored summary: the model and problem count it was measured on, one dict per (controller, cache)."""
    model: str
    n: int
    rows: list[dict]

    def by_controller(self) -> dict[str, list[dict]]:
        out: dict[str, list[dict]] = {}
        for r in self.rows:
            out.setdefault(r["policy"], []).append(r)
        return out


def load(path: str | Path | None = None) -> CacheAgreement:
    data = read_json(path or PATH)
    return CacheAgreement(data["model"], data["n"], data["rows"])


def load_dict(path: str | Path | None = None) -> dict:
    return read_json(path or PATH)


def save(result: dict, path: str | Path | None = None) -> Path:
    return write_json(path or PATH, result)


def load_samples(path: str | Path | None = None) -> list[dict]:
    """The per-problem rows stored so far ([] before the first)."""
    return read_jsonl(samples_path(path), missing_ok=True)


def append_samples(rows: list[dict], path: str | Path | None = None) -> None:
    append_jsonl(samples_path(path), rows, ensure_ascii=True)


def markdown(result: dict) -> str:
    """The README's table of the stored summary."""
    header = ["controller", "cache", "n", "same answer (95 % interval)", "same text", "parted", "near-tie partings",
              "median forwards since block start", "median confidence shift", "median slack"]
    rows = [[r["policy"], r["cache"], r["n"], f"{r['same_answer']:.1%} ({r['same_answer_95'][0]:.1%}-"
             f"{r['same_answer_95'][1]:.1%})", f"{r['same_text']:.1%}", r["parted"], f"{r.get('near_tie', 0)} of {r['parted']}",
             f"{r.get('median_step_in_block', float('nan')):.0f}", f"{r.get('median_shift', float('nan')):.3f}",
             f"{r.get('median_slack', float('nan')):.3f}"] for r in result["rows"]]
    if all("lost" in r for r in result["rows"]):   # records made before the rows kept their faults have none
        header += ["lost / gained answers", "lost as"]
        rows = [row + [f"{r['lost']} / {r['gained']}", "; ".join(f"{kind} ({k})" for kind, k in r["lost_faults"].items())
                       or "-"] for row, r in zip(rows, result["rows"])]
    return "\n".join(markdown_table(header, rows))


def agreement_table(path: str | Path | None = None) -> str:
    """The status and controllers pages' table: :func:`markdown` of the stored summary, led by the model it was
    measured on where that is not the book's."""
    from tspd.models.loading import DEFAULT_MODEL
    data = load_dict(path)
    table = markdown(data)
    return table if data["model"] == DEFAULT_MODEL else f"Measured on `{data['model']}`, not on `{DEFAULT_MODEL}`.\n\n{table}"
