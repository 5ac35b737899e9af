"""A stored record's command runs from any clone: paths inside the repository are written relative to it."""
from tspd.provenance import REPO_ROOT, invoked, relative_arg


def test_a_path_inside_the_repository_is_written_relative_to_it():
    assert relative_arg(str(REPO_ROOT / "runs" / "x" / "regime.json")) == "runs/x/regime.json"
    assert relative_arg(f"--out={REPO_ROOT / 'runs' / 'y.json'}") == "--out=runs/y.json"


def test_other_arguments_stay_as_given():
    assert relative_arg("/elsewhere/model") == "/elsewhere/model"
    assert relative_arg("--n") == "--n" and relative_arg("tiny-leaning") == "tiny-leaning"


def test_the_command_is_named_once_whether_or_not_argv_holds_it():
    out = str(REPO_ROOT / "runs" / "r.json")
    want = "python -m tspd regime --model tiny-leaning --out runs/r.json"
    assert invoked("regime", ["tspd/__main__.py", "regime", "--model", "tiny-leaning", "--out", out]) == want
    assert invoked("regime", ["prog", "--model", "tiny-leaning", "--out", out]) == want
    assert invoked("regime", ["prog"]) == "python -m tspd regime"
