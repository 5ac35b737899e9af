"""Project metadata stays consistent: environment.yml mirrors pyproject.toml; the CLI lists its commands."""
from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def test_environment_yml_mirrors_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = set(project["dependencies"])
    for name, deps in project["optional-dependencies"].items():
        wanted |= {d for d in deps if not d.startswith("tspd[")}
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    listed = {p.replace(" ", "") for p in pip if not p.startswith("-e")}
    assert listed == {w.replace(" ", "") for w in wanted}
    assert "-e .[all]" in pip


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci/run").read_text()
    assert "bash scripts/test.sh" in readme and "bash scripts/test.sh" in ci
    assert "bash scripts/build_book.sh" in readme


def test_cli_lists_every_command():
    out = subprocess.run([sys.executable, "-m", "tspd", "--help"], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0
    for cmd in ("generate", "eval", "grade", "train-lm", "collect-traces", "train-controller", "bench-step"):
        assert cmd in out.stdout


def test_threads_flag_sizes_torchs_pool(monkeypatch):
    import torch

    from tspd import cli
    seen = {}
    monkeypatch.setattr(torch, "set_num_threads", lambda n: seen.setdefault("n", n))
    monkeypatch.setattr("tspd.commands.generate.main", lambda args: 0)
    assert cli.main(["generate", "--prompt", "x", "--threads", "1"]) == 0 and seen == {"n": 1}
    with pytest.raises(SystemExit) as e:
        cli.main(["generate", "--prompt", "x", "--threads", "0"])
    assert e.value.code == 2


def test_threads_flag_is_undone_after_the_command(monkeypatch):
    import torch

    from tspd import cli
    seen = []
    monkeypatch.setattr("tspd.commands.generate.main", lambda args: seen.append(torch.get_num_threads()) or 0)
    before = torch.get_num_threads()
    assert cli.main(["generate", "--prompt", "x", "--threads", str(before + 1)]) == 0
    assert seen == [before + 1] and torch.get_num_threads() == before


def test_every_option_has_help():
    import argparse
    import importlib

    from tspd.cli import COMMANDS
    for name, (module, _) in COMMANDS.items():
        p = argparse.ArgumentParser()
        importlib.import_module(module).add_arguments(p)
        bare = [a.option_strings[0] for a in p._actions if a.option_strings and a.option_strings[0] != "-h"
                and not (a.help or "").strip()]
        assert not bare, f"{name}: options without help: {bare}"


def test_help_states_each_default_once():
    import argparse
    import importlib

    from tspd.cli import COMMANDS, HelpFormatter
    fmt = HelpFormatter("tspd")
    for name, (module, _) in COMMANDS.items():
        p = argparse.ArgumentParser()
        importlib.import_module(module).add_arguments(p)
        for a in p._actions:
            text = (fmt._get_help_string(a) or "").replace("%(default)s", "X")
            assert text.lower().count("default") <= 1, f"{name} {a.option_strings}: {text}"
            assert "(default: None)" not in text
