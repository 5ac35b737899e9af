"""Each committed record has one owner (tspd.records): one module holds its path, writes it for its one command
and reads it for everyone; its typed reader reads the committed files, and its writer writes them byte for byte."""
from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from tspd import records
from tspd.bench import forward as bench_forward, loop as bench_loop, step as bench_step
from tspd.cli import COMMANDS
from tspd.models.loading import ZOO
from tspd.provenance import REPO_ROOT
from tspd.book import controller_table
from tspd.measures import cache_agreement, lmeval_example, regime
from tspd.records import fresh_clone, train_lm_evals, train_lm_probes
from tspd.models.loading import DEFAULT_MODEL
from tspd.records.files import write_json

REGISTRY = REPO_ROOT / "tspd" / "records" / "__init__.py"   # names every literal (the test's list)
SOURCES = [p for p in sorted((REPO_ROOT / "tspd").rglob("*.py")) if ZOO not in p.parents and p != REGISTRY] \
    + sorted(p for p in (REPO_ROOT / "scripts").rglob("*") if p.suffix in (".py", ".sh"))


def owner_file(module: str) -> Path:
    return Path(importlib.import_module(module).__file__)


def source_name(path: Path) -> str:
    """``tspd.measures.regime`` for a module, ``scripts/NAME`` for a script."""
    rel = path.relative_to(REPO_ROOT)
    return str(rel) if rel.parts[0] == "scripts" else ".".join(rel.with_suffix("").parts).removesuffix(".__init__")


def writer_uses(path: Path, owner: records.Owner) -> list[int]:
    """Lines of ``path`` that use one of ``owner``'s writers: a call or a reference (``bench_step.save`` handed
    on), through ``import`` of the module, ``from`` its package, or ``from`` the module itself. A shell
    script's embedded Python is read as text."""
    text = path.read_text()
    package, _, name = owner.module.rpartition(".")
    if path.suffix != ".py":
        return [i for i, line in enumerate(text.splitlines(), 1) for w in owner.writers if f"{name}.{w}(" in line]
    import ast
    tree = ast.parse(text)
    modules, functions = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {a.asname or a.name for a in node.names if a.name == owner.module}
        elif isinstance(node, ast.ImportFrom) and node.module == package:
            modules |= {a.asname or a.name for a in node.names if a.name == name}
        elif isinstance(node, ast.ImportFrom) and node.module == owner.module:
            functions |= {a.asname or a.name for a in node.names if a.name in owner.writers}
    return sorted(node.lineno for node in ast.walk(tree)
                  if (isinstance(node, ast.Attribute) and node.attr in owner.writers
                      and ast.unparse(node.value) in modules)
                  or (isinstance(node, ast.Name) and node.id in functions))


@pytest.mark.parametrize("kind", records.OWNERS)
def test_each_record_is_written_by_its_one_command_through_its_owner(kind):
    owner = records.OWNERS[kind]
    path = owner_file(owner.module)
    held = {p for p in SOURCES if any(lit in p.read_text() for lit in owner.literals)}
    assert held == {path}, f"{kind}: {owner.literals} outside {owner.module}: {sorted(str(p) for p in held - {path})}"
    users = {source_name(p) for p in SOURCES if p != path and writer_uses(p, owner)}
    assert users <= set(owner.callers), f"{kind}: {sorted(users - set(owner.callers))} write it, not only {owner.callers}"
    for caller in owner.callers:   # each named caller writes it (a stale name would let a new writer hide)
        assert caller in users, f"{kind}: {caller} no longer writes it"


def test_the_writer_check_sees_a_writer_however_it_is_imported(tmp_path):
    owner = records.OWNERS["regime"]
    for text in ("from tspd.measures import regime as r\nr.save(p, {})\n",
                 "import tspd.measures.regime\ntspd.measures.regime.save(p, {})\n",
                 "from tspd.measures.regime import save as keep\nrun(keep)\n"):
        (tmp_path / "m.py").write_text(text)
        assert writer_uses(tmp_path / "m.py", owner), text
    (tmp_path / "m.py").write_text("from tspd.measures import regime\nregime.load(p)\n")
    assert not writer_uses(tmp_path / "m.py", owner)


def test_the_records_package_lists_every_record_module():
    modules = {p.stem for p in (REPO_ROOT / "tspd" / "records").glob("*.py")} - {"__init__", "files", "device_files",
                                                                                "rows"}
    owned = {o.module.rpartition(".")[2] for o in records.OWNERS.values() if o.module.startswith("tspd.records.")}
    assert modules == owned
    for o in records.OWNERS.values():
        assert f":mod:`~{o.module}`" in records.__doc__ or f":mod:`{o.module}`" in records.__doc__


def test_the_commands_that_write_records_are_the_packages_and_scripts_do_not_patch_the_import_path():
    assert {"controller-table", "cache-agreement", "lmeval-example", "fill-records"} <= set(COMMANDS)
    assert [p.name for p in SOURCES if p.parent.name == "scripts" and "sys.path" in p.read_text()] == []
    for gone in ("controller_table.py", "cache_agreement.py", "lmeval_example.py", "fill_records.py",
                 "model_accuracy.py"):
        assert not (REPO_ROOT / "scripts" / gone).exists()


def same_bytes(path: Path, write) -> None:
    """``write(tmp)`` writes the bytes of the committed ``path``."""
    assert write().read_bytes() == path.read_bytes(), path


def test_the_controller_table(tmp_path):
    table = controller_table.load()
    rows = table.by_setting()
    assert ("vanilla", False, "none") in rows and table.n == 500 and len(rows) == len(table.rows)
    assert table.model == DEFAULT_MODEL   # the book's model's (a switch redoes it)
    assert controller_table.runs_dir() == REPO_ROOT / "results" / "controller_table"
    same_bytes(controller_table.PATH, lambda: controller_table.save(controller_table.load_dict(), tmp_path / "t.json"))
    assert controller_table.markdown(controller_table.load_dict()).count("\n") == len(table.rows) + 1


def test_the_cache_agreement(tmp_path):
    """The book model's, or, while its own run is being staged (scripts/stage_book.sh NAME 2 agreement), the
    previous book model's, which the README then names."""
    result = cache_agreement.load()
    staging = REPO_ROOT / "results" / "staging" / DEFAULT_MODEL / cache_agreement.samples_path().name
    assert result.n == 500 and set(result.by_controller()) == {"vanilla", "fast-dllm"}
    assert result.model == DEFAULT_MODEL or staging.exists(), f"{cache_agreement.PATH} is {result.model}'s"
    if result.model != DEFAULT_MODEL:
        assert f"still `{result.model}`'s" in (REPO_ROOT / "book" / "controllers.md").read_text()
    samples = cache_agreement.load_samples()
    assert {r["policy"] for r in samples} == set(result.by_controller()) and len(samples) >= sum(r["n"] for r in result.rows)
    same_bytes(cache_agreement.PATH, lambda: cache_agreement.save(cache_agreement.load_dict(), tmp_path / "c.json"))


def test_the_lmeval_example(tmp_path):
    rec = lmeval_example.load()
    assert set(rec.runs) == {"lm_eval", "tspd.lmeval", "tspd eval"} and rec.limit == 50
    assert rec.model == DEFAULT_MODEL and all(r.seconds > 0 for r in rec.runs.values())   # the book's model's
    same_bytes(lmeval_example.PATH, lambda: lmeval_example.save(rec, tmp_path / "l.json"))


def test_the_fresh_clone_times(tmp_path):
    rec = fresh_clone.load()
    assert rec.tests_seconds > 0 and rec.command == "bash scripts/time_fresh_clone.sh"
    same_bytes(fresh_clone.PATH, lambda: fresh_clone.save(rec, tmp_path / "f.json"))
    newer = fresh_clone.FreshClone(**{**rec.to_dict(), "venv_seconds": 60, "shared": False})
    assert list(newer.to_dict()).index("venv_seconds") == list(newer.to_dict()).index("load_average_before") + 1


def test_the_bench_files(tmp_path):
    found = bench_loop.names()
    assert found and all(n.startswith("loop-") for n in found)
    for name in found:
        rec = bench_loop.load(name)
        assert rec.target_groups() and rec.name == name
        stored = json.loads((bench_loop.DIRECTORY / name).read_text())
        written = bench_loop.save(stored, str(tmp_path / "loop-{device}.json"))
        assert written.name == name and written.read_bytes() == (bench_loop.DIRECTORY / name).read_bytes()
    gpu = bench_step.load("NVIDIA-H200")
    assert gpu.batch(1)["batch"] == 1 and "H200" in gpu.device
    for path, stored in bench_step.load_all():
        same_bytes(path, lambda: write_json(tmp_path / path.name, stored, indent=2))
    forward = bench_forward.load_all()
    assert forward
    for path, stored in forward:
        same_bytes(path, lambda: bench_forward.save(stored, str(tmp_path / "forward-{device}.json")))
        rows = bench_forward.variant_rows(stored)
        assert [r["variant"] for r in rows][:2] == ["eager", "fused"] and rows[0]["max |logit diff|"] == 0
        assert {r["kind"] for r in bench_forward.kind_rows(stored)} >= {"matmul", "attention"}


@pytest.mark.parametrize("model", sorted(p.name for p in ZOO.iterdir() if (p / "evals.json").is_file()))
def test_a_checkpoints_own_records(model, tmp_path):
    rows = train_lm_evals.load(model)
    acc = train_lm_evals.vanilla_accuracy(model)
    assert rows is not None      # a sweep not yet measured is [] (tiny-roster's)
    assert acc is None if not rows else acc.source == f"tspd/zoo/{model}/evals.json"
    assert all(r["tokens_per_step"] > 1 for r in train_lm_evals.vanilla_steps(model))
    same_bytes(ZOO / model / "evals.json", lambda: train_lm_evals.save(tmp_path, rows))
    probes = train_lm_probes.load(model)
    if probes:
        same_bytes(ZOO / model / "probes.json", lambda: train_lm_probes.save(tmp_path, probes))
    rec = regime.load(model)
    if rec is not None:
        assert rec.path == ZOO / model / "regime.json" and rec.rows and rec.gen_length > rec.block_length > 0
    assert train_lm_evals.load("/no/such/model") is None and regime.load(tmp_path) is None


def test_one_jsonl_reader_drops_a_torn_last_line_only_when_told(tmp_path):
    """tspd.records.files.read_jsonl: blank lines skipped, a bad line one line naming it, ``partial_ok`` drops (and
    cuts) a last line without its newline, gzip read alike; append_jsonl writes whole lines."""
    import gzip

    from tspd.records.files import append_jsonl, read_jsonl
    path = tmp_path / "x.jsonl"
    append_jsonl(path, [{"id": 1}, {"id": 2}])
    path.write_text(path.read_text() + "\n" + '{"id": 3')
    assert read_jsonl(path, partial_ok=True) == [{"id": 1}, {"id": 2}] and path.read_text().endswith("}\n\n")
    path.write_text(path.read_text() + '{"id": 3}')                  # a hand-written file without its last newline
    assert read_jsonl(path)[-1] == {"id": 3}
    with pytest.raises(KeyError, match=r"x.jsonl:2: bad \(row 2\)"):
        read_jsonl(path, error=KeyError, check=lambda r: "bad (row 2)" if r["id"] == 2 else None)
    (tmp_path / "y.jsonl").write_text('{"id": 1}\nnope\n')
    with pytest.raises(ValueError, match=r"y.jsonl:2: not valid JSON"):
        read_jsonl(tmp_path / "y.jsonl")
    (tmp_path / "z.jsonl.gz").write_bytes(gzip.compress(b'{"a": 1}\n'))
    assert read_jsonl(tmp_path / "z.jsonl.gz") == [{"a": 1}] and read_jsonl(tmp_path / "no.jsonl", missing_ok=True) == []


def test_markdown_tables_are_written_one_way():
    from tspd import markdown
    assert markdown.table(["a", "b"], [[1, ""], ["x", 2.5]]) == ["| a | b |", "|---|---|", "| 1 |  |", "| x | 2.5 |"]
    hand_built = [p.name for p in SOURCES if p.suffix == ".py" and "|---" in p.read_text() and p.name != "markdown.py"]
    assert hand_built == [], f"write Markdown tables with tspd.markdown.table: {hand_built}"


def test_a_generate_calls_cost_beyond_its_forwards_by_wall_clock():
    """bench_step.beyond_forwards: a call's seconds against its forwards at the row's own step times."""
    row = {"gen": 64, "block": 32, "full_forward_fast": {"seconds": 0.010}, "dual_step_fast": {"seconds": 0.002},
           "generate": {"vanilla/dual/fast": {"nfe": 64, "seconds_per_nfe": (2 * 0.010 + 62 * 0.002) * 1.05 / 64},
                        "vanilla/none/fast": {"nfe": 64, "seconds_per_nfe": 0.010},
                        "vanilla/dual": {"nfe": 64, "seconds_per_nfe": 0.004},
                        "vanilla/prefix/fast": {"nfe": 64, "seconds_per_nfe": 0.004}}}
    assert bench_step.beyond_forwards(row, "vanilla/dual/fast") == pytest.approx(0.05)
    assert bench_step.beyond_forwards(row, "vanilla/none/fast") == pytest.approx(0.0)
    assert bench_step.beyond_forwards(row, "vanilla/dual") is None          # eager: its first steps write the cache
    assert bench_step.beyond_forwards(row, "vanilla/prefix/fast") is None   # the prefix window shrinks


def test_the_goals_judge_the_faster_full_forward_against_the_cards_goals():
    """bench_step.goal_rows: the fast path's full forward where it is faster, the H200's goals on an H200, and
    no rows for another shape or batch."""
    row = {"batch": 1, "gen": 64, "block": 32, "full_forward": {"seconds": 0.030, "floor_seconds": 0.021},
           "full_forward_fast": {"seconds": 0.025, "floor_seconds": 0.021}, "dual_step": {"seconds": 0.009}}
    result = {"shape": "llada-8b", "device": "NVIDIA H200", "rows": [row, dict(row, batch=8)]}
    got = {r["measure"]: r for r in bench_step.goal_rows(result)}
    assert got["full forward (ms)"]["measured"] == pytest.approx(25.0) and got["full forward (ms)"]["met"]
    assert got["full forward, % of its floor"]["measured"] == pytest.approx(84.0)
    assert not got["dual-cache step (ms)"]["met"] and got["controller + CE, % of a forward"]["met"] is None
    assert "at most 28" in bench_step.goal_rows(dict(result, device="NVIDIA H100"))[1]["goal"]
    assert bench_step.goal_rows(dict(result, shape="tiny")) == []


def test_a_checkpoints_probes_come_from_its_final_evaluation_else_its_curves_last_point(tmp_path):
    """train_lm_probes.final: probes.json where train-lm wrote one; a run without a final evaluation (tiny-roster's)
    shows its learning curve's last point, and the probe table counts problems as whole numbers."""
    from tspd.training.lm.outputs import probe_table
    (tmp_path / "eval_log.csv").write_text("step,n,probe_chore,probe_pair,probe_day,one_pass_lines\n"
                                           "10,64,0.5,0.25,1.0,0.0\n20,64,1.0,0.5,1.0,0.125\n")
    probed, source = train_lm_probes.final(tmp_path)
    assert source == tmp_path / "eval_log.csv" and probed["step"] == 20 and probed["probe_pair"] == 0.5
    table = "\n".join(probe_table(probed, "roster"))
    assert "On the first 64 test problems" in table and "| two chores of a line masked | 50% |" in table
    train_lm_probes.save(tmp_path, {"n": 8, "cf_n": 3})
    assert train_lm_probes.final(tmp_path) == ({"n": 8, "cf_n": 3}, tmp_path / "probes.json")
    assert probe_table({}, "roster") == ["No probes are recorded for this checkpoint."]
    (tmp_path / "bare").mkdir()
    assert train_lm_probes.final(tmp_path / "bare") == ({}, None)


def test_a_record_measured_by_batch_resumes_keeps_a_complete_one_and_remeasures_a_changed_one(tmp_path):
    """measure_by_batch: a run cut after its first batch resumes there (no problem measured twice, the revision of
    the added rows noted); a complete record is returned as stored; a changed setting measures every row again."""
    from tspd.records.files import measure_by_batch
    path, seen = tmp_path / "r.json", []

    def measure(chunk):
        seen.extend(chunk)
        if len(seen) > 2 and cut:
            raise KeyboardInterrupt
        return [{"id": p, "v": p * p} for p in chunk]

    def run(meta):                                # a summary that needs rows, as the CE audit's does
        return measure_by_batch(path, meta, ("setting",), [1, 2, 3, 4], 2, measure,
                                lambda rows: {"mean": sum(r["v"] for r in rows) / len(rows)}, "test", log=lambda m: None)
    meta = {"command": "c", "git": "a", "device": "cpu", "setting": 1}
    cut = True
    try:
        run(meta)
    except KeyboardInterrupt:
        pass
    cut = False
    seen.clear()
    record = run(dict(meta, git="b", command="c --n 4"))
    assert seen == [3, 4] and record["mean"] == 7.5 and record["git"] == "a; rows added at b"
    assert record["command"] == "c --n 4"          # the command that asks for every row, not the cut one
    seen.clear()
    assert run(dict(meta, git="c")) == record and not seen
    assert run(dict(meta, setting=2))["git"] == "a" and seen == [1, 2, 3, 4]


def test_a_record_written_into_a_missing_directory_makes_it(tmp_path):
    """A run's first save (an own-rounds state under a fresh --out) must not fail on a folder nobody made yet."""
    from tspd.records.files import write_text_atomic
    path = write_text_atomic(tmp_path / "new" / "deeper" / "state.txt", "round 0")
    assert path.read_text() == "round 0" and [p.name for p in path.parent.iterdir()] == ["state.txt"]
