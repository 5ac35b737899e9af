"""Sharded evaluation: two gloo processes give the rows of one process; shard files merge by id."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tspd.eval.shard import Shard, merge, shard_files

from conftest import TEST_MODEL

ROOT = Path(__file__).resolve().parents[1]
EVAL = ["-m", "tspd", "eval", "--task", "arith", "--model", TEST_MODEL, "--limit", "6", "--gen-length", "64",
        "--block-length", "32", "--controller", "fast-dllm", "--threshold", "0.7", "--batch-size", "2"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rows(path: Path) -> dict[str, tuple]:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return {r["id"]: (r["output"], r["correct"], r["nfe"], r["gen_tokens"]) for r in rows}


def test_shards_take_disjoint_round_robin_shares(tmp_path):
    shards = [Shard(r, 3) for r in range(3)]
    ids = list(range(10))
    parts = [s.take(ids) for s in shards]
    assert sorted(sum(parts, [])) == ids and parts[1] == [1, 4, 7]
    assert shards[2].path(tmp_path / "x.jsonl").name == "x.shard-2-of-3.jsonl"
    assert Shard(0, 1).path(tmp_path / "x.jsonl").name == "x.jsonl"
    assert Shard(1, 2, local_rank=1).device("cuda") == "cuda:1" and Shard(1, 2).device("cpu") == "cpu"


def test_merge_orders_rows_and_removes_shard_files(tmp_path):
    out = tmp_path / "r.jsonl"
    out.write_text(json.dumps({"id": "b", "v": 0}) + "\n")
    (tmp_path / "r.shard-0-of-2.jsonl").write_text(json.dumps({"id": "c", "v": 1}) + "\n")
    (tmp_path / "r.shard-1-of-2.jsonl").write_text(
        json.dumps({"id": "a", "v": 2}) + "\n" + json.dumps({"id": "b", "v": 9}) + "\n")
    def read(f) -> list[dict]:
        return [json.loads(x) for x in Path(f).read_text().splitlines()]

    merged = merge(out, ["a", "b", "c"])
    assert [(r["id"], r["v"]) for r in merged] == [("a", 2), ("b", 0), ("c", 1)]
    assert read(out) == merged and shard_files(out) == []


@pytest.mark.skipif(not (ROOT / "tspd" / "zoo" / TEST_MODEL / "config.json").exists(),
                    reason="embedded model not built")
@pytest.mark.slow
def test_two_gloo_processes_match_one_process(tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    subprocess.run([sys.executable, *EVAL, "--out", str(one)], cwd=ROOT, env=env, check=True,
                   capture_output=True, timeout=600)
    launch = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
              "--master-addr", "127.0.0.1", "--master-port", str(_free_port())]
    done = subprocess.run([*launch, *EVAL, "--out", str(two)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert _rows(two) == _rows(one) and len(_rows(one)) == 6
    assert shard_files(two) == []
    summary = json.loads((tmp_path / "two.summary.json").read_text())
    assert summary["n"] == 6 and summary["shards"] == 2
