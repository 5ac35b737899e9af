"""One name per decoding (issue 52, item 2): :mod:`tspd.decoding.names` spells every (controller, CE, cache)
setting that a table, bench file, record or figure shows, each stored spelling is what it makes, and no
other module builds a decoding's name or splits one to recover the settings."""
from __future__ import annotations

import ast
import json
import re
import time
from pathlib import Path

import pytest

from tspd import DecodeConfig
from tspd.bench import step as bench_step
from tspd.bench.step import TIMED, timed_decodings
from tspd.bench.loop import OVERHEAD_BUDGETS
from tspd.book import controller_table, pareto
from tspd.decoding.names import by_slug, display_name, slug
from tspd.eval.experiments import RunConfig
from tspd.measures.regime import RegimeConfig, decodings
from tspd.validate import UsageError

ROOT = Path(__file__).resolve().parents[1]
OWNER = ROOT / "tspd" / "decoding" / "names.py"


def _json(path: Path) -> dict:
    """``path``'s JSON; read again while a record being measured (``python -m tspd regime``) is half written."""
    for wait in (0.5, 1.0, 2.0):
        try:
            return json.loads(path.read_text())
        except json.JSONDecodeError:
            time.sleep(wait)
    return json.loads(path.read_text())


# ---- the names ------------------------------------------------------------------------------------
def test_each_register_names_one_decoding():
    ours = DecodeConfig(controller="tspd", ce=True, cache="dual")
    assert (ours.label, ours.slug(), ours.slug("_"), ours.slug("|")) == (
        "TSPD + CE / dual", "tspd+ce/dual", "tspd_ce_dual", "tspd|ce=on|cache=dual")
    assert (display_name("vanilla"), display_name("fast-dllm", cache="none"), display_name("credit", True)) == (
        "vanilla", "Fast-dLLM / none", "Credit Decoding + CE")
    assert (slug("fast-dllm"), slug("fast-dllm", sep="_"), slug("vanilla", cache="none", sep="_")) == (
        "fast-dllm", "fast", "vanilla")
    assert slug("vanilla", False, "none", sep="|") == "vanilla|ce=off|cache=none"
    with pytest.raises(ValueError, match="separator"):
        slug("tspd", True, sep="-")
    run = RunConfig(model="m", task="arith", decode=DecodeConfig(controller="fast-dllm", ce=True, cache="dual", gen_length=128,
                                                                  block_length=32))
    assert run.label == "arith/fast-dllm+ce/dual/L128"


def test_a_stored_key_is_looked_up_among_the_names():
    for sep in ("/", "_", "|"):
        table = by_slug(sep)
        assert all(slug(*settings, sep=sep) == name for name, settings in table.items())
    assert by_slug()["tspd+ce/dual"] == ("tspd", True, "dual") and by_slug("_")["fast_prefix"] == ("fast-dllm", False, "prefix")
    assert timed_decodings("vanilla,tspd+ce") == [("vanilla", False), ("tspd", True)]
    with pytest.raises(UsageError, match="unknown tspd-ce"):
        timed_decodings("tspd-ce")


# ---- every stored spelling is the owner's ---------------------------------------------------------
@pytest.mark.parametrize("path", sorted((ROOT / "results" / "bench").glob("loop-*.json")), ids=lambda p: p.name)
def test_bench_loop_files(path):
    stored = _json(path)
    assert stored["targets"] == {slug(p, ce): t for (p, ce), t in OVERHEAD_BUDGETS.items()}


@pytest.mark.parametrize("path", sorted((ROOT / "results" / "gpu").glob("*.json")), ids=lambda p: p.name)
def test_bench_step_files(path):
    stored = _json(path)
    assert [slug(*d) for d in TIMED] == ["vanilla", "fast-dllm", "tspd+ce"]   # --controllers' default, as run
    for row in stored["rows"]:
        for part in ("generate", "parity"):
            entries = row.get(part, {})
            found = bench_step.decoding_entries(entries)
            assert set(entries) - set(found) <= {"dual_step_max_abs_logit_diff"}
            assert all(bench_step.entry_key(*settings) == key for key, settings in found.items())
    keys = [k for row in stored["rows"] for k in row.get("generate", {})]
    assert not keys or bench_step.entry_key("tspd", True, "dual", fast=True) in keys


def test_controller_table():
    stored = _json(ROOT / "results" / "embedded_controllers.json")
    assert stored["baseline"] == slug(*controller_table.BASELINE, sep="|") == "vanilla|ce=off|cache=none"
    assert {r["controller"] for r in stored["rows"]} == set(controller_table.CONTROLLERS)


@pytest.mark.parametrize("path", sorted((ROOT / "tspd" / "zoo").glob("*/regime.json")), ids=lambda p: p.parent.name)
def test_regime_records(path):
    """Every stored row is a row of the plan, in its order; the decoders' rows are named by their decodings."""
    from tspd.measures.regime import threshold_row
    stored = _json(path)
    plan = decodings(RegimeConfig.from_dict(stored["config"]), stored["gen_length"], stored["block_length"])
    names = [name for name, _, _ in plan] + ["vanilla_short"]
    assert [n for n in names if n in stored["rows"]] == list(stored["rows"])
    named = {name: decode for name, decode, _ in plan if decode.steps is None and decode.gen_length == stored["gen_length"]}
    assert all(decode.slug("_") == name or name == threshold_row(decode.controller_kwargs.get("threshold", 0))
               for name, decode in named.items())   # Fast-dLLM at a lower threshold: fast70, fast50
    assert {"vanilla", "fast", "vanilla_prefix", "fast_prefix"} <= set(stored["rows"]) <= set(names)
    if stored["config"]["tspd_ce"]:
        assert {"tspd_ce", "tspd_ce_prefix", "tspd_ce_dual"} <= set(named)


def test_pareto_record():
    stored = _json(pareto.RECORD)
    sweeps = [("fast-dllm", False), ("credit", False), ("tspd", True), ("learn2pd", False), ("prophet", False),
              ("joint", True)]
    for task in stored["tasks"].values():
        caches = {k.rsplit(" / ", 1)[1] for k in task}   # the test reads the stored keys; the code never does
        made = {pareto.name(display_name(p, ce), c) for p, ce in sweeps for c in caches}
        assert set(task) == made | {pareto.name("Vanilla", c) for c in caches}
    assert pareto.REFERENCE == "TSPD + CE"


# ---- nothing else builds or splits a name ---------------------------------------------------------
# string pieces that spell a decoding: a slug's CE mark, the display name's CE suffix, a controller-table row's
# parts, a regime row's name
SPELLINGS = re.compile(r"\+ce|^\s*\+ ?CE\s*$|\|ce=|\|cache=|tspd_ce|\w_ce_(none|prefix|dual)")
# what a name would be split at (``tspd+ce/dual``, ``TSPD + CE / dual``), or matched by: a CE mark, a cache part,
# a controller's slug before its cache (``vanilla/``)
SPLITTERS, SPLIT_AT = {"split", "rsplit", "partition", "rpartition"}, re.compile(r"[/+]")
AFFIXES, AFFIX = {"removesuffix", "removeprefix", "endswith", "startswith"}, re.compile(
    r"\+|\s/\s|[/_|](none|prefix|dual)\b|^[a-z0-9-]+/$")


def _docstrings(tree: ast.AST) -> set[int]:
    return {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}


def name_handling(source: str) -> list[str]:
    """Where ``source`` spells a piece of a decoding's name, or splits a string at a name's separator."""
    tree = ast.parse(source)
    docs, found = _docstrings(tree), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs \
                and SPELLINGS.search(node.value):
            found.append(f"{node.lineno}: {node.value!r}")
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            method, at = getattr(node.func, "attr", None), node.args[0].value
            if (method in SPLITTERS and SPLIT_AT.search(at)) or (method in AFFIXES and AFFIX.search(at)):
                found.append(f"{node.lineno}: .{method}({at!r})")
    return found


def _sources() -> dict[str, str]:
    """Every module of the package but the owner (the zoo holds no code), the scripts, the notebooks' code (not
    their parameter cells: values a reader passes on, such as bench-step's ``--controllers`` names)."""
    out = {str(p.relative_to(ROOT)): p.read_text() for p in sorted((ROOT / "tspd").rglob("*.py")) if p != OWNER}
    out.update({str(p.relative_to(ROOT)): p.read_text() for p in sorted((ROOT / "scripts").rglob("*.py"))})
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        code = ["".join(c["source"]) for c in _json(nb)["cells"] if c["cell_type"] == "code"
                and "parameters" not in c.get("metadata", {}).get("tags", [])]
        out[str(nb.relative_to(ROOT))] = "\n\n".join(c for c in code if not c.lstrip().startswith(("%", "!")))
    return out


def test_no_module_but_the_owner_builds_or_splits_a_decodings_name():
    found = {path: hits for path, source in _sources().items() if (hits := name_handling(source))}
    assert found == {}, "spell or look up names through tspd.decoding.names (DecodeConfig.label / slug, by_slug)"


@pytest.mark.parametrize("line", [
    'name, ce = policy.removesuffix("+ce"), policy.endswith("+ce")',           # bench-step's policies, before
    """label = f"{policy}{'+ce' if ce else ''}/{cache}\"""",                    # RunConfig.label, before
    """label = f"{row['policy']}{' + CE' if row['ce'] else ''} / {row['cache']}\"""",   # the loop page's label
    "policies = [k.split('/')[0] for k in row['parity']]",                     # prose's bench-step parity
    'controller, _, cache = sweep.rpartition(" / ")',                           # the Pareto page's names
    """row = f"{ctrl}|ce={'on' if ce else 'off'}|cache={cache}\"""",            # the controller table's key
    'rows = [f"tspd_ce_{cache}" for cache in caches]',                          # the regime's row names
])
def test_the_check_sees_how_names_were_built_and_split(line):
    assert name_handling(line)


def test_the_check_lets_prose_and_other_strings_be():
    fine = '''def f(args, x):
    """TSPD + CE composes with the dual cache (+ce: with CE)."""
    print(f"controller + CE take {x} % of a forward; TSPD + CE is faster")
    return args.tspd_ce, args.batch.split(","), REGISTRY["x"].split(":"), "--tspd-ce"
'''
    assert name_handling(fine) == []


def test_the_controller_is_called_controller_in_code_and_on_the_command_line():
    """Issue 68, step 5: one word for the thing that decides what a step commits. No name in the package says
    "policy" (stored records keep the key's old spelling, as string keys), and no command takes --policy."""
    import io
    import tokenize
    import argparse
    import importlib
    from tspd import cli
    names = {(str(p.relative_to(ROOT)), t.string) for p in (ROOT / "tspd").rglob("*.py")
             for t in tokenize.generate_tokens(io.StringIO(p.read_text()).readline)
             if t.type == tokenize.NAME and "polic" in t.string.lower()}
    assert names == set()
    for command, (module, _) in cli.COMMANDS.items():
        parser = argparse.ArgumentParser()
        importlib.import_module(module).add_arguments(parser)
        options = {o for a in parser._actions for o in a.option_strings}
        assert not {o for o in options if "polic" in o}, command
        assert "--controller" in options or command not in ("generate", "eval", "collect-traces"), command
