"""train-lm's batch stream: worker processes build the same batches the one thread would, in order, and fail
loudly; scripts/stream_rate.py times them."""
from __future__ import annotations

import pytest
import torch

from tspd.models.char_tokenizer import build_tokenizer
from tspd.training.lm.config import LMTrainConfig
from tspd.training.lm.stream import BatchStream


@pytest.fixture(scope="module")
def tokenizer():
    return build_tokenizer()


def test_worker_processes_build_the_threads_batches_in_order(tokenizer):
    opts = dict(out="", batch_size=4, gen_length=64, long_windows="128:0.3", alter_frac=0.5, swap_frac=0.5)
    thread = BatchStream(tokenizer, LMTrainConfig(**opts))
    workers = BatchStream(tokenizer, LMTrainConfig(**opts, data_workers=3), skip_batches=2)
    try:
        first = [next(thread) for _ in range(12)]
        later = [next(workers) for _ in range(10)]
        assert all(torch.equal(x.input_ids, y.input_ids) and torch.equal(x.position_ids, y.position_ids)
                   for x, y in zip(first[2:], later))
        assert len({x.input_ids.shape for x in later}) > 1      # both windows reached the workers' batches
    finally:
        thread.close(), workers.close()
    assert not any(b.is_alive() for b in workers.builders)


def test_batch_seeds_give_each_batch_its_own_draw_whoever_builds_it(tokenizer):
    opts = dict(out="", batch_size=4, gen_length=64, alter_frac=0.5, batch_seeds=True)
    thread = BatchStream(tokenizer, LMTrainConfig(**opts))
    workers = BatchStream(tokenizer, LMTrainConfig(**opts, data_workers=2), skip_batches=3)
    stream = BatchStream(tokenizer, LMTrainConfig(**{**opts, "batch_seeds": False}))
    try:
        first = [next(thread) for _ in range(8)]
        later = [next(workers) for _ in range(5)]
        assert all(torch.equal(x.input_ids, y.input_ids) for x, y in zip(first[3:], later))   # resumed, in workers
        assert not torch.equal(first[0].input_ids, next(stream).input_ids)      # other problems than the one stream's
    finally:
        thread.close(), workers.close(), stream.close()


def test_a_worker_process_hands_its_error_to_the_loop(tokenizer):
    stream = BatchStream(tokenizer, LMTrainConfig(out="", batch_size=2, gen_length=16, data_workers=2))
    try:
        with pytest.raises(ValueError, match="building a training batch failed: an answer of .* give --gen-length"):
            next(stream)          # a ValueError: the command line prints it as one line
    finally:
        stream.close()


def test_a_killed_worker_process_is_an_error_not_a_wait(tokenizer):
    stream = BatchStream(tokenizer, LMTrainConfig(out="", batch_size=2, gen_length=64, data_workers=2))
    try:
        next(stream)
        stream.builders[1].kill()
        stream.builders[1].join()
        with pytest.raises(RuntimeError, match="building a training batch failed"):
            for _ in range(12):      # what the dead worker had queued, then the error
                next(stream)
    finally:
        stream.close()


def _stream_rate():
    import importlib.util
    from tspd.provenance import REPO_ROOT
    spec = importlib.util.spec_from_file_location("stream_rate", REPO_ROOT / "scripts" / "stream_rate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_stream_rate_times_each_worker_count_and_names_the_fastest(tmp_path, capsys):
    build_tokenizer(tmp_path)
    main = _stream_rate().main
    assert main(["--workers", "0", "--seconds", "0.2", "--", "--out", str(tmp_path), "--batch-size", "2",
                 "--gen-length", "64"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == "0" and "workers 0:" in err and "problems/s" in err
    assert main(["--", "--out", str(tmp_path / "none")]) == 2                 # no started run: one line
    assert "no tokenizer.json" in capsys.readouterr().err
