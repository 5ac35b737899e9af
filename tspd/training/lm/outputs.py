"""``train-lm``'s record: ``TRAINING.md`` (command, revision, device, curve, probes, sweep), the CSV logs,
and the files a run leaves in ``--out`` (the bf16 checkpoint, rewritten every few minutes, and the
resumable state ``train_state.pt``)."""
from __future__ import annotations

import csv
import os
import tempfile
from pathlib import Path

import torch

from tspd import markdown
from tspd.stats import wilson
from tspd.tasks.generated import generated_task
from tspd.models.llada import LLaDAModelLM
from tspd.models.loading import save_model
from tspd.training import probes, serial_probes
from tspd.training.lm.evaluation import EVAL_COLUMNS
from tspd.records import training_md
from tspd.records.files import write_atomic

STATE = "train_state.pt"   # resumable training state beside the checkpoint (not shipped)


def _decoding_name(r: dict) -> str:
    if r["policy"] == "vanilla":
        k = r.get("tokens_per_step") or 1
        return "1 token per step (vanilla)" if k == 1 else f"{k} tokens per step (vanilla, fixed schedule)"
    return f"{r['policy']}, confidence threshold {r['threshold']}"


def sweep_table(evals: list[dict]) -> list[str]:
    """Markdown rows: accuracy with its 95 % interval, change against 1 token per step, forwards."""
    base = next((r for r in evals if r["policy"] == "vanilla" and (r.get("tokens_per_step") or 1) == 1
                 and "accuracy" in r), None)
    rows = []
    for r in evals:
        if "accuracy" not in r:
            rows.append([_decoding_name(r), f"not measured: {r['error']}", "", r["n"], ""])
            continue
        lo, hi = wilson(r["correct"], r["n"])
        delta = f"{100 * (r['accuracy'] - base['accuracy']):+.1f}" if base and r is not base else ""
        rows.append([_decoding_name(r), f"{r['accuracy']:.1%} ({r['correct']}/{r['n']}; {lo:.1%}-{hi:.1%})", delta,
                     r["n"], r["nfe"]])
    return markdown.table(["decoding", "accuracy (95 % interval)", "vs 1 token/step (points)", "n",
                           "forwards (batch max)"], rows)


# The learning curve's probes: with everything after the span masked (the state of a decoder that has written
# the answer up to it), so a later line cannot give the span away.
CURVE_PROBES = {"next_operand_question": "question numbers", "next_operand_result": "earlier results",
                "next_result_mul": "products", "next_result_add": "sums", "next_result_sub": "differences",
                "next_final": "final line", "cf_next_copied": "counterfactual: copies",
                "one_pass_final": "final in one forward"}


# roster's probes (tspd.training.roster_probes), in the curve and in the final record
ROSTER_PROBES = {"probe_chore": "one chore of a line masked", "probe_pair": "two chores of a line masked",
                 "probe_day": "a day number masked", "one_pass_lines": "day lines in one forward"}


def has_lines(task: str) -> bool:
    """Whether ``task`` writes roster's day lines (roster, styled), probed by ``tspd.training.roster_probes``."""
    return hasattr(generated_task(task), "LINE")


def curve_probes(task: str) -> dict[str, str]:
    """The probes a task's learning curve shows: ``{column: name}``."""
    if generated_task(task) in serial_probes.SERIAL:
        return serial_probes.NAMES
    return ROSTER_PROBES if has_lines(task) else CURVE_PROBES


REGIME_NAMES = {"fast_tpf": "Fast-dLLM 0.9: TPF", "fast_loss": "Fast-dLLM 0.9: points lost",
                "fixed2_loss": "2 tokens/step: points lost", "fixed_loss": "4 tokens/step: points lost",
                "fixed8_loss": "8 tokens/step: points lost", "block_step_loss": "one step per block: points lost",
                "vanilla_prefix_cost": "prefix cache costs vanilla", "vanilla_dual_cost": "dual cache costs vanilla",
                "fast_prefix_cost": "prefix cache costs Fast-dLLM", "fast_dual_cost": "dual cache costs Fast-dLLM",
                "long_accuracy": "2x window: vanilla", "long_gap": "2x window: points lost",
                "fast70_loss": "Fast-dLLM 0.7: points lost", "fast50_loss": "Fast-dLLM 0.5: points lost"}
LATER_FIGURES = ("fast70_loss", "fast50_loss")   # shown only where a log has them (logs from before had none)


def regime_curve(curve: list[dict]) -> list[str]:
    """Markdown: the regime figures (:mod:`tspd.measures.regime`) at each evaluation that logged them."""
    points = [c for c in curve if c.get("fast_tpf") is not None]
    if not points:
        return []
    cell = lambda k, v: "" if v is None else f"{v:.0%}" if k == "long_accuracy" else f"{v:.2f}" if k == "fast_tpf" \
        else f"{v:+.1f}"   # noqa: E731
    keys = [k for k in REGIME_NAMES if k not in LATER_FIGURES or any(c.get(k) is not None for c in points)]
    return ["## Regime figures during training (`tspd.measures.regime`; costs in points, no cache minus cached)", ""] + \
        markdown.table(["step", "minutes", *(REGIME_NAMES[k] for k in keys)],
                       [[c["step"], f"{c['minutes']:.1f}", *(cell(k, c.get(k)) for k in keys)] for c in points]) + [""]


def _pct(x) -> str:
    return "" if x is None else f"{x:.0%}"


def probe_table(probed: dict, task: str = "arith") -> list[str]:
    """Markdown: the final record's teacher-forced probes and the counterfactual, with the rest of the
    answer visible and with everything after the span masked (roster: its own probes)."""
    if not probed:
        return ["No probes are recorded for this checkpoint."]
    serial = generated_task(task) in serial_probes.SERIAL
    if has_lines(task) or serial:
        module, names, what = ("serial_probes", serial_probes.NAMES, "chain") if serial else \
            ("roster_probes", ROSTER_PROBES, "day")
        head = [f"## Teacher-forced probes (`tspd.training.{module}`: the reference plan in the window, a "
                "few tokens masked, one forward)", "", f"On the first {int(probed['n'])} test problems, every {what} line.", ""]
        return head + markdown.table(["probe", "right"], [[name, _pct(probed.get(k))] for k, name in names.items()]) \
            + [""]
    names = {"operand_question": "question numbers", "operand_result": "earlier results", "result*": "products",
             "result+": "sums", "result-": "differences", "result/": "quotients", "final": "final line"}
    rows = ["## Teacher-forced probes (`tspd.training.probes`: the reference solution in the window, one span masked)",
            "", f"On the first {int(probed['n'])} test problems; the counterfactual on the {int(probed['cf_n'])} of them whose "
            "first result is copied by a later line (that result altered, the copy masked: does the model write "
            "the altered value, or recompute the true one?).", ""]
    cells = [[name, _pct(probed.get(probes.ROLE_COLUMNS[role])), _pct(probed.get(probes.NEXT_COLUMNS[role]))]
             for role, name in names.items()]
    cells += [["counterfactual: copies the altered value", _pct(probed.get("cf_copied")),
               _pct(probed.get("cf_next_copied"))],
              ["counterfactual: recomputes the true value", _pct(probed.get("cf_recomputed")),
               _pct(probed.get("cf_next_recomputed"))],
              [f"counterfactual, the {probed.get('cf_valid_n', '?')} whose altered value keeps every later line valid: "
               "copies", _pct(probed.get("cf_copied_valid")), _pct(probed.get("cf_next_copied_valid"))],
              ["final line, the whole window masked (one forward: `probes.one_pass`)", "",
               _pct(probed.get("one_pass_final"))]]
    return rows + markdown.table(["probe", "rest of the answer visible", "everything after the span masked"], cells) + [""]


LAYOUTS = {"llada": "LLaDA architecture", "dream": "Dream's layout: Qwen2 names, shifted logits",
           "llada-moe": "LLaDA-MoE's layout: routed experts"}   # train-lm --arch (tspd.training.lm.arch)
# train-lm --objective: (what the run's checkpoint is, what it was trained with)
OBJECTIVES = {"diffusion": ("Embedded masked diffusion LM", "the LLaDA SFT objective"),
              "ar": ("Autoregressive start of an embedded masked diffusion LM (for `--init-from`, Dream's recipe)",
                     "the next-token objective under causal attention")}


def write_training_md(out: Path, info: dict) -> None:
    task = info.get("task", "arith")
    kind, objective = OBJECTIVES[info.get("objective", "diffusion")]
    lines = [f"# {'tiny-arith' if task == 'arith' else out.name}: training record", "",
             f"{kind} ({LAYOUTS[info.get('arch', 'llada')]}) trained with {objective} on `tspd.tasks.{task}` "
             f"({generated_task(task).SUMMARY}). Written by `python -m tspd train-lm`.", "",
             f"- status: {info['status']}",
             f"- command: `{info['command']}`",
             f"- git revision: {info['git']}",
             f"- device: {info['device']}",
             f"- torch: {torch.__version__}",
             f"- parameters: {info['params']:,}",
             f"- steps: {info['step']} (batch {info['batch_size']}, {info['tokens']:,} sequence positions)",
             f"- wall time of training: {info['train_seconds'] / 60:.1f} min "
             f"({info['tokens_per_s']:,.0f} positions/s; in-training evaluations excluded)",
             f"- final loss (mean of the last {info['loss_window']} steps): {info['loss']:.4f}", ""]
    if info.get("resumes"):
        lines[-1:-1] = [f"- resumed {info['resumes']} time(s) from `{STATE}`, last by `{info.get('resumed_by')}`"]
    if info.get("curve"):
        probed_by = "`tspd.training.serial_probes`" if generated_task(task) in serial_probes.SERIAL else \
            "`tspd.training.roster_probes`" if has_lines(task) else \
            "`tspd.training.probes`, with everything after the span masked"
        lines += [f"## Learning curve (held-out, 1 token per step; teacher-forced probes: {probed_by})", ""]
        lines += markdown.table(["step", "training minutes", "loss", "accuracy", "n", *curve_probes(task).values()],
                                [[c["step"], f"{c['minutes']:.1f}", f"{c['loss']:.4f}", f"{c['accuracy']:.1%}", c["n"],
                                  *(_pct(c.get(k)) for k in curve_probes(task))] for c in info["curve"]])
        lines.append("")
        lines += regime_curve(info["curve"])
    if info.get("stopped_early"):
        lines += [f"Stopped early: {info['stopped_early']}.", ""]
    if info.get("probes"):
        lines += probe_table(info["probes"], task)
    if info.get("evals"):
        lines += [f"## Held-out accuracy (`tspd.tasks.{info.get('task', 'arith')}` test split, gen_length "
                  f"{info['gen_length']}, block_length {info['block_length']})", ""]
        lines += sweep_table(info["evals"])
        lines.append("")
        vanilla = next((r for r in info["evals"] if r["policy"] == "vanilla" and (r.get("tokens_per_step") or 1) == 1
                        and r.get("lines")), None)
        if vanilla:
            names = {"*": "products", "+": "sums", "-": "differences", "/": "quotients", "line": "day lines"}
            shares = [f"{names[op]} {k / n:.0%} ({k}/{n})" for op, (k, n) in vanilla["lines"].items() if n]
            lines += ["Exact solution lines with 1 token per step (a reference line right at its index): "
                      + ", ".join(shares) + ".", ""]
            if vanilla.get("templates"):
                lines += ["Final answers right by template, 1 token per step: " + ", ".join(
                    f"{name} {k / n:.0%} ({k}/{n})" for name, (k, n) in vanilla["templates"].items()) + ".", ""]
    if "--device cuda" not in info["command"]:
        lines += ["## On a GPU", "",
                  "The command above with `--device cuda` runs the same recipe with bf16 autocast (not measured here); "
                  "it rewrites this directory (weights in bf16, tokenizer, this file).", ""]
    training_md.write_page(out, lines)


def save_checkpoint(model: LLaDAModelLM, out: Path) -> None:
    """Write the weights (bf16) to a temporary directory, then move the files into ``out``."""
    with tempfile.TemporaryDirectory(dir=out) as tmp:
        save_model(model, tmp, dtype=torch.bfloat16)
        for name in ("config.json", "model.safetensors"):
            os.replace(Path(tmp, name), out / name)
            os.chmod(out / name, 0o644)   # the temporary directory's files are private


def save_state(out: Path, model, opt, info: dict, gen: torch.Generator) -> None:
    """Everything ``--resume`` needs, written atomically: fp32 weights, optimiser, counters, curve."""
    state = {"model": model.state_dict(), "opt": opt.state_dict(), "info": info,
             "gen": gen.get_state(), "torch_rng": torch.get_rng_state()}
    write_atomic(out / STATE, lambda tmp: torch.save(state, tmp))


def upgrade_eval_log(path: Path) -> None:
    """Rewrite an ``eval_log.csv`` begun by an older train-lm with today's columns (new cells empty), so a
    resumed run appends rows under the right header."""
    if not path.is_file():
        return
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
        f.seek(0)
        header = next(csv.reader(f), [])
    if tuple(header) == EVAL_COLUMNS:
        return
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=EVAL_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)

