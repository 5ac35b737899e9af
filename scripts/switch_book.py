"""Switch the book to another embedded model: steps 2-3 of scripts/ship_model.sh's header, done by rule.

    .venv/bin/python scripts/switch_book.py tiny-roster [--staged]

- ``tspd/zoo/book.json`` names NAME (``DEFAULT_MODEL``, the package's one default model);
- every notebook's parameter cell names NAME where it named the old model (``model``, ``models``,
  ``model_name``, ``out_dir``), NAME's task where it named the old one (``tasks``) and NAME's traces split
  (``trace_source`` and the comments that list the sources); the regime page also shows the old model
  (``compare``: the two swap places), so the book keeps one model where parallel decoding is free beside one where
  it is not.

With ``--staged``, the book's runs measured ahead on NAME (``scripts/stage_book.sh NAME``, under
``results/staging/NAME/``) also take the place of the old model's: ``results/runs``, ``results/variants`` and
``results/claims``, the Pareto page's AUP record, the controller table and the cache agreement (the old book
model's files stay in git's history, and the tree keeps its size: tests/test_tree.py); the book's runs of other
models (Table 2's backbones, the own-decodings page's models) are kept. The runs of a staged controller variant
are renamed for the variant's new place (:func:`rekey_runs`), so that the book reads them back. It refuses, naming
what is missing, while the staging is unfinished.

Outputs are left as they are: execute the notebooks afterwards (ship_model.sh's step 4; after ``--staged`` with
``READ_BACK=1``, so that they read the staged runs back). Rerunning it with
the book already on NAME changes nothing. tests/test_notebooks.py checks the result.
"""
from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from tspd.models.loading import ZOO, checkpoint_task
from tspd.records.files import write_json

ROOT = Path(__file__).resolve().parent.parent
BOOK_MODEL = ROOT / "tspd" / "zoo" / "book.json"   # this tree's (the script may run beside an installed copy)


def switched_cell(source: str, old: str, new: str, old_task: str, new_task: str) -> str:
    """A parameter cell on NEW where it named OLD; the regime page's ``compare`` line swaps the two instead, so
    that the page keeps the old model beside the new one and does not show the new one twice."""
    lines = []
    for line in source.split("\n"):
        if line.startswith("compare: list = "):
            line = line.replace(f'"{old}"', "\0").replace(f'"{new}"', f'"{old}"').replace("\0", f'"{new}"')
            if line.startswith("compare: list = []"):
                line = line.replace("compare: list = []", f'compare: list = ["{old}"]', 1)
        else:
            line = line.replace(f'"{old}"', f'"{new}"').replace(f'runs/{old}-', f'runs/{new}-')
            line = line.replace(f'["{old_task}"]', f'["{new_task}"]').replace(f"{old_task}-traces", f"{new_task}-traces")
        lines.append(line)
    return "\n".join(lines)


def staged_parts(name: str) -> list[tuple[str, str]]:
    """(staged path, the book's path), relative to the repository, of every record the staging of NAME holds, in
    the order they move (the runs last: the staging keeps the variants inside them). Each record's module names
    its own path."""
    from tspd.book import controller_table, pareto
    from tspd.book.claims.store import CLAIMS_DIR
    from tspd.records.runs import RUNS_DIR
    from tspd.provenance import REPO_ROOT
    from tspd.measures import cache_agreement
    from tspd.training.variants import DEFAULT_DIR as VARIANTS
    stage = Path("results", "staging", name)
    table, agreement = controller_table.PATH, cache_agreement.PATH
    pairs = [(stage / RUNS_DIR.name / VARIANTS.name, VARIANTS), (stage / CLAIMS_DIR.name, CLAIMS_DIR),
             (stage / table.name, table), (stage / controller_table.RUNS, table.parent / controller_table.RUNS),
             (stage / agreement.name, agreement), (stage / cache_agreement.samples_path().name,
                                                   cache_agreement.samples_path()),
             (stage / RUNS_DIR.name / pareto.RECORD.name, pareto.RECORD),   # the page keeps it inside a results_dir
             (stage / RUNS_DIR.name, RUNS_DIR)]
    return [(str(src), str(dest.relative_to(REPO_ROOT))) for src, dest in pairs]


def rekey_runs(runs: Path, old: str, new: str) -> list[str]:
    """Name the runs in ``runs`` whose controller weights lay under ``old`` (a ``<repo>/...`` prefix) by where the
    weights are now, ``new``: a run's key and its rows' config id hash its settings, the weights' path among
    them, so without this the book would decode again every run of a staged controller variant. The weights
    files are the same bytes (moved, not retrained), so the rows stay as decoded; a run already stored under
    the new key is replaced. Returns ``old key -> new key`` for each."""
    from tspd.eval.job import EvalJob, RunConfig
    from tspd.records import runs as registry
    from tspd.records.rows import config_id
    done = []
    for meta in registry.sidecars(runs):
        kwargs = meta.get("config", {}).get("policy_kwargs") or {}
        moved = {k: new + v[len(old):] if isinstance(v, str) and v.startswith(old) else v for k, v in kwargs.items()}
        if moved == kwargs:
            continue
        meta["config"]["policy_kwargs"] = moved
        config = RunConfig.from_dict(meta["config"])
        key = config.key
        job_config = EvalJob(config, registry.rows_file(key, runs).path).row_config()
        registry.move(meta["key"], key, meta, config_id(job_config), job_config, runs)
        done.append(f"{meta['key']} -> {key}")
    return done


def carry_runs(book_runs: Path, staged_runs: Path, old: str) -> list[str]:
    """Copy into the staged runs every run of the book's that decodes another model than OLD (the pages that show
    other models beside the book's: Table 2's backbones, the own-decodings page) and that the staging lacks, so
    that the switch removes only the old model's runs. Returns the keys carried."""
    from tspd.records import runs as registry
    carried = []
    for meta in registry.sidecars(book_runs):
        key = meta["key"]
        if meta.get("config", {}).get("model") == old or (staged_runs / f"{key}.json").exists():
            continue
        for f in registry.files(key, book_runs):
            shutil.copy2(f, staged_runs / f.name)
        carried.append(key)
    return carried


def move_staged(root: Path, name: str, old: str) -> list[str]:
    """Move ``results/staging/NAME``'s records in place of the book's (see the module's docstring), the book's runs
    of models other than OLD (the book's model until now) carried over (:func:`carry_runs`); returns what moved.
    Raises FileNotFoundError naming what the staging lacks (then nothing moves)."""
    parts = staged_parts(name)
    missing = [src for src, _ in parts if not (root / src).exists()]
    if missing:
        raise FileNotFoundError(f"the staging lacks {', '.join(missing)}: finish "
                                f"`bash scripts/stage_book.sh {name}` first")
    staged_runs, runs = parts[-1]
    carried = carry_runs(root / runs, root / staged_runs, old) if (root / runs).is_dir() else []
    for src, dest in parts:
        if (root / dest).is_dir():
            shutil.rmtree(root / dest)
        elif (root / dest).exists():
            (root / dest).unlink()
        shutil.move(root / src, root / dest)
    shutil.rmtree(root / "results" / "staging" / name)
    (variants_src, variants), *_ = parts
    rekeyed = rekey_runs(root / runs, f"<repo>/{variants_src}/", f"<repo>/{variants}/")
    return ([f"{src} -> {dest}" for src, dest in parts] + [f"{runs}: run {k} of another model kept" for k in carried]
            + [f"{runs}: run {r} (its weights moved)" for r in rekeyed])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("name", help="an embedded model of tspd/zoo")
    ap.add_argument("--staged", action="store_true", help="also move NAME's staged runs in place of the book's")
    args = ap.parse_args(argv)
    new = args.name
    if not (ZOO / new).is_dir():
        print(f"error: tspd/zoo/{new} is missing (NAME is an embedded model's name)")
        return 2
    book = json.loads(BOOK_MODEL.read_text())
    old = book["model"]
    if args.staged:
        try:
            print("\n".join(move_staged(ROOT, new, old)))
        except FileNotFoundError as e:
            print(f"error: {e}")
            return 2
    old_task, new_task = checkpoint_task(old), checkpoint_task(new)
    write_json(BOOK_MODEL, {**book, "model": new})
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        raw = path.read_text()
        nb = json.loads(raw)
        cell = next((c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])), None)
        if cell is None:
            continue
        source = "".join(cell["source"])
        switched = switched_cell(source, old, new, old_task, new_task)
        if switched != source:
            cell["source"] = switched.splitlines(keepends=True)
            path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + ("\n" if raw.endswith("\n") else ""))
            print(f"{path.relative_to(ROOT)}: parameters switched to {new}")
    print(f"DEFAULT_MODEL: {old} -> {new}")
    if args.staged:   # the staged runs are in place: the book's stages must read them back, not set them aside
        print('next: READ_BACK=1 STAGES="notebooks tables" bash scripts/ship_model.sh RUN_DIR [THREADS]')
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
