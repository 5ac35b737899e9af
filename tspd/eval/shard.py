"""Sharded evaluation: ``torchrun`` / ``accelerate launch -m tspd eval ...`` over several processes.

Both launchers export ``RANK``, ``WORLD_SIZE`` and ``LOCAL_RANK``. Process r of W takes the samples
r, r + W, r + 2W, ... and appends its rows to its own file ``FILE.shard-r-of-W.jsonl`` (so a killed
run resumes per shard). When every process is done (a barrier over a gloo process group, which
works on CPUs and GPUs alike) rank 0 merges the shard files into ``FILE.jsonl`` in sample order,
removes them and writes the summary.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from tspd.records.rows import ResultsFile


@dataclass(frozen=True)
class Shard:
    rank: int = 0
    world: int = 1
    local_rank: int = 0

    @classmethod
    def from_env(cls) -> "Shard":
        world = int(os.environ.get("WORLD_SIZE", "1"))
        rank = int(os.environ.get("RANK", "0"))
        if not 0 <= rank < world:
            raise ValueError(f"RANK={rank} is outside WORLD_SIZE={world}")
        return cls(rank, world, int(os.environ.get("LOCAL_RANK", str(rank))))

    @property
    def active(self) -> bool:
        return self.world > 1

    def take(self, samples: list) -> list:
        """This process's share of the samples (round robin, so shards are balanced)."""
        return samples[self.rank::self.world]

    def device(self, device: str) -> str:
        """``cuda`` becomes this process's own GPU (``cuda:LOCAL_RANK``)."""
        return f"cuda:{self.local_rank}" if self.active and device == "cuda" else device

    def path(self, out: str | Path) -> Path:
        out = Path(out)
        if not self.active:
            return out
        return out.with_name(f"{out.stem}.shard-{self.rank}-of-{self.world}{out.suffix}")

    def barrier(self) -> None:
        """Wait for every process (initialises a gloo group from the launcher's env:// settings)."""
        if not self.active:
            return
        import torch.distributed as dist
        if not dist.is_initialized():
            dist.init_process_group("gloo", rank=self.rank, world_size=self.world)
        dist.barrier()

    def close(self) -> None:
        import torch.distributed as dist
        if self.active and dist.is_initialized():
            dist.destroy_process_group()


def shard_files(out: str | Path) -> list[Path]:
    out = Path(out)
    return sorted(out.parent.glob(f"{out.stem}.shard-*-of-*{out.suffix}"))


def merge(out: str | Path, order: list[str]) -> list[dict]:
    """Rows of ``out`` and every shard file, one per id in ``order`` first, written back to ``out``.

    The file is replaced atomically (:meth:`~tspd.records.rows.ResultsFile.keep`), then the shard files
    are removed; rows of ids outside ``order`` (e.g. beyond ``--limit``) are kept after them.
    """
    out = Path(out)
    rows: dict[str, dict] = {}
    for f in [out, *shard_files(out)]:
        for r in ResultsFile(f).load():
            rows.setdefault(r["id"], r)
    rank = {sid: i for i, sid in enumerate(order)}
    merged = sorted(rows.values(), key=lambda r: rank.get(r["id"], len(rank)))
    ResultsFile(out).keep(merged)
    for f in shard_files(out):
        f.unlink()
    return merged
