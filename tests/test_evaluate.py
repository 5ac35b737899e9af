"""The eval and grade commands (tspd.commands.eval, tspd.commands.grade): reference runs, the resumable results
file, throughput accounting, a fake model, hostile code and a run killed mid-way."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
import pytest
import torch

from tspd.cli import main as cli
from tspd.decoding.loop import Generation
from tspd.commands import eval as eval_command
from tspd.eval.results import PHASE_FIELDS, phase_shares, summarize
from tspd.records.rows import summary_path
from tspd.tasks.registry import get_task
from tspd.models.loading import Checkpoint, LoadedModel, SpecialTokens
from conftest import SIZES, TEST_MODEL

REPO = Path(__file__).resolve().parents[1]
slow = pytest.mark.skipif(not os.environ.get("TSPD_SLOW"), reason="full reference run; set TSPD_SLOW=1")


def read_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def eval_reference(tmp_path: Path, task: str, *extra: str) -> dict:
    out = tmp_path / f"{task}.jsonl"
    assert cli(["eval", "--task", task, "--model", "reference", "--out", str(out), "--batch-size", "16", *extra]) == 0
    summary = json.loads(summary_path(out).read_text())
    assert len(read_rows(out)) == summary["n"]
    return summary


def failing(tmp_path: Path, task: str) -> dict:
    return {r["id"]: r["reason"] for r in read_rows(tmp_path / f"{task}.jsonl") if not r["correct"]}


# ---- reference runs: the harness scores the data sets' own solutions ---------------------------
def test_reference_gsm8k_full(tmp_path):
    s = eval_reference(tmp_path, "gsm8k")
    assert (s["n"], s["correct"]) == (SIZES["gsm8k"],) * 2 and s["accuracy_strict"] == 1.0
    assert s["nfe_mean"] == 0 and s["tps"] is None


@pytest.mark.slow
def test_reference_math500_full(tmp_path):
    s = eval_reference(tmp_path, "math500")
    assert (s["n"], s["correct"]) == (SIZES["math500"],) * 2, failing(tmp_path, "math500")


@pytest.mark.slow
def test_reference_humaneval_full(tmp_path):
    s = eval_reference(tmp_path, "humaneval")
    assert (s["n"], s["correct"]) == (SIZES["humaneval"],) * 2, failing(tmp_path, "humaneval")


def test_reference_mbpp_subset(tmp_path):
    s = eval_reference(tmp_path, "mbpp", "--limit", "40")
    n = min(40, SIZES["mbpp"])
    assert (s["n"], s["correct"]) == (n, n), failing(tmp_path, "mbpp")


def test_reference_math_subset(tmp_path):
    s = eval_reference(tmp_path, "math", "--limit", "300")
    n = min(300, SIZES["math"])
    assert (s["n"], s["correct"]) == (n, n), failing(tmp_path, "math")


@slow
def test_reference_mbpp_full(tmp_path):
    s = eval_reference(tmp_path, "mbpp")
    assert (s["n"], s["correct"]) == (500, 500), failing(tmp_path, "mbpp")


@slow
def test_reference_math_full(tmp_path):
    s = eval_reference(tmp_path, "math")
    assert (s["n"], s["correct"]) == (5000, 5000), failing(tmp_path, "math")


# ---- a fake model -------------------------------------------------------------------------------
def fake_model(tokenizer=None) -> LoadedModel:
    """A loaded model of no network: what the harness reads beside it (tokenizer, ids) and nothing more."""
    return LoadedModel(torch.nn.Identity(), tokenizer, SpecialTokens(mask=99, eos=98, pad=98, eot=97))


NONPAD = 5   # generated tokens per row that are not EOS/EoT/pad in the fake output


class Calls(list):
    seam: tuple


def eval_cli(argv: list[str], seam=None) -> int:
    """``python -m tspd eval ARGV`` with the harness's model seam given (None: the package's)."""
    import argparse
    p = argparse.ArgumentParser()
    eval_command.add_arguments(p)
    try:
        return eval_command.main(p.parse_args(argv), seam=seam)
    except ValueError as e:          # what tspd.cli turns into one line and exit 2
        print(f"error: {e}", file=sys.stderr)
        return 2


def install_fake(answer, seconds=None, tokenizer=None):
    """A fake (load_model, generate) seam for the harness: ``answer(prompt) -> text`` as a real
    :class:`Generation`; batch times come from ``seconds``. Returns the list of calls it sees (a load
    names its checkpoint's directory), with the seam as its ``seam``."""
    calls = Calls()
    times = iter(seconds or [])

    def load_model(checkpoint: Checkpoint, device="cpu", dtype=None):
        calls.append(("load", checkpoint.path.name, device, dtype))
        return fake_model(tokenizer)

    def generate(model, prompts, config, **kwargs):
        calls.append(("generate", list(prompts), {**config.to_dict(), **kwargs}))
        ids = torch.full((len(prompts), config.gen_length), 98)
        ids[:, :NONPAD] = 1
        ids[:, NONPAD] = 97   # an EoT, not counted either
        seconds = next(times, 1.0)
        phases = {"forward_seconds": 0.8 * seconds, "control_seconds": 0.1 * seconds,
                  "controller_seconds": 0.04 * seconds, "ce_seconds": 0.02 * seconds} if kwargs.get("profile") else {}
        n = len(prompts)
        return Generation(token_ids=ids, texts=[answer(p) for p in prompts], nfe=7, nfe_per_sample=[7] * n,
                          seconds=seconds, prompt_length=4, truncated=[False] * n, answer_tokens=[NONPAD] * n,
                          **phases)

    calls.seam = (load_model, generate)
    return calls


def gsm8k_answers():
    by_question = {s["question"]: s["answer"] for s in get_task("gsm8k").samples()}

    def answer(prompt: str) -> str:
        question = prompt.rsplit("Question: ", 1)[1][:-len("\nAnswer:")]
        return " " + by_question[question] + "\n\nQuestion: a made-up follow-up? Answer: 99999"
    return answer


def run_eval(seam, out: Path, *extra: str) -> int:
    """An eval of gsm8k with the fake seam; the checkpoint is the embedded model's (opened, never loaded)."""
    return eval_cli(["--task", "gsm8k", "--model", "tiny-arith", "--gen-length", "16", "--block-length", "8",
                     "--out", str(out), *extra], seam)


def test_fast_flag_reaches_generate(monkeypatch, tmp_path):
    calls = install_fake(gsm8k_answers())
    assert run_eval(calls.seam, tmp_path / "run.jsonl", "--limit", "1") == 0
    assert calls[1][2]["fast"] is False
    assert run_eval(calls.seam, tmp_path / "fast.jsonl", "--limit", "1", "--fast") == 0
    assert calls[3][2]["fast"] is True


def test_fake_model_rows_stops_and_passthrough(monkeypatch, tmp_path):
    calls = install_fake(gsm8k_answers())
    out = tmp_path / "run.jsonl"
    assert run_eval(calls.seam, out, "--limit", "3", "--batch-size", "2", "--threshold", "0.9", "--controller", "fast-dllm",
                    "--controller-arg", "factor=0.5", "--cache", "dual") == 0
    assert calls[0] == ("load", "tiny-arith", "cpu", "float32")     # the device's dtype, named
    kwargs = calls[1][2]
    assert kwargs == {"gen_length": 16, "block_length": 8, "steps": 16, "controller": "fast-dllm", "ce": False,
                      "ce_kwargs": {}, "cache": "dual", "temperature": 0.0, "seed": 0,
                      "confidence_dtype": "float32", "fast": False,
                      "controller_kwargs": {"factor": 0.5, "threshold": 0.9}}
    assert [len(c[1]) for c in calls[1:]] == [2, 1]
    assert calls[1][1][0] == get_task("gsm8k").prompt(get_task("gsm8k").samples(1)[0])
    rows = read_rows(out)
    assert [r["id"] for r in rows] == ["gsm8k/test/0", "gsm8k/test/1", "gsm8k/test/2"]
    r = rows[0]
    assert r["correct"] and r["reason"] is None and r["nfe"] == 7 and r["gen_tokens"] == NONPAD
    assert "99999" not in r["output"] and "99999" in r["raw_output"]   # cut at "Question:"
    assert set(r) >= {"id", "correct", "output", "nfe", "seconds", "gen_tokens", "reason"}


def test_throughput_excludes_the_warmup_batch(monkeypatch, tmp_path):
    calls = install_fake(gsm8k_answers(), seconds=[10.0, 1.0, 1.0])
    out = tmp_path / "tps.jsonl"
    assert run_eval(calls.seam, out, "--limit", "6", "--batch-size", "2") == 0
    s = json.loads(summary_path(out).read_text())
    assert s["accuracy"] == 1.0 and s["n"] == 6 and s["nfe_mean"] == 7
    assert s["tps"] == pytest.approx(2 * 2 * 16 / 2.0)          # B * L_gen over the two timed batches
    assert s["tps_nonpad"] == pytest.approx(4 * NONPAD / 2.0)
    assert s["batches"] == 3 and s["batches_timed"] == 2
    assert s["config"]["gen_length"] == 16 and s["config_id"] == read_rows(out)[0]["config"]


def test_single_batch_counts_its_own_time():
    rows = [{"id": "a", "correct": True, "nfe": 4, "batch": "s:0", "batch_size": 2, "batch_seconds": 2.0,
             "gen_length": 8, "warmup": True, "gen_tokens": 3},
            {"id": "b", "correct": False, "reason": "wrong answer: got 1, expected 2", "nfe": 4, "batch": "s:0",
             "batch_size": 2, "batch_seconds": 2.0, "gen_length": 8, "warmup": True, "gen_tokens": 1}]
    s = summarize(rows)
    assert s["tps"] == 8.0 and s["tps_nonpad"] == 2.0 and s["accuracy"] == 0.5
    assert s["failures"] == {"wrong answer": 1}


def test_profile_stores_each_rows_share_of_the_batch_phases(tmp_path):
    plain, timed = tmp_path / "plain.jsonl", tmp_path / "timed.jsonl"
    calls = install_fake(gsm8k_answers())
    assert run_eval(calls.seam, plain, "--limit", "2") == 0
    assert "profile" not in calls[1][2] and not set(read_rows(plain)[0]) & set(PHASE_FIELDS)
    calls = install_fake(gsm8k_answers(), seconds=[10.0, 2.0, 1.0])
    assert run_eval(calls.seam, timed, "--limit", "5", "--batch-size", "2", "--profile") == 0
    assert [c[2]["profile"] for c in calls if c[0] == "generate"] == [True] * 3
    rows = read_rows(timed)
    assert [r["forward_seconds"] for r in rows] == pytest.approx([4.0, 4.0, 0.8, 0.8, 0.8])   # batch / size
    assert rows[2]["controller_seconds"] == pytest.approx(0.04) and rows[4]["ce_seconds"] == pytest.approx(0.02)
    assert read_rows(plain)[0]["config"] == rows[0]["config"]           # not part of the configuration
    s = json.loads(summary_path(timed).read_text())
    assert "profile" not in s["config"]
    assert s["controller_pct_of_forward"] == pytest.approx(5.0) and s["ce_pct_of_forward"] == pytest.approx(2.5)
    assert s["forward_ms"] == pytest.approx(1000 * (1.6 + 0.8) / (7 + 7))    # warm-up batch left out
    assert "forward_ms" not in json.loads(summary_path(plain).read_text())


def test_phase_shares_need_every_row_timed():
    row = {"id": "a", "correct": True, "nfe": 4, "batch": "s:0", "warmup": True, "forward_seconds": 0.4,
           "controller_seconds": 0.02, "ce_seconds": 0.0}
    assert phase_shares([row]) == pytest.approx(
        {"forward_ms": 100.0, "controller_pct_of_forward": 5.0, "ce_pct_of_forward": 0.0})
    assert phase_shares([row, {"id": "b", "correct": True, "nfe": 4, "batch": "s:1"}]) == {}
    assert phase_shares([]) == {}


def test_resume_skips_finished_ids(monkeypatch, tmp_path):
    calls = install_fake(gsm8k_answers())
    out = tmp_path / "resume.jsonl"
    assert run_eval(calls.seam, out, "--limit", "4", "--batch-size", "2") == 0
    n_first = len([c for c in calls if c[0] == "generate"])
    assert run_eval(calls.seam, out, "--limit", "6", "--batch-size", "2") == 0
    generated = [c for c in calls if c[0] == "generate"][n_first:]
    assert len(generated) == 1 and len(generated[0][1]) == 2
    ids = [r["id"] for r in read_rows(out)]
    assert ids == [f"gsm8k/test/{i}" for i in range(6)]
    assert run_eval(calls.seam, out, "--limit", "6") == 0   # nothing left to do: no model load at all
    assert len([c for c in calls if c[0] == "load"]) == 2


def test_truncated_last_line_is_dropped_and_redone(monkeypatch, tmp_path):
    calls = install_fake(gsm8k_answers())
    out = tmp_path / "cut.jsonl"
    assert run_eval(calls.seam, out, "--limit", "3") == 0
    with open(out, "a") as f:
        f.write('{"id": "gsm8k/test/3", "correct": tr')   # a kill in the middle of a write
    assert run_eval(calls.seam, out, "--limit", "5") == 0
    rows = read_rows(out)
    assert [r["id"] for r in rows] == [f"gsm8k/test/{i}" for i in range(5)] and all(r["correct"] for r in rows)


def test_corrupt_line_and_foreign_config_are_errors(monkeypatch, tmp_path, capsys):
    calls = install_fake(gsm8k_answers())
    out = tmp_path / "x.jsonl"
    assert run_eval(calls.seam, out, "--limit", "2") == 0
    assert run_eval(calls.seam, out, "--limit", "2", "--gen-length", "32") == 2
    assert "another configuration" in capsys.readouterr().err
    out.write_text('{"id": "a"}\nnot json\n' + out.read_text())
    assert run_eval(calls.seam, out, "--limit", "2") == 2
    err = capsys.readouterr().err.strip()
    assert "x.jsonl:2: corrupt results line" in err and "\n" not in err


def test_a_second_writer_on_one_results_file_stops_at_once(monkeypatch, tmp_path, capsys):
    calls = install_fake(gsm8k_answers())
    out = tmp_path / "one.jsonl"
    first = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom tspd.records.rows import ResultsFile\n"
                              f"with ResultsFile({str(out)!r}).lock():\n    print('writing', flush=True)\n"
                              "    sys.stdin.readline()"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:                                               # another process, writing the same file
        assert first.stdout.readline().strip() == "writing"
        assert run_eval(calls.seam, out, "--limit", "2") == 2
        err = capsys.readouterr().err.strip()
        assert f"is being written by pid {first.pid}" in err and "\n" not in err
        assert not out.exists() and not [c for c in calls if c[0] == "generate"]   # nothing decoded, nothing written
    finally:
        first.communicate("\n", timeout=60)
    assert run_eval(calls.seam, out, "--limit", "2") == 0   # the lock went with its holder
    assert len(read_rows(out)) == 2 and not (tmp_path / "one.jsonl.lock").exists()


def test_a_file_written_twice_over_counts_each_id_once(monkeypatch, tmp_path):
    from tspd.records.rows import ResultsFile
    calls = install_fake(gsm8k_answers())
    out = tmp_path / "twice.jsonl"
    assert run_eval(calls.seam, out, "--limit", "3") == 0
    out.write_text(out.read_text() * 2)                # what two unlocked writers left behind
    assert [r["id"] for r in ResultsFile(out).load()] == [f"gsm8k/test/{i}" for i in range(3)]
    assert run_eval(calls.seam, out, "--limit", "3") == 0
    assert json.loads(summary_path(out).read_text())["n"] == 3


def test_bad_arguments_are_one_line_errors(monkeypatch, tmp_path, capsys):
    calls = install_fake(gsm8k_answers())
    assert run_eval(calls.seam, tmp_path / "y.jsonl", "--controller-arg", "novalue") == 2
    assert "KEY=VALUE" in capsys.readouterr().err
    assert run_eval(calls.seam, tmp_path / "y.jsonl", "--batch-size", "0") == 2
    assert cli(["eval", "--task", "humaneval", "--model", "reference", "--data-dir", str(tmp_path),
                "--out", str(tmp_path / "z.jsonl")]) == 2
    assert "TSPD_DATA_DIR" in capsys.readouterr().err


def test_chat_template_is_used_for_instruct_tokenizers(monkeypatch, tmp_path):
    class Tok:
        chat_template = "x"

        def apply_chat_template(self, messages, add_generation_prompt, tokenize):
            assert add_generation_prompt and not tokenize and len(messages) == 1
            return "<user>" + messages[0]["content"] + "<assistant>"

    answer = gsm8k_answers()
    calls = install_fake(lambda p: answer(p.removeprefix("<user>").removesuffix("<assistant>")), tokenizer=Tok())
    out = tmp_path / "chat.jsonl"
    assert run_eval(calls.seam, out, "--limit", "2") == 0
    assert calls[1][1][0].startswith("<user>Question: ")
    assert json.loads(summary_path(out).read_text())["chat"] is True
    assert run_eval(calls.seam, tmp_path / "raw.jsonl", "--limit", "1", "--chat", "off") == 0
    assert calls[-1][1][0].startswith("Question: ")


HOSTILE = {
    "HumanEval/0": "    import os, signal\n    os.kill(os.getppid(), signal.SIGKILL)\n",
    "HumanEval/1": "    import os\n    os._exit(0)\n",
    "HumanEval/2": "    open('/tmp/tspd-evaluator-escape', 'w').write('x')\n",
    "HumanEval/3": "    import os\n    while True:\n        os.fork()\n",
    "HumanEval/4": "    while True:\n        print('spam' * 10000)\n",
    "HumanEval/5": "    import sys\n    sys.exit(0)\n",
}


def test_hostile_completions_fail_and_the_evaluator_survives(monkeypatch, tmp_path):
    task = get_task("humaneval")
    by_prompt = {s["prompt"]: HOSTILE[s["id"]] for s in task.samples(len(HOSTILE))}
    calls = install_fake(lambda p: by_prompt[p])
    out = tmp_path / "hostile.jsonl"
    assert eval_cli(["--task", "humaneval", "--model", "tiny-arith", "--limit", str(len(HOSTILE)), "--gen-length", "16",
                     "--block-length", "8", "--batch-size", "3", "--out", str(out)], calls.seam) == 0
    rows = {r["id"]: r for r in read_rows(out)}
    assert set(rows) == set(HOSTILE) and not any(r["correct"] for r in rows.values())
    assert rows["HumanEval/0"]["reason"].startswith("failed: PermissionError")
    assert rows["HumanEval/1"]["reason"] == "failed: exited before the tests finished"
    assert rows["HumanEval/2"]["reason"].startswith("failed: PermissionError")
    assert not Path("/tmp/tspd-evaluator-escape").exists()
    assert rows["HumanEval/3"]["reason"].startswith("failed: PermissionError")
    assert rows["HumanEval/4"]["reason"] == "output or file size limit"
    assert rows["HumanEval/5"]["reason"] == "failed: exited before the tests finished"


# ---- killed mid-run, then resumed --------------------------------------------------------------
SLOW_REFERENCE = """
import sys, time
from tspd.tasks.gsm8k import GSM8K

_reference = GSM8K.reference_completion


def slow_reference(self, sample):
    time.sleep(0.3)   # a slow "model", so the run can be killed half-way
    return _reference(self, sample)


GSM8K.reference_completion = slow_reference
from tspd.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
def test_killed_run_resumes_with_every_id_exactly_once(tmp_path):
    script = tmp_path / "slow_eval.py"
    script.write_text(SLOW_REFERENCE)
    out = tmp_path / "killed.jsonl"
    args = ["eval", "--task", "gsm8k", "--model", "reference", "--limit", "40", "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, str(script), *args], cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 180   # interpreter + torch import on a loaded machine
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if out.exists() and out.read_text().count("\n") >= 3:
                break
            time.sleep(0.05)
        assert proc.poll() is None, "the run ended before it could be killed"
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=60) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    partial = len(read_rows(out))
    assert 3 <= partial < 40
    done = subprocess.run([sys.executable, "-m", "tspd", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    ids = [r["id"] for r in read_rows(out)]
    assert sorted(ids) == sorted(f"gsm8k/test/{i}" for i in range(40)) and len(ids) == 40
    summary = json.loads(summary_path(out).read_text())
    assert summary["n"] == 40 and summary["accuracy"] == 1.0 and json.loads(done.stdout)["n"] == 40


# ---- grade command ------------------------------------------------------------------------------
def test_grade_command(tmp_path, capsys):
    comp = tmp_path / "completions.jsonl"
    rows = [{"id": "gsm8k/test/0", "completion": "... so she makes #### 18"},
            {"id": "gsm8k/test/1", "completion": "It takes 4 bolts.\nQuestion: 3"},
            {"id": "not-an-id", "completion": "#### 1"}]
    comp.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "graded.jsonl"
    assert cli(["grade", "--task", "gsm8k", "--completions", str(comp), "--out", str(out)]) == 0
    graded = read_rows(out)
    assert [g["id"] for g in graded] == [r["id"] for r in rows]
    assert graded[0]["correct"] and graded[0]["reason"] is None
    assert graded[1]["correct"]   # graded as given: the "3" after the stop string counts
    assert graded[2]["reason"] == "unknown id for task gsm8k"
    summary = json.loads(capsys.readouterr().err.strip().splitlines()[-1])
    assert summary["n"] == 3 and summary["correct"] == 2
    assert cli(["grade", "--task", "gsm8k", "--completions", str(comp), "--apply-stops", "--out", str(out)]) == 0
    cut = read_rows(out)[1]
    assert not cut["correct"] and cut["reason"] == "wrong answer: got 4, expected 3"


def test_grade_command_code_task_and_bad_input(tmp_path, capsys):
    comp = tmp_path / "code.jsonl"
    sample = get_task("humaneval").samples(1)[0]
    comp.write_text(json.dumps({"id": "HumanEval/0", "completion": sample["canonical_solution"]}) + "\n" +
                    json.dumps({"id": "HumanEval/1", "completion": "    import os\n    os._exit(0)\n"}) + "\n")
    assert cli(["grade", "--task", "humaneval", "--completions", str(comp)]) == 0
    graded = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert graded[0]["correct"] and graded[1]["reason"] == "failed: exited before the tests finished"
    comp.write_text('{"id": "HumanEval/0"}\n')
    assert cli(["grade", "--task", "humaneval", "--completions", str(comp)]) == 2
    assert "needs 'id' and a string 'completion'" in capsys.readouterr().err


def test_real_generate_with_a_random_tiny_model(monkeypatch, tmp_path):
    """The evaluator against the package's own generate(): a random model with the char tokenizer."""
    from conftest import random_model
    from tspd.models.char_tokenizer import build_tokenizer
    from tspd.eval.harness import package_seam

    tok = build_tokenizer()
    model = random_model(vocab_size=len(tok), mask_token_id=tok.mask_token_id, eos_token_id=tok.eos_token_id,
                         pad_token_id=tok.pad_token_id, max_sequence_length=512)
    model.tokenizer = tok
    model.special = SpecialTokens(mask=tok.mask_token_id, eos=tok.eos_token_id, pad=tok.pad_token_id)
    _, generate = package_seam()
    out = tmp_path / "tiny.jsonl"
    assert eval_cli(["--task", "arith", "--model", "tiny-arith", "--limit", "3", "--batch-size", "2",
                     "--gen-length", "16", "--block-length", "8", "--out", str(out)],
                    ((lambda *a, **k: model), generate)) == 0
    rows = read_rows(out)
    assert len(rows) == 3 and all(r["nfe"] > 0 and 0 <= r["gen_tokens"] <= 16 for r in rows)
    s = json.loads(summary_path(out).read_text())
    assert s["tps"] > 0 and s["batches_timed"] == 1 and s["nfe_mean"] > 0


def test_an_eval_job_reads_its_config_json_once(monkeypatch, tmp_path):
    """``python -m tspd eval`` opens its checkpoint once (:class:`tspd.models.loading.Checkpoint`) and passes
    it on: building the run, checking the job and loading the weights read ``config.json`` one time in all.
    (The tokenizer's loader, inside transformers, reads the file on its own; those reads are not ours.)"""
    import builtins
    import io
    import traceback

    reads = []
    real_open = io.open

    def counting_open(file, *args, **kwargs):
        if Path(str(file)).name == "config.json":
            frames = [f.filename for f in traceback.extract_stack()]
            if not any(f"{os.sep}transformers{os.sep}" in f for f in frames):
                reads.append(str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(io, "open", counting_open)
    monkeypatch.setattr(builtins, "open", counting_open)
    out = tmp_path / "once.jsonl"
    assert cli(["eval", "--task", "arith", "--model", TEST_MODEL, "--limit", "2", "--controller", "fast-dllm",
                "--threshold", "0.9", "--out", str(out)]) == 0
    assert len(read_rows(out)) == 2
    assert len(reads) == 1 and reads[0].endswith(f"{TEST_MODEL}{os.sep}config.json"), reads
