"""A trace controller trained on its own decodings (issue 82; beyond the paper, whose Section 4.1 trains on EGP's).

Why: a gate trained only on the oracle's trajectories (EGP, :mod:`tspd.training.traces`) is judged on states it
reaches itself, which the oracle rarely visits (``results/training/leaning-c1``'s gate audit: the state in which
the gate commits a line's coupled tokens together occurs 9 times in EGP's 624 traces). The remedy is DAgger's
(Ross et al., 2011): roll out the current gate, label every state it visits, add those states to the data of the
earlier rounds, train again, and stop when the held-out answers at the gate stop improving.

The label of a visited state is the paper's (Appendix A.4: the position's argmax equals the final token), with
the final token taken from an answer known to be right: the rollout's own where the task grades it right (any
right answer will do, so a style it chose is not marked wrong), else vanilla decoding's where that is right (the
tokens that led the rollout astray are then those whose argmax left the right answer). A problem that neither
answers right gives no labels. With ``labels="joint"`` the tokens the gate fired on together are judged together
(:func:`fired_together`): a token that is right alone but was committed in the same step as a wrong one is labelled
unsafe too, since on a coupled answer (a line's hours that must add up) it is the set that breaks it. The network,
its features and its training (:mod:`tspd.training.train_controller`) are the paper's, unchanged: only what it
learns from differs.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from tspd.decoding.config import DecodeConfig
from tspd.decoding.controllers.tspd import TSPD
from tspd.decoding.loop import generate
from tspd.training.traces import CHANNELS, FORMAT, Recorder, block_sequences


@dataclass(frozen=True)
class OwnConfig:
    """The rounds of :func:`train_on_own` (the decoding is the book's TSPD + CE at the checkpoint's window)."""
    rounds: int = 3          # rollouts at most (each followed by a retraining)
    gate: float = 0.5        # the gate the rollouts decode at (the paper's hard gate, Eq. 12)
    rollout_n: int = 200     # traces-split problems rolled out each round (the same ones every round, as DAgger)
    check_n: int = 100       # held-out traces-split problems, after the rollout ones, that judge each round
    batch: int = 32          # prompts per generate() call
    labels: str = "token"    # "token": each state's argmax against the right answer; "joint": and tokens fired together judged together


def label_reference(own: torch.Tensor, own_right: list[bool], vanilla: torch.Tensor, vanilla_right: list[bool]):
    """[B, L] the final tokens each row's labels are read against and [B] which rows have one: the rollout's own
    answer where it is right, else vanilla's where that is right, else none (see the module docstring)."""
    use_own = torch.tensor(own_right, dtype=torch.bool)
    has = use_own | torch.tensor(vanilla_right, dtype=torch.bool)
    return torch.where(use_own[:, None], own, vanilla), has


def fired_together(labels: torch.Tensor, masked: torch.Tensor) -> torch.Tensor:
    """[S, Lb] labels of one block's steps with the tokens committed together judged together: where a step commits
    two or more tokens (masked at that step, not at the next; every token still masked at the last step is committed
    there) and any of them is labelled unsafe, all of them are."""
    committed = masked & ~torch.cat([masked[1:], torch.zeros_like(masked[:1])])
    broken = (committed.sum(-1) >= 2) & (committed & ~labels).any(-1)
    return labels & ~(committed & broken[:, None])


def vanilla_answers(model, task, problems: list[dict], decode: DecodeConfig, batch: int = 32) -> list[tuple]:
    """(token ids [L], right) of vanilla decoding per problem: the labels' fallback, the same in every round."""
    base = decode.replace(controller="vanilla", controller_kwargs={}, ce=False, ce_kwargs={})
    out = []
    for start in range(0, len(problems), batch):
        chunk = problems[start:start + batch]
        ref = generate(model, [task.prompt(p) for p in chunk], base)
        texts = ref.texts or [""] * len(chunk)   # a model without a tokenizer (the tests' random ones) has none
        out += [(ids, bool(task.right(p, t))) for ids, p, t in zip(ref.token_ids.cpu(), chunk, texts)]
    return out


def rollout(model, task, problems: list[dict], net, cfg: OwnConfig, decode: DecodeConfig, vanilla: list[tuple] | None = None,
            first_index: int = 0, progress: bool = True) -> dict:
    """The trace file's content (:data:`tspd.training.traces.FORMAT`) of the gate ``net``'s own decodings of
    ``problems`` (prompt indices from ``first_index``), labelled as the module docstring says (``vanilla``:
    :func:`vanilla_answers` of the problems, decoded here when not given); its ``meta`` counts the rollouts' right
    answers and forwards."""
    from tqdm.auto import tqdm
    feats, labels, masked, offsets, prompt_idx, blocks = [], [], [], [0], [], []
    stats = dict(rows=0, right=0, vanilla_right=0, labelled=0, forwards=0)
    vanilla = vanilla or vanilla_answers(model, task, problems, decode, cfg.batch)
    bar = tqdm(total=len(problems), desc="rollout (own gate)", disable=not progress, unit="prompt")
    for start in range(0, len(problems), cfg.batch):
        chunk = problems[start:start + cfg.batch]
        prompts = [task.prompt(p) for p in chunk]
        rec = Recorder(TSPD(net=net, gate=cfg.gate))
        out = generate(model, prompts, decode, controller=rec)
        own_right = [bool(task.right(p, t)) for p, t in zip(chunk, out.texts or [""] * len(chunk))]
        ref = vanilla[start:start + cfg.batch]
        van_right = [right for _, right in ref]
        final, has = label_reference(out.token_ids.cpu(), own_right, torch.stack([ids for ids, _ in ref]), van_right)
        for row, b, f, y, m in block_sequences(rec.steps, final, decode.block_length):
            if not has[row]:
                continue
            feats.append(f)
            labels.append(fired_together(y, m) if cfg.labels == "joint" else y)
            masked.append(m)
            offsets.append(offsets[-1] + f.shape[0])
            prompt_idx.append(first_index + start + row)
            blocks.append(b)
        stats.update(rows=stats["rows"] + len(chunk), right=stats["right"] + sum(own_right),
                     vanilla_right=stats["vanilla_right"] + sum(van_right), labelled=stats["labelled"] + int(has.sum()),
                     forwards=stats["forwards"] + sum(out.nfe_per_sample))
        bar.update(len(chunk))
    bar.close()
    return {"format": FORMAT, "channels": list(CHANNELS), "features": torch.cat(feats), "labels": torch.cat(labels),
            "masked": torch.cat(masked), "offsets": torch.tensor(offsets), "prompt_index": torch.tensor(prompt_idx),
            "block": torch.tensor(blocks),
            "meta": {"policy": "own", "gate": cfg.gate, "gen_length": decode.gen_length,
                     "block_length": decode.block_length, "ce": bool(decode.ce), **stats}}


def aggregate(a: dict, b: dict) -> dict:
    """Two trace sets as one (DAgger's aggregate): sequences of both, the same prompt index keeping one prompt on
    one side of the validation split; ``meta`` is ``a``'s with ``b``'s under ``rounds``."""
    offsets = torch.cat([a["offsets"], b["offsets"][1:] + a["offsets"][-1]])
    meta = {**a["meta"], "rounds": [*a["meta"].get("rounds", []), b["meta"]]}
    return {**a, **{k: torch.cat([a[k], b[k]]) for k in ("features", "labels", "masked", "prompt_index", "block")},
            "offsets": offsets, "meta": meta}


def held_out(model, task, problems: list[dict], net, gate: float, decode: DecodeConfig, batch: int = 32) -> dict:
    """The gate's answers on held-out problems: ``{"n", "right", "forwards"}`` (forwards a problem)."""
    right = forwards = 0
    for start in range(0, len(problems), batch):
        chunk = problems[start:start + batch]
        out = generate(model, [task.prompt(p) for p in chunk], decode, controller=TSPD(net=net, gate=gate))
        right += sum(bool(task.right(p, t)) for p, t in zip(chunk, out.texts))
        forwards += sum(out.nfe_per_sample)
    return {"n": len(problems), "right": right, "forwards": round(forwards / max(len(problems), 1), 2)}


def _better(a: dict, b: dict) -> bool:
    """Whether held-out score ``a`` beats ``b``: more right answers, or as many in fewer forwards."""
    return (a["right"], -a["forwards"]) > (b["right"], -b["forwards"])


def train_on_own(model, task, traces: dict, train_cfg, cfg: OwnConfig, decode: DecodeConfig, log=print,
                 progress: bool = True, state=None):
    """Round 0 trains on ``traces`` (EGP's, the paper's); each further round rolls out the best gate so far on the
    rollout problems, adds its labelled states, trains again and scores the gate on the held-out ones; it stops
    after ``cfg.rounds`` rounds or at the first round that scores no better. ``state``: a file each finished
    round is saved to and a rerun resumes from (the rounds take hours on a CPU). Returns (net, saved config with
    ``own``: every round's score, curve) of the best round."""
    from tspd.training.train_controller import train
    problems = task.load_split("traces", cfg.rollout_n + cfg.check_n)
    roll, check = problems[:cfg.rollout_n], problems[cfg.rollout_n:]
    if not check:
        raise ValueError(f"the traces split has {len(problems)} problems: none left to judge the rounds on")
    done = _resume(state, cfg, train_cfg)
    if done:
        traces, rounds, best, vanilla = done["traces"], done["rounds"], done["best"], done["vanilla"]
        log(f"resumed from {state} after round {rounds[-1]['round']}")
        if rounds[-1]["round"] > best[4]:                 # the last round scored no better: it had stopped there
            return _finish(best, rounds, cfg)
    else:
        net, saved, curve = train(traces, train_cfg, progress=False)
        score = held_out(model, task, check, net, cfg.gate, decode, cfg.batch)
        rounds = [{"round": 0, "sequences": len(traces["offsets"]) - 1, **score}]
        log(f"round 0 (EGP's traces): {score['right']} / {score['n']} right in {score['forwards']} forwards")
        best = (score, net, saved, curve, 0)
        vanilla = vanilla_answers(model, task, roll, decode, cfg.batch) if cfg.rounds else None
        _save(state, cfg, train_cfg, traces, rounds, best, vanilla)
    for r in range(rounds[-1]["round"] + 1, cfg.rounds + 1):
        own = rollout(model, task, roll, best[1], cfg, decode, vanilla, progress=progress)
        traces = aggregate(traces, own)
        net, saved, curve = train(traces, train_cfg, progress=False)
        score = held_out(model, task, check, net, cfg.gate, decode, cfg.batch)
        m = own["meta"]
        rounds.append({"round": r, "sequences": len(traces["offsets"]) - 1, "rollout_right": m["right"],
                       "rollout_labelled": m["labelled"], **score})
        log(f"round {r}: rollout {m['right']} / {m['rows']} right; held out {score['right']} / {score['n']} right "
            f"in {score['forwards']} forwards")
        better = _better(score, best[0])
        if better:
            best = (score, net, saved, curve, r)
        _save(state, cfg, train_cfg, traces, rounds, best, vanilla)
        if not better:
            break
    return _finish(best, rounds, cfg)


def _finish(best, rounds: list[dict], cfg: OwnConfig):
    net, saved, curve = best[1:4]
    saved["own"] = {"config": {k: getattr(cfg, k) for k in OwnConfig.__dataclass_fields__}, "rounds": rounds,
                    "best_round": best[4]}
    return net, saved, curve


def _save(state, cfg: OwnConfig, train_cfg, traces: dict, rounds: list[dict], best, vanilla) -> None:
    """The rounds so far, for :func:`_resume` (written atomically: a kill leaves the previous round's)."""
    if state is None:
        return
    from tspd.records.files import write_atomic
    done = {"own": cfg, "train": train_cfg, "traces": traces, "rounds": rounds, "best": best, "vanilla": vanilla}
    write_atomic(state, lambda tmp: torch.save(done, tmp))


def _resume(state, cfg: OwnConfig, train_cfg) -> dict | None:
    """The saved rounds of the same run (the same ``OwnConfig`` but for its round count, the same training), or
    None; a state of another run is refused, not silently continued."""
    from dataclasses import replace
    from pathlib import Path
    if state is None or not Path(state).is_file():
        return None
    done = torch.load(state, weights_only=False)
    if replace(done["own"], rounds=cfg.rounds) != cfg or done["train"] != train_cfg:
        raise ValueError(f"{state} holds the rounds of another run ({done['own']}, {done['train']}): delete it to start afresh")
    return done


def train_on_own_and_save(traces_path, train_cfg, cfg: OwnConfig, out, device: str = "cpu", progress: bool = True):
    """:func:`train_on_own` from the EGP trace file ``traces_path`` (its model and that model's own task), saved at
    the stem ``out`` as :func:`tspd.training.train_controller.train_and_save` saves, the rounds so far in
    ``<out>.own-state.pt`` (a rerun resumes there); returns (stem, saved config)."""
    from pathlib import Path
    from tspd.decoding.controllers.weights import save_controller, stem_of
    from tspd.models.loading import Checkpoint, load_model, task_spec, weights_hash
    from tspd.tasks.generated import generated_task
    from tspd.training.traces import load_traces
    from tspd.training.train_controller import write_curve
    traces = load_traces(traces_path)
    name = traces["meta"].get("model")
    spec = task_spec(Checkpoint.open(name)) if name else None
    if not spec:
        raise ValueError(f"{traces_path}: its model ({name}) names no generated task to roll its gate out on")
    model, task = load_model(name, device=device), generated_task(spec["name"])
    decode = DecodeConfig.of(controller="tspd", ce=True).resolved(model)
    state = Path(f"{out}.own-state.pt")
    net, saved, curve = train_on_own(model, task, traces, train_cfg, cfg, decode, progress=progress, state=state)
    saved.update(traces_file=str(traces_path), model=name, model_sha256=weights_hash(name, digits=64))
    stem = save_controller(net, saved, stem_of(out, train_cfg.kind))
    write_curve(stem, curve)
    return stem, saved


def rounds_rows(saved: dict) -> list[dict]:
    """A controller's rounds (its ``<stem>.json``'s ``own``), one row a round: the trace sequences it trained on, its
    rollout's right answers and the held-out problems it answers right and in how many forwards; the kept one marked."""
    own = saved["own"]
    return [{"round": r["round"] if r["round"] else "0 (EGP's traces, the paper's)", "trace sequences": r["sequences"],
             "rollout right": "-" if "rollout_right" not in r else f"{r['rollout_right']} / {own['config']['rollout_n']}",
             "held-out right": f"{r['right']} / {r['n']}", "forwards a problem": f"{r['forwards']:.1f}",
             "": "kept" if r["round"] == own["best_round"] else ""} for r in own["rounds"]]


def rounds_table(saved: dict) -> str:
    """:func:`rounds_rows` as a Markdown table."""
    from tspd.markdown import dict_table
    return "\n".join(dict_table(rounds_rows(saved)))
