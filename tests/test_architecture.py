"""The package layout keeps its promises (book/architecture.md): layers import downwards only, and each
shared helper has one home."""
from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "tspd"
LAYERS = ["models", "decoding", "eval", "training", "book"]   # each may import those before it


def imports(path: Path) -> list[str]:
    """Absolute ``tspd.*`` modules a file imports, at module level or inside functions."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("tspd"):
            out.append(node.module)
        elif isinstance(node, ast.Import):
            out += [a.name for a in node.names if a.name.startswith("tspd")]
    return out


def layer_of(module: str) -> int | None:
    parts = module.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else None


@pytest.mark.parametrize("layer", LAYERS)
def test_no_package_imports_one_above_it(layer):
    upward = []
    for path in (PACKAGE / layer).rglob("*.py"):
        for module in imports(path):
            target = layer_of(module)
            if target is not None and target > LAYERS.index(layer):
                upward.append(f"{path.relative_to(PACKAGE)} imports {module}")
    assert not upward, upward


def test_shared_helpers_have_one_home():
    defined = Counter()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.col_offset == 0:
                defined[node.name] += 1
    for name in ("device_name", "git_revision", "render_prompt", "wilson", "summarize", "decode_lengths",
                 "DecodeConfig", "RunConfig", "LMTrainConfig", "ControllerTrainConfig", "load_split", "canonical"):
        assert defined[name] <= 1, f"{name} is defined {defined[name]} times in tspd/"
    twice = {n for n, k in defined.items() if k > 1 and not n.startswith("_")}
    verbs = {"main", "add_arguments", "run", "train", "evaluate", "fingerprint", "measure"}  # each module's own
    assert twice <= verbs, sorted(twice - verbs)


def test_the_harness_takes_its_model_seam_as_a_parameter():
    """No module global is swapped to drive an evaluation (the seam is an argument of run)."""
    source = (PACKAGE / "eval" / "experiments.py").read_text()
    tree = ast.parse(source)
    swaps = [n for n in ast.walk(tree) if isinstance(n, ast.Assign)
             and any(isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "evaluate"
                     for t in n.targets)]
    assert not swaps
    assert "seam=" in source
