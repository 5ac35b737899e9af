"""bench-loop on the embedded model: the bare replay runs the loop's own forwards, and the results file
says what it measured and how (no timing asserted)."""
from __future__ import annotations

import argparse
import json

import torch

from tspd import DecodeConfig, generate, load_model
from tspd.bench import loop as bench_loop
from tspd.commands import bench_loop as bench_loop_command
from tspd.provenance import device_name


def test_the_bare_replay_runs_the_loops_forwards():
    model = load_model("tiny-arith")
    ids, source = bench_loop.prompts(model, 2, 48)
    assert len(ids) == 2 and "test split" in source
    config = DecodeConfig(controller="fast-dllm", cache="dual", gen_length=64, block_length=32)
    calls = bench_loop.recorded_forwards(model, ids[0], config)
    out = generate(model, [ids[0]], config)
    assert len(calls) == out.nfe
    first, later = calls[0], calls[-1]
    assert first[2] and first[0].shape[1] == len(ids[0]) + 64          # a block's first forward: the whole canvas
    if len(calls) > 2:
        assert later[0].shape[1] == 32                                  # dual cache: the block only
    bench_loop.replay_forwards(model, calls)                            # runs, fresh cache and all


def test_bench_loop_writes_its_provenance_and_one_row_per_setting(tmp_path):
    p = argparse.ArgumentParser()
    bench_loop_command.add_arguments(p)
    out = tmp_path / "loop-{device}.json"
    args = p.parse_args(["--n", "1", "--repeats", "1", "--controllers", "vanilla,tspd", "--ce", "on",
                         "--caches", "dual", "--gen-length", "32", "--block-length", "32", "--note", "a test",
                         "--out", str(out)])
    before = torch.get_num_threads()
    assert bench_loop_command.main(args) == 0
    written = list(tmp_path.glob("loop-*.json"))
    assert len(written) == 1
    res = json.loads(written[0].read_text())
    assert res["device"] == device_name("cpu") and res["note"] == "a test" and res["batch"] == 1
    assert res["command"].startswith("python -m tspd bench-loop") and "revision" in res
    assert [(r["policy"], r["ce"], r["cache"]) for r in res["rows"]] == [("vanilla", True, "dual"), ("tspd", True, "dual")]
    tspd_row = res["rows"][1]
    assert tspd_row["target"] == 0.15 and isinstance(tspd_row["meets_target"], bool)
    assert res["rows"][0]["target"] is None and res["rows"][0]["meets_target"] is None
    assert set(tspd_row["phases_of_forward"]) == {"ce", "controller", "statistics_view_commit"}
    assert tspd_row["nfe"] >= 1 and tspd_row["forward_ms"] > 0
    assert torch.get_num_threads() == before


def test_the_step_speed_page_reads_every_committed_loop_file_as_percentages(tmp_path):
    from tspd.book import loop_speed
    from tspd.provenance import REPO_ROOT
    row = {"policy": "tspd", "ce": True, "cache": "dual", "forward_ms": 1.5, "rest_of_forward": 0.2,
           "target": 0.15, "meets_target": False,
           "phases_of_forward": {"ce": 0.05, "controller": 0.04, "statistics_view_commit": 0.03}}
    plain = {**row, "policy": "vanilla", "ce": False, "target": None, "meets_target": None}
    near = {**row, "cache": "prefix", "rest_of_forward": 0.1504}        # one decimal would read as the target
    result = {"rows": [row, plain, near], "device": "a CPU", "torch": "2", "threads": 1, "revision": "abc",
              "model": "tiny-arith", "gen_length": 64, "block_length": 32, "batch": 1, "prompts": "p",
              "repeats": 1, "command": "python -m tspd bench-loop --n 1"}
    (tmp_path / "loop-a.json").write_text(json.dumps(result))
    (tmp_path / "other.json").write_text("{}")                          # not a bench-loop file: not read
    [(path, read)] = loop_speed.loop_results(tmp_path)
    first, second, third = loop_speed.loop_rows(read)
    assert third["rest of a step (% of forward)"] == "15.04" and second["rest of a step (% of forward)"] == 20.0
    assert first["rest of a step (% of forward)"] == "20.0" and first["target (%)"] == 15.0 and first["met"] is False
    assert (first["CE (%)"], first["controller (%)"], first["statistics + view + commit (%)"]) == (5.0, 4.0, 3.0)
    assert second["target (%)"] is None and second["met"] is None and second["CE"] is False and second["CE (%)"] is None
    caption = loop_speed.loop_caption(path, read)
    assert caption.startswith("loop-a.json: a CPU") and caption.endswith(result["command"])
    committed = loop_speed.loop_results(REPO_ROOT / "results" / "bench")
    assert committed and all(len(loop_speed.loop_rows(r)) == len(r["rows"]) > 0 for _, r in committed)
    fig = loop_speed.draw_loop(read, "t")
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["TSPD + CE / dual", "vanilla / dual", "TSPD + CE / prefix"]
