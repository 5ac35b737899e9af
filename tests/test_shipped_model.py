"""The shipped embedded checkpoint: trained on the current task, competent, and used as a user would."""
from __future__ import annotations

import csv
import json
import subprocess
import sys

import pytest

from tspd import load_model
from tspd.tasks import arith
from tspd.provenance import REPO_ROOT
from tspd.decoding.loop import generate
from tspd.models.loading import ZOO as ZOO_DIR, decode_lengths, resolve_path
from tspd.records import train_lm_evals

ZOO = resolve_path("tiny-arith")


def test_shipped_checkpoint_was_trained_on_this_version_of_the_task():
    task = json.loads((ZOO / "config.json").read_text())["tspd_task"]
    assert task["fingerprint"] == arith.fingerprint(), "tspd.tasks.arith changed: retrain the embedded model"
    assert decode_lengths("tiny-arith") == (task["gen_length"], task["block_length"]) == \
        (arith.GEN_LENGTH, arith.BLOCK_LENGTH)


def test_shipped_training_record_matches_its_evaluation():
    vanilla = next(r for r in train_lm_evals.load("tiny-arith")
                   if r["policy"] == "vanilla" and r.get("tokens_per_step") == 1)
    assert vanilla["n"] == arith.SPLIT_SIZES["test"]
    record = (ZOO / "TRAINING.md").read_text()
    assert f"{vanilla['accuracy']:.1%} ({vanilla['correct']}/{vanilla['n']}" in record
    assert "uncommitted" not in record.split("## ")[0]          # the run names a clean revision


@pytest.mark.slow
def test_shipped_model_has_learned_what_its_record_says():
    """Greedy, 1 token per step, the first 32 test problems: the record's rates on all 500 (exact product
    lines, right finals; TRAINING.md's sweep) lie inside this sample's 99 % Wilson intervals, so the weights
    are the ones the record measured, and at most two finals are wrong."""
    from tspd.stats import wilson
    record = next(r for r in train_lm_evals.load("tiny-arith")
                  if r["policy"] == "vanilla" and r.get("tokens_per_step") == 1)
    model = load_model("tiny-arith")
    problems = arith.load_split("test", 32)
    out = generate(model, [arith.prompt(p) for p in problems])
    products = right = 0
    for text, p in zip(out.texts, problems):
        got = text.split("\n")
        for k, line in enumerate(p["answer"].split("\n")[:-1]):
            if "*" in line:
                products += 1
                right += k < len(got) and got[k] == line
    finals = sum(arith.extract_answer(t) == p["final"] for t, p in zip(out.texts, problems))
    for (k, n), rate in (((right, products), record["lines"]["*"][0] / record["lines"]["*"][1]),
                         ((finals, len(problems)), record["accuracy"])):
        lo, hi = wilson(k, n, z=2.576)
        assert lo <= rate <= hi, f"{k}/{n} here, {rate:.1%} in the record"
    assert finals >= 30


@pytest.mark.slow
def test_generate_command_answers_a_held_out_problem():
    """The shell command decodes exactly what generate() does, and so solves what the model solves."""
    model = load_model("tiny-arith")
    problems = arith.load_split("test", 8)    # it solves most: the first 8 hold one
    texts = generate(model, [arith.prompt(p) for p in problems]).texts
    solved = next((p for t, p in zip(texts, problems) if arith.extract_answer(t) == p["final"]), None)
    assert solved is not None, "tiny-arith solves none of its first 8 test problems"
    done = subprocess.run([sys.executable, "-m", "tspd", "generate", "--model", "tiny-arith", "--json",
                           "--threads", "1", "--prompt", solved["question"]],
                          capture_output=True, text=True, cwd=REPO_ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    reply = json.loads(done.stdout)
    assert arith.extract_answer(reply["text"]) == solved["final"], reply["text"]
    assert len(reply["token_ids"]) == arith.GEN_LENGTH


SHIPPED_CONTROLLERS = sorted((d.parent.name, meta.stem) for d in ZOO_DIR.glob("*/controllers")
                             for meta in d.glob("*.json") if not meta.name.endswith(".curve.json"))


@pytest.mark.parametrize("model,name", SHIPPED_CONTROLLERS)
def test_shipped_controllers_belong_to_the_shipped_weights(model, name):
    import hashlib
    zoo = ZOO_DIR / model
    meta = json.loads((zoo / "controllers" / f"{name}.json").read_text())
    digest = hashlib.sha256((zoo / "model.safetensors").read_bytes()).hexdigest()
    assert meta.get("model_sha256") == digest, f"retrain {model}'s {name} controller on its shipped checkpoint"


def test_every_embedded_model_has_both_controllers():
    """The paper's two learned controllers beside every model; beyond them only the gate trained on its own
    decodings (tspd.training.own_decodings)."""
    models = [d.name for d in ZOO_DIR.iterdir() if (d / "config.json").is_file()]
    shipped = set(SHIPPED_CONTROLLERS)
    assert len(models) >= 5 and {(m, n) for m in models for n in ("tspd", "learn2pd")} <= shipped
    assert {n for _, n in shipped} <= {"tspd", "learn2pd", "tspd-own"}


def test_shipped_learning_curve_is_the_records():
    """The curve the training notebook plots (the zoo's eval_log.csv) is the one TRAINING.md tabulates."""
    record = (ZOO / "TRAINING.md").read_text()
    rows = list(csv.DictReader((ZOO / "eval_log.csv").open()))
    assert rows, "eval_log.csv is empty"
    for r in rows:
        assert f"| {r['step']} | " in record and f"{100 * float(r['accuracy']):.1f}%" in record, r
