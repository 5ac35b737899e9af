"""Every bad input gets one line naming the problem and the fix, exit 2, no traceback, nothing written."""
from __future__ import annotations

import json
import shutil

import pytest
import torch

from tspd import cli
from tspd.models.loading import resolve_path

from conftest import TEST_MODEL

ZOO = resolve_path(TEST_MODEL)


@pytest.fixture(scope="module")
def broken(tmp_path_factory):
    """Checkpoint directories that are wrong in one way each."""
    root = tmp_path_factory.mktemp("broken")
    made = {"empty": root / "empty"}
    made["empty"].mkdir()
    for name in ("truncated", "alien", "no-controllers", "old-task", "no-task"):
        made[name] = root / name
        shutil.copytree(ZOO, made[name], ignore=shutil.ignore_patterns("controllers"))
    weights = made["truncated"] / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    for name, change in (("alien", {"model_type": "gpt9"}), ("old-task", {"tspd_task": {"fingerprint": "000000000000"}})):
        cfg = json.loads((made[name] / "config.json").read_text())
        cfg.update({k: v if k != "tspd_task" else {**cfg["tspd_task"], **v} for k, v in change.items()})
        (made[name] / "config.json").write_text(json.dumps(cfg))
    cfg = json.loads((made["no-task"] / "config.json").read_text())
    del cfg["tspd_task"]                                   # a checkpoint train-lm did not make
    (made["no-task"] / "config.json").write_text(json.dumps(cfg))
    made["out_dir"] = root / "a-directory"
    made["out_dir"].mkdir()
    made["a_file"] = root / "a-file"
    made["a_file"].write_text("not a directory")
    return made


GENERATE = [   # (id, extra arguments, words the one line must contain); a --model among them wins over TEST_MODEL
    ("missing model", ["--model", "/no/such/model"], "no model directory"),
    ("no config.json", ["--model", "{empty}"], "config.json is missing"),
    ("unknown architecture", ["--model", "{alien}"], "model_type 'gpt9' is not supported"),
    ("truncated shard", ["--model", "{truncated}"], "model.safetensors: cannot be read"),
    ("length not a multiple", ["--gen-length", "50", "--block-length", "32"], "not a multiple of block_length"),
    ("unknown controller", ["--controller", "nosuch"], "unknown controller 'nosuch'"),
    ("threshold out of range", ["--controller", "fast-dllm", "--threshold", "1.5"], "threshold must be in (0, 1]"),
    ("threshold for vanilla", ["--controller", "vanilla", "--threshold", "0.9"], "takes no threshold"),
    ("joint bound out of range", ["--controller", "joint", "--controller-arg", "bound=2"], "bound must be in (0, 1]"),
    ("egp is an oracle", ["--controller", "egp"], "collect-traces --controller egp"),
    ("bad dtype", ["--dtype", "float64"], "unknown dtype 'float64'"),
    ("empty prompt", ["--prompt", "  "], "empty prompt"),
    ("prompt too long", ["--prompt", "x" * 600], "exceeds the model's 512"),
    ("no controller", ["--model", "{no-controllers}", "--controller", "tspd"], "train-controller"),
    ("weights for a fixed controller", ["--controller-weights", TEST_MODEL],
     "--controller-weights is for the learned controllers"),
]
EVAL = [   # (id, extra arguments, words): a --model among them wins over the TEST_MODEL given first
    ("out is a directory", ["--out", "{out_dir}"], "is a directory"),
    ("negative limit", ["--limit", "-1"], "--limit must be >= 0"),
    ("out under a file", ["--out", "{a_file}/results.jsonl"], "cannot write --out"),
    ("task version", ["--model", "{old-task}"], "another version of tspd.tasks.arith"),
    ("threshold for vanilla", ["--threshold", "0.9"], "takes no threshold"),
    ("weights for a fixed controller", ["--controller-weights", TEST_MODEL],
     "--controller-weights is for the learned controllers"),
]

OTHER = [   # (id, the whole command line, words): the other commands, refused before any measuring
    ("bench-step length", ["bench-step", "--device", "cpu", "--gen", "50", "--block", "32"],
     "--gen 50 is not a multiple"),
    ("bench-step batch", ["bench-step", "--device", "cpu", "--batch", "one"], "--batch takes comma-separated integers"),
    ("bench-step caches", ["bench-step", "--device", "cpu", "--caches", "full"], "--caches takes none, prefix, dual"),
    ("bench-loop ce", ["bench-loop", "--model", TEST_MODEL, "--ce", "maybe"], "--ce takes off, on or off,on"),
    ("bench-loop repeats", ["bench-loop", "--model", TEST_MODEL, "--repeats", "0"], "must be positive"),
    ("regime without a task", ["regime", "--model", "{no-task}"], "names no generated task"),
    ("regime without a controller", ["regime", "--model", "{no-controllers}", "--tspd-ce", "yes"],
     "no tspd controller"),
]


def _run(argv, capsys) -> tuple[int, list[str], str]:
    code = cli.main(argv)
    captured = capsys.readouterr()
    return code, [line for line in captured.err.splitlines() if line.strip()], captured.out


def _fill(args, broken) -> list[str]:
    return [a.format(**broken) if a.startswith("{") else a for a in args]


@pytest.mark.parametrize("extra,words", [c[1:] for c in GENERATE], ids=[c[0] for c in GENERATE])
def test_generate_rejects_bad_input_in_one_line(extra, words, broken, capsys):
    argv = ["generate", "--model", TEST_MODEL,
            "--prompt", "Ann has 3 bags of 4 nuts and 5 more. She eats 6. How many left?"]
    code, err, out = _run(argv + _fill(extra, broken), capsys)
    assert code == 2 and out == ""
    assert len(err) == 1 and err[0].startswith("error: ") and words in err[0], err


@pytest.mark.parametrize("extra,words", [c[1:] for c in EVAL], ids=[c[0] for c in EVAL])
def test_eval_rejects_bad_input_in_one_line(extra, words, broken, capsys, tmp_path):
    out_file = tmp_path / "rows.jsonl"
    argv = ["eval", "--task", "arith", "--model", TEST_MODEL, "--limit", "1", "--out", str(out_file)]
    argv += _fill(extra, broken)
    code, err, _ = _run(argv, capsys)
    assert code == 2 and len(err) == 1 and err[0].startswith("error: ") and words in err[0], err
    assert not out_file.exists()                      # nothing written


@pytest.mark.parametrize("argv,words", [c[1:] for c in OTHER], ids=[c[0] for c in OTHER])
def test_other_commands_reject_bad_input_in_one_line(argv, words, broken, capsys):
    code, err, out = _run(_fill(argv, broken), capsys)
    assert code == 2 and out == ""
    assert len(err) == 1 and err[0].startswith("error: ") and words in err[0], err


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_missing_cuda_is_one_line(capsys):
    code, err, _ = _run(["generate", "--prompt", "x", "--device", "cuda"], capsys)
    assert code == 2 and len(err) == 1 and "sees no CUDA GPU" in err[0]


def test_debug_shows_the_traceback():
    from tspd.validate import UsageError
    with pytest.raises(UsageError):
        cli.main(["generate", "--prompt", "x", "--controller", "nosuch", "--debug"])


def test_generate_function_refuses_before_decoding():
    from tspd import load_model
    from tspd.decoding.loop import generate
    from tspd.validate import UsageError
    model = load_model(TEST_MODEL)
    with pytest.raises(UsageError, match="exceeds the model's 512"):
        generate(model, ["x" * 600])
    with pytest.warns(UserWarning, match="left-truncated"):
        out = generate(model, ["x" * 600], gen_length=32, block_length=32, steps=2, truncate_prompt=True)
    assert out.truncated_prompts == 1 and out.prompt_length == 512 - out.token_ids.shape[1]
    with pytest.raises(UsageError, match="takes no threshold"):
        generate(model, ["x"], controller="vanilla", threshold=0.9)


def test_truncation_only_when_asked_and_counted(capsys):
    import json
    argv = ["generate", "--model", TEST_MODEL, "--prompt", "x" * 600, "--json", "--steps", "2", "--gen-length", "32",
            "--block-length", "32"]
    assert cli.main(argv) == 2 and "exceeds the model's 512" in capsys.readouterr().err
    with pytest.warns(UserWarning, match="left-truncated"):
        assert cli.main(argv + ["--truncate-prompt"]) == 0
    assert json.loads(capsys.readouterr().out)["prompt_truncated"] is True


def test_eval_summary_counts_truncated_prompts():
    from tspd.eval.results import summarize
    rows = [{"id": str(i), "correct": i == 0, "nfe": 1, "batch": "s:0", "batch_size": 3, "batch_seconds": 1.0,
             "gen_length": 8, "warmup": True, "gen_tokens": 1, **({"prompt_truncated": True} if i else {})}
            for i in range(3)]
    assert summarize(rows)["truncated_prompts"] == 2


def test_the_old_policy_option_is_refused(capsys):
    """The controller is ``--controller`` (once ``--policy``); the old option is refused by name, not taken as a prefix."""
    argv = ["generate", "--model", TEST_MODEL, "--prompt", "2+2?", "--policy", "tspd"]
    with pytest.raises(SystemExit) as refused:
        cli.main(argv)
    assert refused.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].endswith("error: unrecognized arguments: --policy tspd"), err
