"""Does CE lift the tokens that rise? An audit on a model's own vanilla traces (paper Section 3.3, issue 82).

CE's promise (Sec. 3.3, Eqs. 5-9) is to commit a token on a steady upward trend before its confidence crosses the
threshold by itself. Its opportunity is measured by :mod:`tspd.measures.dynamics`: answer tokens whose confidence
crosses 0.9 after a rise of >= 3 steps on their final argmax. This module replays CE (:func:`tspd.decoding.
extrapolate.replay`, exactly the decoder's filter) over the same vanilla traces and asks, per rising token:

- **lifted**: did CE's lower bound reach ``c_min`` (h* > 0) at a step before the raw confidence crossed 0.9,
  and by how many steps? (A token lifted on an argmax that is not its final one is counted as a **wrong lift**:
  committing it there would change the answer.)
- if not, **what stopped it** at the last step before the crossing (its best chance):
  ``coverage`` (Eqs. 7-8: too few fixed positions to its left, h_pot < 1), ``history`` (the filter restarted on a
  flip of the argmax within the last ``fresh_steps`` observations: no trend yet), ``trend`` (a horizon allowed,
  but even the forecast's mean l_h stays under logit(c_min) at every allowed h: too slow a rise for the look-ahead
  H r), or ``spread`` (the mean passes at some allowed h, the lower bound l_h - z sigma_h does not: the filter's
  variance).

Everything is counted per prompt, so each share carries a cluster-bootstrap interval over prompts, and a sweep of
``tau``, ``z`` and ``H`` re-reads the same traces. The other half (does a setting commit earlier without losing
answers in a real decode?) is :func:`decode_check`: Fast-dLLM 0.9 with and without CE on the same problems.

The record: ``python -m tspd ce-audit`` (:mod:`tspd.commands.ce_audit`) writes ``<checkpoint>/ce_audit.json``
(committed for the zoo's models): the command, revision, device, weights hash and settings, the audit's and the
decode check's rows per problem and their summaries. :func:`measure_checkpoint` writes it batch by batch, so an
interrupted audit resumes; :func:`load` reads it, :func:`save` writes one. Its tables: :func:`audit_table` and
:func:`decode_table`.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import torch

from tspd.decoding.config import DecodeConfig
from tspd.decoding.extrapolate import CEConfig, forecast, horizon_terms, left_coverage, logit, replay
from tspd.decoding.loop import generate
from tspd.markdown import dict_table
from tspd.measures.dynamics import DynamicsConfig, block_measures, cluster_interval, cluster_share
from tspd.records.files import measure_by_batch, read_json, write_rows_json

REASONS = ("coverage", "history", "trend", "spread")   # why a rising token was not lifted (the module docstring)


@dataclass(frozen=True)
class AuditConfig:
    """What an audit reads (the dynamics record's definitions of a rise, and how fresh a filter is too fresh)."""
    dynamics: DynamicsConfig = DynamicsConfig()   # rise_steps, certain, min_gain as the dynamics record counts them
    fresh_steps: int = 2                          # a filter with fewer observations of its argmax has no trend yet


# --------------------------------------------------------------------------------------------------------------
# The audit: one block's counts, a prompt's rows, their summary per CE setting; the decode check
# --------------------------------------------------------------------------------------------------------------
def block_audit(conf: torch.Tensor, x0: torch.Tensor, final: torch.Tensor, masked: torch.Tensor, answer: torch.Tensor,
                state: torch.Tensor, lifted: torch.Tensor, ce: CEConfig, cfg: AuditConfig = AuditConfig()) -> dict:
    """Counts of one block of one prompt: ``conf``, ``x0``, ``masked``, ``lifted`` [S, L] over the block's steps
    (``lifted``: CE chose h* > 0), ``state`` [S, L, 5] CE's filter after each step, ``final`` [L] the decoded tokens,
    ``answer`` [L] whether each is an answer token. Returns ``{"rising", "lifted", "steps_earlier", "wrong_lifts",
    "tokens", <reason>: count}``."""
    S, L = conf.shape
    right = x0 == final[None]
    m = block_measures(conf, right, masked, answer, cfg.dynamics)
    tokens = answer & masked[0]
    rising = m.crossed & (m.rise >= cfg.dynamics.rise_steps)              # over the block's answer tokens
    t = torch.arange(S)[:, None].expand(S, L)
    first_high = torch.where(masked & (conf.float() >= cfg.dynamics.certain), t, S).amin(0)
    first_lift = torch.where(masked & lifted, t, S).amin(0)
    early = first_lift < first_high
    lift_right = right.gather(0, first_lift.clamp(max=S - 1)[None])[0]
    out = {"tokens": int(tokens.sum()), "rising": int(rising.sum()),
           "lifted": int((rising & early[tokens] & lift_right[tokens]).sum()),
           "steps_earlier": int(((first_high - first_lift) * (early & lift_right))[tokens][rising].sum()),
           "wrong_lifts": int((early & ~lift_right)[tokens].sum())}
    why = _reasons(x0, masked, state, ce, cfg)                             # [S, L] index into REASONS
    last = (first_high - 1).clamp(min=0)
    at_last = why.gather(0, last[None])[0][tokens]
    missed = rising & ~(early[tokens] & lift_right[tokens])
    for i, name in enumerate(REASONS):
        out[name] = int((missed & (at_last == i)).sum())
    return out


def _reasons(x0: torch.Tensor, masked: torch.Tensor, state: torch.Tensor, ce: CEConfig, cfg: AuditConfig) -> torch.Tensor:
    """[S, L]: which of :data:`REASONS` kept each masked position's lower bound under ``c_min`` at each step
    (coverage first, then a fresh filter, then a mean under the bar at every allowed horizon, else the spread)."""
    S, L = x0.shape
    cov = left_coverage(~masked)                                           # Eq. 7, per step
    h_pot = ce.H * ((cov - ce.tau) / (1 - ce.tau)).clamp(0, 1)             # Eq. 8
    age = torch.zeros(S, L, dtype=torch.long)                              # observations of the current argmax
    for s in range(S):
        same = (x0[s] == x0[s - 1]) & masked[s - 1] if (s > 0 and ce.reset_on_flip) else torch.zeros(L, dtype=torch.bool)
        age[s] = torch.where(same, age[s - 1] + 1, 1) if s > 0 else 1
    horizons = torch.arange(ce.H + 1, dtype=torch.float32)
    mean, _ = forecast(*state.float().unbind(-1), horizon_terms(horizons, ce.q_level, ce.q_vel))   # Eq. 6: [S, L, H + 1]
    allowed = (horizons >= 1) & (horizons <= h_pot[..., None])
    mean_passes = ((mean >= logit(ce.c_min)) & allowed).any(-1)
    return torch.where(h_pot < 1, 0, torch.where(age < cfg.fresh_steps, 1, torch.where(mean_passes, 3, 2)))


def prompt_rows(model, task, problems: list[dict], gen_length: int, block_length: int, settings: dict[str, CEConfig],
                cfg: AuditConfig = AuditConfig()) -> list[dict]:
    """Per problem: its vanilla decoding's answer tokens, and per CE setting (name -> config) the counts of
    :func:`block_audit` summed over its blocks."""
    prompts = [task.prompt(p) for p in problems]
    out = generate(model, prompts, DecodeConfig.of(gen_length=gen_length, block_length=block_length), record_trace=True)
    tr, final = out.trace, out.token_ids.cpu()
    answer = ~torch.isin(final, torch.tensor(model.special.stop_ids()))
    rows = [{"id": p["id"], "vanilla_right": bool(task.right(p, text))} for p, text in zip(problems, out.texts)]
    for name, ce in settings.items():
        rep = replay(tr, ce, block_length)
        for b, row in enumerate(rows):
            total: dict[str, int] = {}
            for k in range(gen_length // block_length):
                lo, hi = k * block_length, (k + 1) * block_length
                steps = (tr.block == k) & tr.masked[:, b, lo:hi].any(-1)
                counts = block_audit(tr.conf[steps, b, lo:hi], tr.x0[steps, b, lo:hi], final[b, lo:hi],
                                     tr.masked[steps, b, lo:hi], answer[b, lo:hi], rep.state[steps, b, lo:hi],
                                     rep.lifted[steps, b, lo:hi], ce, cfg)
                total = {key: total.get(key, 0) + v for key, v in counts.items()}
            row[name] = total
    return rows


def summary(rows: list[dict], settings: list[str]) -> list[dict]:
    """One row per CE setting: rising tokens, the share lifted before their crossing (with its interval), the mean
    steps earlier, wrong lifts per 100 answer tokens, and the share of the missed ones per reason."""
    out = []
    for name in settings:
        get = lambda key, name=name: (lambda r: r[name][key])  # noqa: E731
        rising, lifted = sum(map(get("rising"), rows)), sum(map(get("lifted"), rows))
        missed = lambda r, name=name: sum(r[name][k] for k in REASONS)  # noqa: E731
        out.append({"setting": name, "rising": rising, "lifted": cluster_share(rows, get("lifted"), get("rising"), digits=2),
                    "steps_earlier": round(sum(map(get("steps_earlier"), rows)) / lifted, 2) if lifted else None,
                    "wrong_lifts": cluster_share(rows, get("wrong_lifts"), get("tokens"), digits=2),
                    **{k: cluster_share(rows, get(k), missed, digits=2) for k in REASONS}})
    return out


def sweep(tau=(0.6, 0.3, 0.0), z=(1.645, 1.0, 0.5), H=(20,), base: CEConfig = CEConfig()) -> dict[str, CEConfig]:
    """CE settings by name ``tau=.. z=.. H=..`` (the paper's defaults first), every other field ``base``'s."""
    return {f"tau={t:g} z={q:g} H={h}": dataclasses.replace(base, tau=t, z=q, H=h) for t in tau for q in z for h in H}


def decode_check(model, task, problems: list[dict], gen_length: int, block_length: int, settings: dict[str, CEConfig],
                 threshold: float = 0.9, batch: int = 10) -> list[dict]:
    """Per problem: Fast-dLLM at ``threshold`` without CE (``none``) and with each CE setting: forwards and whether
    the answer is right (the same problems, so each setting is paired with ``none``)."""
    rows = [{"id": p["id"]} for p in problems]
    runs = {"none": None, **settings}
    for i in range(0, len(problems), batch):
        chunk, prompts = problems[i:i + batch], [task.prompt(p) for p in problems[i:i + batch]]
        for name, ce in runs.items():
            d = DecodeConfig.of(controller="fast-dllm", threshold=threshold, gen_length=gen_length,
                                block_length=block_length, ce=ce is not None,
                                ce_kwargs=dataclasses.asdict(ce) if ce is not None else {})
            g = generate(model, prompts, d)
            for j, p in enumerate(chunk):
                rows[i + j][name] = {"nfe": g.nfe_per_sample[j], "right": bool(task.right(p, g.texts[j]))}
    return rows


def decode_summary(rows: list[dict], settings: list[str], seed: int = 0) -> list[dict]:
    """Per setting against ``none`` on the same problems: right answers, forwards a problem, and the forwards' ratio
    with its 95 % cluster-bootstrap interval (problems resampled)."""
    out = []
    for name in ["none", *settings]:
        pairs = [(r[name]["nfe"], r["none"]["nfe"]) for r in rows]
        ratio = cluster_interval(pairs, lambda ps: sum(a for a, _ in ps) / sum(b for _, b in ps), digits=4, seed=seed)
        out.append({"setting": name, "n": len(rows), "right": sum(r[name]["right"] for r in rows),
                    "forwards": round(sum(a for a, _ in pairs) / len(rows), 2), "over_none": ratio})
    return out


# --------------------------------------------------------------------------------------------------------------
# The record: <checkpoint>/ce_audit.json, measured batch by batch
# --------------------------------------------------------------------------------------------------------------
FILENAME = "ce_audit.json"


def path_of(checkpoint: str | Path | None) -> Path:
    """The record of the checkpoint (a zoo name or a directory)."""
    from tspd.models.loading import resolve_path
    return Path(resolve_path(checkpoint)) / FILENAME


def load(checkpoint: str | Path | None, path: str | Path | None = None) -> dict | None:
    """The checkpoint's record (or the one at ``path``); None where it has none."""
    path = Path(path) if path else path_of(checkpoint)
    return read_json(path) if path.is_file() else None


def save(path: str | Path, record: dict) -> Path:
    """Write the record atomically, its per-problem rows one line each (as the dynamics record)."""
    return write_rows_json(path, record)


def measure_checkpoint(model: str, n: int = 40, batch: int = 10, settings: dict[str, CEConfig] | None = None,
                       device: str = "cpu", command: str = "", log=print) -> dict:
    """The checkpoint's audit record (``<checkpoint>/ce_audit.json``) on the first ``n`` problems of its task's test
    split: per batch the audit of every setting and the decode check, the record written after each batch (an
    interrupted run resumes; changed weights or settings measure every row again)."""
    from tspd.models.loading import Checkpoint, load_model, task_spec, weights_hash
    from tspd.provenance import device_name, git_revision
    from tspd.tasks.generated import generated_task
    from tspd.validate import UsageError
    settings = settings or sweep()
    checkpoint = Checkpoint.open(model)
    spec = task_spec(checkpoint)
    if not spec:
        raise UsageError(f"{checkpoint.path} names no generated task in its config.json: the audit decodes a "
                         "train-lm checkpoint's own task")
    task, path = generated_task(spec["name"]), path_of(checkpoint.path)
    problems = task.load_split("test", n)
    meta = {"command": command, "git": git_revision() or "unknown", "device": device_name(device), "model": str(model),
            "weights": weights_hash(checkpoint), "task": spec["name"], "gen_length": spec["gen_length"],
            "block_length": spec["block_length"], "settings": {k: dataclasses.asdict(v) for k, v in settings.items()}}
    lm = []                                       # the model, loaded once there is something to measure

    def measure(chunk):
        lm[:] = lm or [load_model(checkpoint, device=device)]
        audited = prompt_rows(lm[0], task, chunk, spec["gen_length"], spec["block_length"], settings)
        decoded = decode_check(lm[0], task, chunk, spec["gen_length"], spec["block_length"], settings, batch=batch)
        return [{**a, "decode": {k: v for k, v in d.items() if k != "id"}} for a, d in zip(audited, decoded)]

    def summarize(rows):
        return {"audit": summary(rows, list(settings)),
                "decode": decode_summary([{"id": r["id"], **r["decode"]} for r in rows], list(settings))}
    return measure_by_batch(path, meta, ("weights", "settings", "gen_length", "block_length"), problems, batch, measure,
                            summarize, f"ce-audit {model}", log)


# --------------------------------------------------------------------------------------------------------------
# The record's tables
# --------------------------------------------------------------------------------------------------------------
def _pct(share: dict | None) -> str:
    return "-" if share is None else f"{share['value']:.1f} ({share['lo']:.1f}-{share['hi']:.1f})"


def audit_rows(record: dict) -> list[dict]:
    """The record's audit, one row per CE setting: the rising tokens, the share lifted before their crossing, the
    steps gained, wrong lifts, and what held the rest (shares with 95 % intervals over problems)."""
    n = len(record["rows"])
    return [{f"CE setting ({n} problem{'s' * (n != 1)})": a["setting"], "rising tokens": a["rising"],
             "lifted before 0.9, %": _pct(a["lifted"]),
             "steps earlier (mean)": "-" if a["steps_earlier"] is None else a["steps_earlier"],
             "wrong lifts, % of answer tokens": _pct(a["wrong_lifts"]),
             **{f"held by {k}, % of the rest": _pct(a[k]) for k in REASONS}} for a in record["audit"]]


def decode_rows(record: dict) -> list[dict]:
    """The record's decode check, one row per setting: Fast-dLLM 0.9 without CE and with each setting on the same
    problems: right answers, forwards a problem, and the forwards against no CE with its 95 % interval."""
    return [{"Fast-dLLM 0.9 + CE setting": d["setting"], "right": f"{d['right']} / {d['n']}",
             "forwards a problem": f"{d['forwards']:.1f}",
             "forwards / no CE's": f"{d['over_none']['value']:.3f} ({d['over_none']['lo']:.3f}-{d['over_none']['hi']:.3f})"}
            for d in record["decode"]]


def audit_table(record: dict) -> str:
    """:func:`audit_rows` as a Markdown table (the command's output)."""
    return "\n".join(dict_table(audit_rows(record)))


def decode_table(record: dict) -> str:
    """:func:`decode_rows` as a Markdown table (the command's output)."""
    return "\n".join(dict_table(decode_rows(record)))


__all__ = ["AuditConfig", "REASONS", "block_audit", "prompt_rows", "summary", "sweep", "decode_check", "decode_summary",
           "FILENAME", "path_of", "load", "save", "measure_checkpoint", "audit_rows", "decode_rows", "audit_table",
           "decode_table"]
