"""The shipped lm-eval tasks' data and metrics (the YAMLs in ``tasks/`` reach them via their ``utils.py``).

The tasks are offline and grade exactly as the project harness does (:mod:`tspd.tasks.registry`):

- ``tspd_arith``, ``tspd_chain``, ``tspd_roster`` and ``tspd_leaning_shell``: the 500 held-out problems of the
  generated task (:mod:`tspd.tasks.arith`, :mod:`tspd.tasks.chain`, :mod:`tspd.tasks.roster`,
  :mod:`tspd.tasks.leaning_shell`), generated locally (no file to go stale when the task changes); prompt = the
  question; graded by the task's own ``grade`` (arith, chain and leaning_shell: exact match of the ``#### N``
  number; roster: the whole answer). They differ only
  in the task module: one pair of functions serves all (:func:`generated_dataset`, :func:`process_generated`).
- ``tspd_gsm8k``: GSM8K from local JSONL files (``<data_dir>/gsm8k/{test,train}.jsonl``; ``data_dir`` from
  ``--metadata '{"data_dir": ...}'``, else ``$TSPD_DATA_DIR`` or the project's default), lm-eval's 5-shot
  ``Question: ...\\nAnswer:`` format with the first 5 train problems; ``exact_match`` is the flexible
  extract (the harness's ``accuracy``), ``exact_match_strict`` the strict ``#### N``.

Beside the accuracy each sample reports the adapter's ``nfe`` (mean in the results table), a
``tokens_per_second`` record whose aggregate is the harness's TPS (:func:`tspd.eval.results.throughput`:
sum of B * L_gen over batch wall time, the warm-up batch left out) and a ``tpf`` record (the sample's
generated tokens other than EOS/EoT, pad and mask, its forwards and their ratio) whose aggregate is the
run's TPF (:func:`tspd.eval.results.tpf`: all such tokens over all forwards). Models other than ``tspd``
carry no record: NaN NFE, no TPS, no TPF.
"""
from __future__ import annotations

import math

TPS_FIELDS = ("batch", "batch_size", "batch_seconds", "gen_length", "warmup", "gen_tokens")


def _datasets(splits: dict[str, list[dict]]):
    import datasets
    return datasets.DatasetDict({name: datasets.Dataset.from_list(rows) for name, rows in splits.items()})


def generated_dataset(name: str):
    """``{"test": the test split of the generated task name}`` (``id, question, answer, final, template``)."""
    from tspd.tasks.registry import get_task
    return _datasets({"test": get_task(name).samples()})


def arith_dataset(**metadata):
    """The arith test split (metadata is ignored)."""
    return generated_dataset("arith")


def chain_dataset(**metadata):
    """The chain test split (metadata is ignored)."""
    return generated_dataset("chain")


def roster_dataset(**metadata):
    """The roster test split (metadata is ignored)."""
    return generated_dataset("roster")


def leaning_shell_dataset(**metadata):
    """The leaning_shell test split (metadata is ignored)."""
    return generated_dataset("leaning_shell")


def gsm8k_dataset(data_dir: str | None = None, **metadata):
    """``{"test", "train"}`` GSM8K rows (``question, answer``) from the local JSONL files the harness reads."""
    from tspd.tasks.data import TaskDataError, data_file, read_data
    splits = {}
    for split in ("test", "train"):
        try:
            path = data_file(data_dir, f"gsm8k/{split}.jsonl")
        except TaskDataError as e:   # the harness's hint names its own --data-dir
            raise TaskDataError(str(e).replace("pass --data-dir", "pass --metadata '{\"data_dir\": DIR}'")) from None
        rows = read_data(path)
        splits[split] = [{"id": f"gsm8k/{split}/{i}", "question": r["question"], "answer": r["answer"]}
                         for i, r in enumerate(rows)]
    return _datasets(splits)


def _speed(response) -> dict:
    record = getattr(response, "tspd", None) or {}
    return {"nfe": float(record["nfe"]) if "nfe" in record else math.nan,
            "tokens_per_second": {k: record[k] for k in TPS_FIELDS if k in record} if record else None,
            "tpf": _tpf_record(record)}


def _tpf_record(record: dict) -> dict | None:
    """``{gen_tokens, nfe, tpf}`` of one sample (None without the adapter's counts)."""
    from tspd.eval.results import row_tpf
    if record.get("gen_tokens") is None or not record.get("nfe"):
        return None
    return {"gen_tokens": record["gen_tokens"], "nfe": record["nfe"], "tpf": row_tpf(record)}


def process_generated(name: str, doc: dict, results: list) -> dict:
    """Graded as ``python -m tspd eval --task name`` grades (the task's ``grade``), with the speed records."""
    from tspd.tasks.registry import get_task
    grade = get_task(name).grade(doc, str(results[0]))
    return {"exact_match": float(grade["correct"]), **_speed(results[0])}


def process_arith(doc: dict, results: list) -> dict:
    return process_generated("arith", doc, results)


def process_chain(doc: dict, results: list) -> dict:
    return process_generated("chain", doc, results)


def process_roster(doc: dict, results: list) -> dict:
    return process_generated("roster", doc, results)


def process_leaning_shell(doc: dict, results: list) -> dict:
    return process_generated("leaning_shell", doc, results)


def process_gsm8k(doc: dict, results: list) -> dict:
    from tspd.tasks.grading import grade_gsm8k
    grade = grade_gsm8k(str(results[0]), doc["answer"])
    return {"exact_match": float(grade["correct"]), "exact_match_strict": float(grade["correct_strict"]),
            **_speed(results[0])}


def aggregate_tps(items: list) -> float:
    """The harness's TPS over the samples' records (NaN without any)."""
    from tspd.eval.results import throughput
    rows = [r for r in items if r]
    tps = throughput(rows)["tps"] if rows else None
    return math.nan if tps is None else tps


def aggregate_tpf(items: list) -> float:
    """The run's TPF over the samples' records (NaN without any): a ratio of sums, not a mean of ratios."""
    from tspd.eval.results import tpf
    value = tpf([r for r in items if r])
    return math.nan if value is None else value
