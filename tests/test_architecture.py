"""The package layout keeps its promises (book/architecture.md): every module of ``tspd`` has a layer,
imports only from its own layer or those below, no two modules import each other (directly or round
a circle), and each shared helper has one home."""
from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "tspd"
PYPROJECT = PACKAGE.parent / "pyproject.toml"   # its [tool.importlinter] contract names the layers, bottom last


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports(path: Path) -> list[str]:
    """The ``tspd`` modules a file imports, at module level or inside functions: ``from A import b``
    counts as an import of module ``A.b`` where that is a module, else of ``A``."""
    out = []
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:   # relative: resolved against this file's package
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            if base.split(".")[0] != "tspd":
                continue
            for alias in node.names:
                out.append(f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base)
        elif isinstance(node, ast.Import):
            out += [a.name for a in node.names if a.name.split(".")[0] == "tspd"]
    return out


GRAPH = {m: sorted(set(imports(p)) - {m}) for m, p in MODULES.items()}


def lint(config: Path) -> int:
    """import-linter's exit code for the contracts of ``config`` (0: every contract kept), without its cache."""
    from importlinter.cli import lint_imports
    return lint_imports(config_filename=str(config), no_cache=True, no_logo=True)


def test_no_module_imports_from_a_layer_above_its_own():
    assert lint(PYPROJECT) == 0


def test_the_contract_breaks_on_an_upward_import(tmp_path, monkeypatch):
    toy = tmp_path / "toy"
    toy.mkdir()
    (toy / "__init__.py").write_text("")
    (toy / "high.py").write_text("")
    (toy / "low.py").write_text("import toy.high\n")
    config = tmp_path / "contract.toml"
    config.write_text('[tool.importlinter]\nroot_package = "toy"\n[[tool.importlinter.contracts]]\nname = "toy"\n'
                      'type = "layers"\nlayers = ["toy.high", "toy.low"]\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    assert lint(config) == 1
    (toy / "low.py").write_text("")
    assert lint(config) == 0


def test_every_module_of_the_package_sits_in_a_layer():
    import tomllib
    layers = [name.strip() for layer in tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]["contracts"][0]["layers"]
              for name in layer.split(":")]
    outside = [m for m in MODULES if m != "tspd" and not any(m == n or m.startswith(n + ".") for n in layers)]
    assert outside == []


def strongly_connected(graph: dict[str, list[str]]) -> list[list[str]]:
    """Tarjan's algorithm: the components of ``graph`` with more than one module (each a circle)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, []):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_circles():
    assert strongly_connected(GRAPH) == []


def test_nothing_inside_imports_the_public_api():
    """``tspd/__init__.py`` re-exports from every layer: a module importing it would import upward."""
    assert [m for m, targets in GRAPH.items() if "tspd" in targets and m != "tspd"] == []


def test_the_check_sees_a_circle():
    assert strongly_connected({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}) == [["a", "b", "c"]]


def test_no_namespace_is_built_outside_the_command_line():
    """Options travel as typed values (RunConfig, EvalJob, DecodeConfig); argparse alone makes Namespaces."""
    built = [f"{m}:{n.lineno}" for m, p in MODULES.items() for n in ast.walk(ast.parse(p.read_text()))
             if isinstance(n, ast.Call) and getattr(n.func, "attr", getattr(n.func, "id", None)) == "Namespace"]
    assert built == []


def test_shared_helpers_have_one_home():
    defined = Counter()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.col_offset == 0:
                defined[node.name] += 1
    for name in ("device_name", "git_revision", "render_prompt", "wilson", "summarize", "decode_lengths",
                 "DecodeConfig", "RunConfig", "LMTrainConfig", "ControllerTrainConfig", "canonical", "Checkpoint",
                 "LoadedModel", "load_model", "controller_stem", "save_controller", "load_controller",
                 "controller_weights", "run", "result"):
        assert defined[name] <= 1, f"{name} is defined {defined[name]} times in tspd/"
    twice = {n for n, k in defined.items() if k > 1 and not n.startswith("_")}
    verbs = {"main", "add_arguments", "train", "fingerprint", "measure", "summary",  # each module's own
             "measure_checkpoint", "targets"}   # the regime and dynamics records' measure and bounds
    generated_task = {"prompt", "load_split", "make_problem", "iter_train", "right", "line_accuracy",
                      "template_accuracy",   # the generated tasks' module interface (arith, chain, roster)
                      "line", "parse_line", "line_fault", "fault"}   # and the day-line tasks' (roster, styled)
    probe_modules = {"run_probes"}   # tspd.training.probes and roster_probes: one interface
    records = {"load", "save", "load_dict", "load_all", "markdown", "path_of"}   # each record module's interface (tspd.records)
    allowed = verbs | generated_task | probe_modules | records
    assert twice <= allowed, sorted(twice - allowed)


def test_a_loaded_model_forwards_nothing_it_does_not_name():
    """A LoadedModel says by name what its callers read; anything else of the network is asked of ``.module``
    (nothing reaches the network unasked), and it calls like its network."""
    import torch

    from tspd.models.loading import load_model
    lm = load_model("tiny-arith")
    assert hasattr(lm.module, "state_dict") and not hasattr(lm, "state_dict")
    assert lm.eval() is lm and lm.device == torch.device("cpu") and sum(p.numel() for p in lm.parameters()) > 0


@pytest.mark.parametrize("name", ["tspd.decoding.controllers.weights", "tspd.models.loading"])
def test_homes_named_in_the_architecture_page_exist(name):
    assert name in MODULES


MAX_FUNCTION_LINES = 70   # issue 52: every function reads in one screen


def long_functions(source: str, limit: int = MAX_FUNCTION_LINES) -> list[tuple[str, int, int]]:
    """(name, line, length) of each function or method in ``source`` longer than ``limit`` lines, counted from
    its ``def`` line to its last line (docstring and nested functions included, decorators not); a method is
    named ``Class.method``."""
    tree = ast.parse(source)
    owner = {child: node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef) for child in node.body}
    return [(f"{owner[n]}.{n.name}" if n in owner else n.name, n.lineno, n.end_lineno - n.lineno + 1)
            for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and n.end_lineno - n.lineno + 1 > limit]


# Algorithm 1 is read top to bottom in one function, as LLaDA's generate is (issue 68): its helpers used once
# are folded in, so it alone may run past a screen, up to this many lines.


def test_no_function_is_longer_than_a_screen():
    long = [f"{MODULES[m].relative_to(PACKAGE.parent)}:{line} {name}: {length} lines"
            for m in MODULES for name, line, length in long_functions(MODULES[m].read_text())
            if (m, name) != ("tspd.decoding.loop", "generate")]
    assert long == [], f"over {MAX_FUNCTION_LINES} lines (split into helpers):\n" + "\n".join(long)


def test_the_length_check_counts_from_def_to_the_last_line():
    body = "".join(f"        x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES - 2))
    fits = f"class C:\n    @staticmethod\n    def f():\n        \"\"\"Doc.\"\"\"\n{body}"   # def + docstring + 68
    assert long_functions(fits) == []
    assert long_functions(fits + "        return 1\n") == [("C.f", 3, MAX_FUNCTION_LINES + 1)]
    assert long_functions(f"async def g():\n{body}\n        return 1\n") == [("g", 1, MAX_FUNCTION_LINES + 1)]


def command_table() -> list[str]:
    """The architecture page's command table, drawn from the registry (:data:`tspd.cli.COMMANDS`): a row per
    command, its module and what it does."""
    from tspd.cli import COMMANDS
    return ["| module | `python -m tspd ...` | what it does |", "|---|---|---|",
            *[f"| `{module}` | `{name}` | {text} |" for name, (module, text) in COMMANDS.items()]]


def test_the_architecture_page_lists_every_command_of_the_registry():
    """A command added to ``tspd.cli.COMMANDS`` without its row on the page fails here; the table to paste is in
    the message."""
    page = (PACKAGE.parent / "book" / "architecture.md").read_text().splitlines()
    start = page.index("| module | `python -m tspd ...` | what it does |")
    drawn = page[start:start + next(i for i, line in enumerate(page[start:] + [""]) if not line.startswith("|"))]
    assert drawn == command_table(), "the command table of book/architecture.md should read:\n" + "\n".join(command_table())


def test_every_command_module_lives_in_tspd_commands():
    from tspd.cli import COMMANDS
    for name, (module, _) in COMMANDS.items():
        assert module == "tspd.commands." + name.replace("-", "_") and module in MODULES, name


# the modules that may build command-line options (argparse's add_argument): the commands, the entry point, and
# the shared option helpers derived from config dataclasses (tspd.options) and DecodeConfig (tspd.decoding.config)
OPTION_HOMES = ("tspd/commands/", "tspd/cli.py", "tspd/options.py", "tspd/decoding/config.py")


def test_only_the_commands_build_options():
    calls = [f"{path.relative_to(PACKAGE.parent)}:{n}" for path in sorted(PACKAGE.rglob("*.py"))
             if not str(path.relative_to(PACKAGE.parent)).startswith(OPTION_HOMES)
             for n, line in enumerate(path.read_text().splitlines(), 1) if "add_argument(" in line]
    assert calls == [], "add_argument outside the commands (move it to tspd/commands/<command>.py):\n" + "\n".join(calls)


def test_every_gradable_generated_task_has_the_whole_interface():
    """tspd.tasks.generated's module interface, SUMMARY included (the book's prose names the task by it)."""
    from tspd.tasks.generated import GENERATED, MIX_ONLY
    interface = ("load_split", "iter_train", "prompt", "fingerprint", "extract_answer", "right", "line_accuracy",
                 "template_accuracy", "GEN_LENGTH", "BLOCK_LENGTH", "SPLIT_SIZES", "SUMMARY")
    missing = {name: [a for a in interface if not hasattr(module, a)]
               for name, module in GENERATED.items() if name not in MIX_ONLY}
    assert all(not m for m in missing.values()), missing
    assert all(isinstance(m.SUMMARY, str) and m.SUMMARY for n, m in GENERATED.items() if n not in MIX_ONLY)
