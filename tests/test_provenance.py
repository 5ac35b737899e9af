"""Revision and device strings: the provenance every stored result carries."""
from __future__ import annotations

import subprocess

import torch

from tspd import provenance

from conftest import TEST_MODEL


def test_revision_marks_uncommitted_changes(tmp_path, monkeypatch):
    def git(*args):
        return subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "f.txt").write_text("a")
    git("add", "f.txt")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    monkeypatch.setattr(provenance, "REPO_ROOT", tmp_path)
    clean = provenance.git_revision()
    assert clean and " " not in clean
    (tmp_path / "scratch.py").write_text("x = 1")                      # untracked: not part of the code
    assert provenance.git_revision() == clean
    (tmp_path / "f.txt").write_text("b")
    assert provenance.git_revision() == clean + " + uncommitted"


def test_revision_outside_a_clone_is_none(tmp_path, monkeypatch):
    monkeypatch.setattr(provenance, "REPO_ROOT", tmp_path)
    assert provenance.git_revision() is None


def test_cpu_name_states_threads():
    n = torch.get_num_threads()
    assert provenance.device_name("cpu").endswith(f"({n} thread{'s' if n != 1 else ''})")


def test_runs_with_repository_paths_have_the_same_key_in_every_clone(tmp_path, monkeypatch):
    from tspd.eval.experiments import RunConfig
    keys = []
    for clone in ("a", "b"):
        root = tmp_path / clone
        monkeypatch.setattr(provenance, "REPO_ROOT", root)
        weights = str(root / "results" / "variants" / "tspd-0123")
        assert provenance.portable({"weights": weights, "n": 3}) == {"weights": "<repo>/results/variants/tspd-0123",
                                                                     "n": 3}
        keys.append(RunConfig(model=TEST_MODEL, controller="tspd", controller_kwargs={"weights": weights}, gen_length=64,
                              block_length=32).key)
    assert keys[0] == keys[1]
    elsewhere = RunConfig(model=TEST_MODEL, controller="tspd", controller_kwargs={"weights": "/elsewhere/tspd-0123"},
                          gen_length=64, block_length=32)
    assert provenance.portable({"weights": "/elsewhere/tspd-0123"}) == {"weights": "/elsewhere/tspd-0123"}
    assert elsewhere.key != keys[0]
    assert provenance.local(provenance.portable({"weights": weights})) == {"weights": weights}
    stored = RunConfig(model=TEST_MODEL, controller="tspd", controller_kwargs={"weights": "<repo>/results/variants/tspd-0123"},
                       gen_length=64, block_length=32)
    assert stored.controller_kwargs == {"weights": weights} and stored.key == keys[1]


# A stored record's command runs from any clone: paths inside the repository are written relative to it.
def test_a_path_inside_the_repository_is_written_relative_to_it():
    assert provenance.relative_arg(str(provenance.REPO_ROOT / "runs" / "x" / "regime.json")) == "runs/x/regime.json"
    assert provenance.relative_arg(f"--out={provenance.REPO_ROOT / 'runs' / 'y.json'}") == "--out=runs/y.json"


def test_other_arguments_stay_as_given():
    assert provenance.relative_arg("/elsewhere/model") == "/elsewhere/model"
    assert provenance.relative_arg("--n") == "--n" and provenance.relative_arg("tiny-leaning") == "tiny-leaning"


def test_the_command_is_named_once_whether_or_not_argv_holds_it():
    out = str(provenance.REPO_ROOT / "runs" / "r.json")
    want = "python -m tspd regime --model tiny-leaning --out runs/r.json"
    assert provenance.invoked("regime", ["tspd/__main__.py", "regime", "--model", "tiny-leaning", "--out", out]) == want
    assert provenance.invoked("regime", ["prog", "--model", "tiny-leaning", "--out", out]) == want
    assert provenance.invoked("regime", ["prog"]) == "python -m tspd regime"
