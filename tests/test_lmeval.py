"""lm-evaluation-harness adapter (tspd.eval.lmeval): ``--model tspd`` decodes exactly as the project
harness does, records NFE / TPS / the decoding in lm-eval's output, scores likelihoods by LLaDA's
Monte-Carlo estimate and refuses bad ``--model_args`` in one line. All on the embedded model, on the CPU."""
from __future__ import annotations

import json
import math
import os
import pickle
import subprocess
import sys
import tomllib
from fnmatch import fnmatch
from pathlib import Path

import pytest
import torch

lm_eval = pytest.importorskip("lm_eval", reason="lm-eval is an extra: pip install 'tspd[lmeval]'")

from lm_eval import evaluator  # noqa: E402
from lm_eval.api.instance import Instance  # noqa: E402
from lm_eval.tasks import TaskManager  # noqa: E402

from tspd.cli import main as tspd_cli  # noqa: E402
from tspd.commands import lmeval as cli  # noqa: E402
from tspd.eval.lmeval import TASKS_DIR  # noqa: E402
from tspd.eval.lmeval.adapter import Completion, TSPDLM  # noqa: E402
from tspd.eval.lmeval.likelihood import greedy_suffix, mc_loglikelihood  # noqa: E402
from tspd.eval.lmeval.settings import parse_model_args  # noqa: E402
from tspd.tasks.registry import get_task  # noqa: E402
from tspd.tasks import chain  # noqa: E402
from tspd.tasks.arith import load_split  # noqa: E402
from tspd.validate import UsageError  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "data"   # a few GSM8K rows (train and test): never ../shared
N = 12                                # arith test problems decoded by both harnesses

CONFIGS = {   # name -> (--model_args, python -m tspd eval options, batch size)
    "vanilla": ({"pretrained": "tiny-arith"}, [], 1),
    "fast-dllm": ({"pretrained": "tiny-arith", "controller": "fast-dllm", "threshold": 0.9},
                  ["--controller", "fast-dllm", "--threshold", "0.9"], 1),
    "fast-dllm-batch4": ({"pretrained": "tiny-arith", "controller": "fast-dllm", "threshold": 0.9},
                         ["--controller", "fast-dllm", "--threshold", "0.9"], 4),
}


def task_manager(**metadata) -> TaskManager:
    return TaskManager(include_path=str(TASKS_DIR), include_defaults=False, metadata=metadata or None)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Each config through lm-eval (``--model tspd``, task ``tspd_arith``) and through ``python -m tspd eval``."""
    out = {}
    for name, (model_args, options, batch) in CONFIGS.items():
        results = evaluator.simple_evaluate(model="tspd", model_args=dict(model_args), tasks=["tspd_arith"],
                                            limit=N, batch_size=batch, device="cpu", log_samples=True,
                                            task_manager=task_manager(), bootstrap_iters=0)
        path = tmp_path_factory.mktemp(name) / "harness.jsonl"
        assert tspd_cli(["eval", "--task", "arith", "--model", model_args["pretrained"], "--limit", str(N),
                         "--batch-size", str(batch), "--out", str(path), *options]) == 0
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        summary = json.loads(path.with_name("harness.summary.json").read_text())
        out[name] = (results, rows, summary)
    return out


@pytest.mark.parametrize("name", list(CONFIGS))
def test_adapter_answers_as_the_project_harness(runs, name):
    """Same prompts, same texts, same grades, same NFE per problem, same accuracy and mean NFE."""
    results, rows, summary = runs[name]
    samples = sorted(results["samples"]["tspd_arith"], key=lambda s: s["doc_id"])
    assert [s["doc"]["id"] for s in samples] == [r["id"] for r in rows] == [p["id"] for p in load_split("test", N)]
    assert [s["arguments"][0][0] for s in samples] == [s["doc"]["question"] for s in samples]
    assert [s["resps"][0][0] for s in samples] == [r["output"] for r in rows]
    assert [s["nfe"] for s in samples] == [r["nfe"] for r in rows]
    assert [bool(s["exact_match"]) for s in samples] == [r["correct"] for r in rows]
    got = results["results"]["tspd_arith"]
    assert got["exact_match,none"] == pytest.approx(summary["accuracy"])
    assert got["nfe,none"] == pytest.approx(summary["nfe_mean"])
    if name == "vanilla":
        assert {s["nfe"] for s in samples} == {64}   # one token per step over the 64-token window
    else:
        assert got["nfe,none"] < 32


def test_speed_and_decoding_are_recorded(runs):
    """NFE and TPS per sample and in the table; the DecodeConfig and the run's totals in results["config"]."""
    results, rows, _ = runs["fast-dllm-batch4"]
    samples = results["samples"]["tspd_arith"]
    assert all(s["tokens_per_second"]["batch_size"] == 4 and s["tokens_per_second"]["gen_length"] == 64
               for s in samples)
    assert results["results"]["tspd_arith"]["tokens_per_second,none"] > 0
    info = results["config"]["tspd"]
    assert info["decode_config"]["controller"] == "fast-dllm"
    assert info["decode_config"]["controller_kwargs"] == {"threshold": 0.9}
    assert (info["decode_config"]["gen_length"], info["decode_config"]["block_length"]) == (64, 32)
    assert info["batch_size"] == 4
    gen = info["generate_until"]
    assert gen["requests"] == N and gen["batches"] == N // 4 and gen["batches_timed"] == N // 4 - 1  # warm-up out
    assert gen["nfe_mean"] == pytest.approx(sum(r["nfe"] for r in rows) / N)
    assert gen["tokens_per_second"] == pytest.approx(results["results"]["tspd_arith"]["tokens_per_second,none"])
    json.dumps(results["config"])   # what lm-eval writes out is plain JSON


@pytest.mark.slow   # lm-eval's own command line, end to end (a subprocess)
def test_stock_lm_eval_runs_the_task_named_by_its_yaml(tmp_path):
    """The issue's command through lm-eval's own console entry: naming the task by its YAML path loads its
    utils.py, which registers ``--model tspd`` before lm-eval looks the model up (no --device: CPU)."""
    yaml = TASKS_DIR / "tspd_arith" / "tspd_arith.yaml"
    cmd = [sys.executable, "-m", "lm_eval", "--model", "tspd", "--model_args",
           "pretrained=tiny-arith,controller=fast-dllm,threshold=0.9", "--tasks", str(yaml), "--limit", "3",
           "--output_path", str(tmp_path), "--log_samples"]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=600,
                         env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert out.returncode == 0, out.stderr[-2000:]
    results = json.loads(next(tmp_path.rglob("results_*.json")).read_text())
    assert results["config"]["tspd"]["device"] == ("cuda:0" if torch.cuda.is_available() else "cpu")
    assert set(results["results"]["tspd_arith"]) >= {"exact_match,none", "nfe,none", "tokens_per_second,none"}
    samples = [json.loads(line) for line in next(tmp_path.rglob("samples_tspd_arith_*.jsonl")).read_text().splitlines()]
    assert len(samples) == 3 and all(s["nfe"] >= 1 for s in samples)


def test_responses_keep_their_record_through_the_cache():
    c = Completion("04*07 = 28", {"nfe": 7})
    back = pickle.loads(pickle.dumps(c))
    assert back == "04*07 = 28" and back.tspd == {"nfe": 7} and json.dumps(c) == '"04*07 = 28"'


# --------------------------------------------------------------------------------------------
# loglikelihood: LLaDA's Monte-Carlo estimate
# --------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def lm():
    return TSPDLM(pretrained="tiny-arith", mc_num=32, mc_batch=32, check_greedy=False, device="cpu")


def test_likelihood_ranks_the_right_solution_first(lm):
    """Each problem's own worked solution scores above another problem's solution (the model reads the
    question) and above its own characters reversed (the format), on every item."""
    problems = load_split("test", 4)
    requests = []
    for i, p in enumerate(problems):
        other = problems[(i + 1) % len(problems)]["answer"]
        for cont in (p["answer"], other, p["answer"][::-1]):
            requests.append(Instance("loglikelihood", p, (p["question"], cont), len(requests)))
    scores = [ll for ll, _ in lm.loglikelihood(requests, disable_tqdm=True)]
    assert all(math.isfinite(s) and s < 0 for s in scores)
    for i in range(len(problems)):
        right, other, reversed_ = scores[3 * i:3 * i + 3]
        assert right > other and right > reversed_, (i, scores[3 * i:3 * i + 3])
    again = lm.loglikelihood(requests[:1], disable_tqdm=True)[0][0]
    assert again == scores[0]   # a fixed seed per request: the same estimate whatever else is scored


def test_estimate_weights_each_sample_by_length_over_masked(lm):
    """L = 1: exact, log p(t | c). L = 2: the expectation over l in {1, 2} with weights L / l is
    (log p(a | c, b) + log p(b | c, a)) / 2 + (log p(a | c, MM) + log p(b | c, MM)) / 2."""
    model = lm.model
    mask = model.special.mask
    c = model.tokenizer(load_split("test", 1)[0]["question"], add_special_tokens=False)["input_ids"]
    a, b = model.tokenizer("04", add_special_tokens=False)["input_ids"]

    def logp(seq, pos, tok):
        with torch.no_grad():
            return torch.log_softmax(model(torch.tensor([seq]))[0, pos].float(), -1)[tok].item()

    P = len(c)
    est, forwards = mc_loglikelihood(model, c, [a], mc_num=4, batch=4, seed=3)
    assert forwards == 1 and est == pytest.approx(logp(c + [mask], P, a), abs=1e-4)
    exact = (logp(c + [mask, b], P, a) + logp(c + [a, mask], P + 1, b)) / 2 \
        + (logp(c + [mask, mask], P, a) + logp(c + [mask, mask], P + 1, b)) / 2
    est, forwards = mc_loglikelihood(model, c, [a, b], mc_num=4096, batch=256, seed=0)
    assert forwards == 16 and est == pytest.approx(exact, abs=0.05 * abs(exact) + 0.05)


def test_greedy_check_is_one_token_per_step_decoding(lm):
    """is_greedy <=> vanilla decoding of one block over the continuation's positions gives it."""
    import tspd
    model = lm.model
    for p in load_split("test", 4):
        prefix = model.tokenizer(p["question"], add_special_tokens=False)["input_ids"]
        out = tspd.generate(model, [prefix], gen_length=64, block_length=64)
        decoded = out.token_ids[0].tolist()
        assert greedy_suffix(model, prefix, decoded) == (True, 64)
        wrong = decoded[:5] + [(decoded[5] + 1) % model.config.vocab_size] + decoded[6:]
        assert greedy_suffix(model, prefix, wrong)[0] is False


def test_loglikelihood_rolling_is_refused_in_one_line(lm):
    with pytest.raises(UsageError) as e:
        lm.loglikelihood_rolling([Instance("loglikelihood_rolling", {}, ("text",), 0)])
    assert "\n" not in str(e.value) and "loglikelihood_rolling" in str(e.value)


# --------------------------------------------------------------------------------------------
# --model_args
# --------------------------------------------------------------------------------------------
def test_model_args_build_one_decode_config():
    s = parse_model_args("pretrained=tiny-arith,controller=fast-dllm,threshold=0.9,ce=true,ce.tau=0.5,cache=dual,"
                         "gen_length=64,block_length=16,steps=32", device="cuda:0", batch_size=2)
    d = s.decode
    assert (d.controller, d.controller_kwargs, d.ce, d.ce_kwargs, d.cache) == ("fast-dllm", {"threshold": 0.9}, True,
                                                                      {"tau": 0.5}, "dual")
    assert (d.gen_length, d.block_length, d.steps, s.batch_size) == (64, 16, 32, 2)
    assert s.device == ("cuda:0" if torch.cuda.is_available() else "cpu")   # lm-eval's default device
    assert s.eos_fill is True and s.chat == "off"
    own = parse_model_args({"pretrained": "tiny-arith", "controller": "tspd", "eos_fill": False})
    assert (own.decode.gen_length, own.decode.block_length, own.decode.steps) == (64, 32, 64)
    assert own.decode.controller_kwargs == {} and own.eos_fill is False
    prophet = parse_model_args('{"pretrained": "tiny-arith", "controller": "prophet", '
                               '"controller_kwargs": {"thresholds": [6.0, 4.0, 2.0]}}')
    assert prophet.decode.controller_kwargs == {"thresholds": [6.0, 4.0, 2.0]}
    assert own.checkpoint is not None and own.checkpoint.path.name == "tiny-arith"   # opened once, loaded from


def test_controller_is_not_a_model_args_key():
    """The controller's weights are ``controller_weights=``; ``controller=`` names the controller, so a weights name
    there is an unknown controller; the old key ``policy=`` is refused with its new name."""
    with pytest.warns(UserWarning, match="trained on the embedded"):
        new = parse_model_args("pretrained=tiny-arith,controller=tspd,controller_weights=tiny-arith")
    assert new.decode.controller_kwargs["weights"].endswith("controllers")
    from tspd.validate import UsageError
    with pytest.raises(UsageError, match="unknown controller 'tiny-arith'"):
        parse_model_args("pretrained=tiny-arith,controller=tiny-arith")
    with pytest.raises(UsageError, match="policy is now called controller"):
        parse_model_args("pretrained=tiny-arith,policy=tspd")


@pytest.mark.parametrize("model_args, words", [
    ("pretrained=tiny-arith,controller=nope", "unknown controller 'nope'"),
    ("pretrained=tiny-arith,threshhold=0.9", "unknown --model_args threshhold"),
    ("pretrained=tiny-arith,threshold=0.9", "fast-dllm"),                       # vanilla takes no threshold
    ("pretrained=tiny-arith,controller=fast-dllm,threshold=1.5", "threshold must be in (0, 1]"),
    ("pretrained=tiny-arith,gen_length=50", "not a multiple of block_length"),
    ("pretrained=/no/such/checkpoint", "no model directory"),
    ("pretrained=tiny-arith,cache=full", "cache must be one of"),
    ("pretrained=tiny-arith,chat=on", "no chat template"),
    ("pretrained=tiny-arith,mc_num=100,mc_batch=32", "multiple of mc_batch"),
    ("pretrained=tiny-arith,ce=false,ce.tau=0.5", "with CE off"),
    ("pretrained=tiny-arith,ce.tau=2", "tau must lie in"),
    ("pretrained=tiny-arith,device=cuda:7", "cuda"),
])
def test_bad_model_args_are_one_line(capsys, model_args, words):
    if "cuda" in words and torch.cuda.is_available():
        pytest.skip("a GPU is present")
    rc = cli.main(["--model", "tspd", "--model_args", model_args, "--tasks", "tspd_arith", "--limit", "1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and err[0].startswith("error: ") and words in err[0], err


def test_bad_batch_size_is_one_line(capsys):
    assert cli.main(["--model", "tspd", "--tasks", "tspd_arith", "--batch_size", "auto"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "give a number" in err[0]


def test_chat_prompts_are_one_user_turn(lm, monkeypatch):
    monkeypatch.setattr(lm.tokenizer, "chat_template", "{% for m in messages %}<u>{{ m['content'] }}</u>{% endfor %}"
                        "{% if add_generation_prompt %}<a>{% endif %}", raising=False)
    monkeypatch.setattr(lm, "chat", True)
    monkeypatch.setattr(lm, "_templated", False)
    assert lm._prompt("Question: 2+2?") == "<u>Question: 2+2?</u><a>"
    assert lm.apply_chat_template([{"role": "user", "content": "x"}]) == "<u>x</u><a>"
    assert lm._prompt("<u>x</u><a>") == "<u>x</u><a>"   # lm-eval rendered it already: not twice


# --------------------------------------------------------------------------------------------
# The shipped tasks
# --------------------------------------------------------------------------------------------
def test_gsm8k_task_prompts_and_grades_as_the_harness():
    task = task_manager(data_dir=str(FIXTURES)).load(["tspd_gsm8k"])["tasks"]["tspd_gsm8k"]
    task.build_all_requests(limit=3, rank=0, world_size=1)
    ours = get_task("gsm8k", data_dir=FIXTURES)
    samples = ours.samples(3)
    contexts = [i.args[0] for i in sorted(task.instances, key=lambda i: i.doc_id)]
    assert contexts == [ours.prompt_text(s) for s in samples]
    assert task.instances[0].args[1]["until"] == ours.stop_strings()
    doc = task.test_docs()[0]
    ref = task.process_results(doc, [Completion(" So " + doc["answer"], {"nfe": 5})])
    assert ref["exact_match"] == ref["exact_match_strict"] == 1.0 and ref["nfe"] == 5.0
    wrong = task.process_results(doc, ["#### 1234567"])
    assert wrong["exact_match"] == 0.0 and math.isnan(wrong["nfe"])   # another model: no record


def test_chain_task_has_the_chain_tasks_problems_prompts_and_grades():
    """tspd_chain: found by lm-eval, the chain test problems in order, their prompts, the task's stop strings
    and window, and the chain grade (the reference right, another problem's solution or a cut one wrong)."""
    manager = task_manager()
    assert "tspd_chain" in manager.all_tasks
    task = manager.load(["tspd_chain"])["tasks"]["tspd_chain"]
    task.build_all_requests(limit=4, rank=0, world_size=1)
    ours = get_task("chain")
    samples = ours.samples(4)
    docs = [dict(d) for d in list(task.test_docs())[:4]]
    assert docs == samples and len(task.test_docs()) == len(ours.samples())
    instances = sorted(task.instances, key=lambda i: i.doc_id)
    assert [i.args[0] for i in instances] == [ours.prompt(s) for s in samples]
    assert all(i.args[1]["until"] == ours.stop_strings() for i in instances)
    assert all(i.args[1]["max_gen_toks"] == chain.GEN_LENGTH for i in instances)
    grades = []
    for k, (doc, sample) in enumerate(zip(docs, samples)):
        other = next(s for s in samples if s["final"] != sample["final"])["answer"]
        for text in (ours.reference_completion(sample), other, sample["answer"].split("####")[0]):
            got = task.process_results(doc, [Completion(text, {"nfe": 9})])
            assert got["nfe"] == 9.0
            grades.append((got["exact_match"], float(ours.grade(sample, text)["correct"])))
    assert [g for g, _ in grades] == [w for _, w in grades] == [1.0, 0.0, 0.0] * 4


def test_roster_task_grades_the_whole_answer_as_the_harness_does():
    """tspd_roster: found by lm-eval, its test problems in order; a valid plan right, a chore given twice wrong."""
    manager = task_manager()
    task = manager.load(["tspd_roster"])["tasks"]["tspd_roster"]
    ours = get_task("roster")
    samples = ours.samples(3)
    docs = [dict(d) for d in list(task.test_docs())[:3]]
    assert docs == samples
    for doc, sample in zip(docs, samples):
        first = sample["answer"].split("\n")[0]
        chores = sample["chores"]
        twice = first.replace(f" {chores[1]}", f" {chores[0]}")   # chore 0 given twice
        for text, right in ((sample["answer"], 1.0), (sample["answer"].replace(first, twice), 0.0)):
            got = task.process_results(doc, [Completion(text, {"nfe": 3})])
            assert got["exact_match"] == right == float(ours.grade(sample, text)["correct"])


def test_leaning_shell_task_has_the_tasks_problems_window_and_grade():
    """tspd_leaning_shell (the book's task): found by lm-eval, its test problems in order, the task's window; the
    reference right in any marker style, a wrong final cup wrong, as the harness grades."""
    from tspd.tasks import leaning_shell
    manager = task_manager()
    task = manager.load(["tspd_leaning_shell"])["tasks"]["tspd_leaning_shell"]
    ours = get_task("leaning_shell")
    samples = ours.samples(3)
    docs = [dict(d) for d in list(task.test_docs())[:3]]
    assert [(d["id"], d["question"], d["answer"]) for d in docs] == [(s["id"], s["question"], s["answer"])
                                                                     for s in samples]
    task.build_all_requests(limit=3, rank=0, world_size=1)
    assert all(i.args[1]["max_gen_toks"] == leaning_shell.GEN_LENGTH for i in task.instances)
    for doc, sample in zip(docs, samples):
        wrong = sample["answer"].replace(f"#### {sample['final']}", f"#### {int(sample['final']) % 5 + 1}")
        items, final = sample["answer"].split("\n")
        restyled = items.replace(":", "=").replace(" ", ";") + "\n" + final
        for text in (sample["answer"], restyled, wrong):
            got = task.process_results(doc, [Completion(text, {"nfe": 3})])
            assert got["exact_match"] == float(ours.grade(sample, text)["correct"])
        assert [task.process_results(doc, [Completion(t, {})])["exact_match"] for t in (restyled, wrong)] == [1.0, 0.0]


def test_task_files_ship_with_the_package():
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = data["tool"]["setuptools"]["package-data"]["tspd"]
    files = [p.relative_to(ROOT / "tspd").as_posix() for p in TASKS_DIR.rglob("*") if p.suffix in (".yaml", ".py")]
    assert len(files) >= 6 and all(any(fnmatch(f, pat) for pat in patterns) for f in files), files
    assert "lm-eval" in " ".join(data["project"]["optional-dependencies"]["lmeval"])
    assert "lmeval" in data["project"]["optional-dependencies"]["all"][0]
