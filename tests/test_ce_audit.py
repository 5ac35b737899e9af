"""The CE audit (tspd.measures.ce_audit) on hand-made traces: a steady rise is lifted before its crossing when CE
may look ahead, and the reason it is not says which of CE's gates held it; a shipped audit reproduces its first
problems."""
import pytest
import torch

from tspd.decoding.extrapolate import CEConfig, replay
from tspd.decoding.recorder import Trace
from tspd.measures.ce_audit import REASONS, audit_table, block_audit, decode_summary, decode_table, summary

RISE = [0.3, 0.45, 0.6, 0.7, 0.8, 0.86, 0.95]   # one token's confidence, step by step, on its final argmax


def _audit(confs: list[list[float]], masked_until: list[int], ce: CEConfig, answer=None) -> dict:
    """Audit one block whose position j has confidences ``confs[j]`` and is masked through step ``masked_until[j]``."""
    S, L = len(confs[0]), len(confs)
    conf = torch.tensor(confs).T[:, None, :]                                  # [S, 1, L]
    masked = (torch.arange(S)[:, None] <= torch.tensor(masked_until)[None])[:, None, :]
    x0 = torch.full((S, 1, L), 7)
    zeros = torch.zeros(S, 1, L)
    trace = Trace(conf=conf, entropy=zeros, margin=zeros, x0=x0, committed=zeros.bool(), masked=masked,
                  seen_conf=conf, block=torch.zeros(S, dtype=torch.long))
    rep = replay(trace, ce, block_length=L)
    answer = torch.ones(L, dtype=torch.bool) if answer is None else torch.tensor(answer)
    return block_audit(conf[:, 0], x0[:, 0], x0[-1, 0], masked[:, 0], answer, rep.state[:, 0], rep.lifted[:, 0], ce)


def test_a_steady_rise_is_lifted_before_its_crossing():
    out = _audit([RISE], [6], CEConfig(tau=0.0, z=0.0))
    assert out["rising"] == 1 and out["lifted"] == 1 and out["steps_earlier"] >= 1 and out["wrong_lifts"] == 0


def test_a_wide_lower_bound_holds_the_rise_back_and_says_so():
    out = _audit([RISE], [6], CEConfig(tau=0.0, z=50.0))
    assert out["lifted"] == 0 and out["spread"] == 1


def test_coverage_holds_a_token_whose_left_is_still_masked():
    low = [0.2] * len(RISE)                                                   # position 0 stays masked, not an answer
    out = _audit([low, RISE], [6, 6], CEConfig(tau=0.6, z=0.0), answer=[False, True])
    assert out["rising"] == 1 and out["lifted"] == 0 and out["coverage"] == 1


def test_the_summary_shares_count_per_setting():
    rows = [{"id": i, "a": {"tokens": 10, "rising": 2, "lifted": i % 2, "steps_earlier": i % 2, "wrong_lifts": 0,
                            **{k: (2 - i % 2 if k == "spread" else 0) for k in REASONS}}} for i in range(4)]
    (s,) = summary(rows, ["a"])
    assert s["rising"] == 8 and s["lifted"]["value"] == 25.0 and s["spread"]["value"] == 100.0
    assert s["lifted"]["lo"] <= 25.0 <= s["lifted"]["hi"]


def test_the_decode_check_pairs_each_setting_with_no_ce():
    rows = [{"id": i, "none": {"nfe": 10, "right": True}, "a": {"nfe": 8, "right": i > 0}} for i in range(3)]
    none, a = decode_summary(rows, ["a"])
    assert none["over_none"]["value"] == 1.0 and a["over_none"]["value"] == 0.8 and a["right"] == 2


def test_the_tables_show_every_setting_with_its_interval_and_a_dash_where_nothing_rose():
    rows = [{"id": 0, "a": {"tokens": 5, "rising": 0, "lifted": 0, "steps_earlier": 0, "wrong_lifts": 0,
                            **dict.fromkeys(REASONS, 0)},
             "decode": {"none": {"nfe": 10, "right": True}, "a": {"nfe": 9, "right": True}}}]
    record = {"rows": rows, "audit": summary(rows, ["a"]),
              "decode": decode_summary([{"id": 0, **rows[0]["decode"]}], ["a"])}
    audit, decode = audit_table(record), decode_table(record)
    assert "| a | 0 | - | - |" in audit and "(1 problem)" in audit
    assert "| a | 1 / 1 | 9.0 | 0.900 (0.900-0.900) |" in decode


def _audited():
    from tspd.models.loading import ZOO
    return sorted(p.parent.name for p in ZOO.glob("*/ce_audit.json"))


@pytest.mark.slow
@pytest.mark.parametrize("name", _audited())
def test_a_shipped_ce_audit_reproduces_its_first_problems(name):
    """The first problems of a zoo model's committed CE audit, audited and decoded again with the current code at the
    record's settings: the same counts and the same forwards and answers, problem by problem (3 of its first batch:
    a vanilla row does not depend on its batch-mates, as the dynamics record's test finds)."""
    from tspd.measures import ce_audit
    from tspd.models.loading import load_model, resolve_path, weights_hash
    from tspd.tasks.generated import generated_task
    record, path = ce_audit.load(name), resolve_path(name)
    assert record["weights"] == weights_hash(path), "the zoo model changed: rerun python -m tspd ce-audit"
    settings = {k: CEConfig(**v) for k, v in record["settings"].items()}
    task, model = generated_task(record["task"]), load_model(path)
    problems = task.load_split("test", 3)
    audited = ce_audit.prompt_rows(model, task, problems, record["gen_length"], record["block_length"], settings)
    decoded = ce_audit.decode_check(model, task, problems, record["gen_length"], record["block_length"], settings)
    for got, again, stored in zip(audited, decoded, record["rows"][:3]):
        assert {**got, "decode": {k: v for k, v in again.items() if k != "id"}} == stored
