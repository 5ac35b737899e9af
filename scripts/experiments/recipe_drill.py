"""The recipe experiment of the coupled-answers work: ``train-lm``'s parts on a dependency drill, one knob at a time.

A drill whose only signal is a dependency between answer tokens (``chores``: a Latin square in words; the probe
masks the last cell of row 1 with every other answer token visible, chance 1/4 to 1/5) is trained with
``train-lm``'s own pieces: its tokenizer, batches (:func:`tspd.training.lm.data.make_batch`), model config and
initialisation, optimiser and schedule, and objective (:func:`tspd.training.lm.objective.sft_loss`). Each knob
can be set to what the minimal loop of ``../shared/lab/dependency_drill/minimal_loop.py`` does instead (run that
file itself for the reference line). The measure is sequences-to-learn: the first probe at or above
``--learned``. One JSON line per probe goes to ``--out`` (appended), so runs compare in one file.

    .venv/bin/python scripts/experiments/recipe_drill.py --name trainlm --steps 1500 --out results/training/recipe-drill/probes.jsonl
    .venv/bin/python scripts/experiments/recipe_drill.py --name lr1e-3 --lr 1e-3 ...
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path

import torch

from tspd.tasks import generated
from tspd.provenance import device_name, git_revision
from tspd.training.lm.config import LMTrainConfig
from tspd.training.lm.data import make_batch, task_texts
from tspd.training.lm.arch import init_weights, model_config
from tspd.training.lm.objective import lr_factor, make_optimizer, sft_loss
from tspd.models.llada import LLaDAModelLM
from tspd.models.subword_tokenizer import train_tokenizer

LAB = Path(__file__).resolve().parents[2] / "shared" / "lab" / "dependency_drill"


def lab_module(name: str, lab: Path, register: tuple[str, ...] = ("chores", "inventory")):
    """A module of the lab folder, by file (the lab is beside the project, not part of it); the lab's
    ``register`` modules are loaded first under their own names, as ``minimal_loop`` imports them."""
    for other in register:
        sys.modules[other] = _load(other, lab / f"{other}.py")
    return _load(f"lab_{name}", lab / f"{name}.py")


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def plain_init(net: torch.nn.Module) -> None:
    """The minimal loop's initialisation: N(0, 0.02) on every matrix, no residual scaling."""
    for p in net.parameters():
        if p.dim() >= 2:
            torch.nn.init.normal_(p, std=0.02)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--name", required=True, help="the run's name in the record")
    ap.add_argument("--task", default="chores", choices=["chores", "inventory"])
    ap.add_argument("--lab", default=str(LAB), help="the dependency-drill folder")
    ap.add_argument("--window", type=int, default=64)
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--min-lr-frac", type=float, default=0.1, help="1.0: constant learning rate")
    ap.add_argument("--warmup-frac", type=float, default=0.03)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--t-draw", default="stratified", choices=["stratified", "independent"])
    ap.add_argument("--init", default="gpt2", choices=["gpt2", "plain"])
    ap.add_argument("--prompt-multiple", type=int, default=8)
    ap.add_argument("--probe-every", type=int, default=100)
    ap.add_argument("--learned", type=float, default=0.6)
    ap.add_argument("--stop-at", type=float, default=0.9, help="stop once the probe reaches this")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    lab = lab_module("minimal_loop", Path(a.lab))           # registers chores / inventory as generated tasks
    task = generated.GENERATED[a.task]
    cfg = LMTrainConfig(out="/tmp/recipe-drill", task=a.task, gen_length=a.window, block_length=32, lr=a.lr,
                        min_lr_frac=a.min_lr_frac, warmup_frac=a.warmup_frac, weight_decay=a.weight_decay,
                        batch_size=a.batch, seed=a.seed, prompt_multiple=a.prompt_multiple)
    tok = train_tokenizer(task_texts(task=task), f"/tmp/recipe-drill-{a.task}")
    torch.manual_seed(a.seed)
    net = LLaDAModelLM(model_config(cfg, tok))
    (init_weights if a.init == "gpt2" else plain_init)(net)
    opt = make_optimizer(net, cfg, fused=False)
    gen = torch.Generator().manual_seed(a.seed)
    train, probes = task.iter_train(a.seed), task.load_split("test", 60)
    mask, eos = tok.mask_token_id, tok.eos_token_id

    def probe() -> float:
        net.eval()
        hit = 0
        for p in probes:
            q = tok(p["question"], add_special_tokens=False)["input_ids"]
            x = tok(p["answer"], add_special_tokens=False)["input_ids"]
            ids = torch.tensor([q + x + [eos] * (a.window - len(x))])
            j = len(q) + lab.probe_position(task, p, x, tok)
            gold = ids[0, j].item()
            ids[0, j] = mask
            with torch.no_grad():
                hit += net(ids)[0, j].argmax().item() == gold
        net.train()
        return hit / len(probes)

    meta = {"name": a.name, "task": a.task, "window": a.window, "batch": a.batch, "lr": a.lr,
            "min_lr_frac": a.min_lr_frac, "warmup_frac": a.warmup_frac, "weight_decay": a.weight_decay,
            "t_draw": a.t_draw, "init": a.init, "prompt_multiple": a.prompt_multiple, "seed": a.seed,
            "git": git_revision() or "unknown", "device": f"{device_name(torch.device('cpu'))}, {a.threads} threads",
            "command": " ".join(["python", *sys.argv])}
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    t0, learned = time.time(), None
    for step in range(1, a.steps + 1):
        for g in opt.param_groups:
            g["lr"] = a.lr * lr_factor(step / a.steps, a.warmup_frac, a.min_lr_frac)
        batch = make_batch(tok, [next(train) for _ in range(a.batch)], a.window, a.prompt_multiple)
        loss = sft_loss(net, batch, mask, cfg.eps, gen, eos_id=eos, t_draw=a.t_draw)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        if step % a.probe_every == 0 or step == a.steps:
            score = probe()
            learned = learned or (step if score >= a.learned else None)
            row = {**meta, "step": step, "sequences": step * a.batch, "minutes": round((time.time() - t0) / 60, 2),
                   "loss": round(loss.item(), 4), "probe": score, "learned_at": learned}
            with out.open("a") as f:
                f.write(json.dumps(row) + "\n")
            print(f"{a.name}: step {step} {row['minutes']} min loss {row['loss']} probe {score:.2f}", flush=True)
            if score >= a.stop_at:
                break
    return 0


if __name__ == "__main__":
    sys.exit(main())
