"""Model configuration read from a checkpoint's ``config.json``.

The field names are LLaDA's own (``d_model``, ``n_layers``, ``mlp_hidden_size``, ...), so a
LLaDA-8B-Instruct directory and the embedded ``tiny-arith`` model share one reader.
Token ids are part of the config; nothing in the package hard-codes them.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class LLaDAConfig:
    d_model: int = 4096
    n_layers: int = 32
    n_heads: int = 32
    n_kv_heads: int | None = None      # None -> n_heads (no GQA); LLaDA-8B has 32/32
    mlp_hidden_size: int = 12288       # SwiGLU width (ff_proj / up_proj rows)
    vocab_size: int = 126464
    embedding_size: int | None = None  # rows of wte / ff_out; LLaDA pads vocab up to this
    max_sequence_length: int = 4096
    rope_theta: float = 500000.0
    rms_norm_eps: float = 1e-5
    weight_tying: bool = False         # LLaDA's head is untied (model.transformer.ff_out)
    mask_token_id: int | None = None   # [MASK]; 126336 for LLaDA-8B, read from the file
    eos_token_id: int | None = None
    pad_token_id: int | None = None
    model_type: str = "llada"
    extra: dict[str, Any] = field(default_factory=dict)  # every other field of config.json, kept verbatim

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @property
    def kv_heads(self) -> int:
        return self.n_kv_heads or self.n_heads

    @property
    def rows(self) -> int:
        """Rows of the embedding and the head (LLaDA pads ``vocab_size`` up to ``embedding_size``)."""
        return self.embedding_size or self.vocab_size

    def validate(self) -> None:
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}")
        if self.n_heads % self.kv_heads:
            raise ValueError(f"n_heads={self.n_heads} is not a multiple of n_kv_heads={self.kv_heads}")
        if self.head_dim % 2:
            raise ValueError(f"head_dim={self.head_dim} must be even for rotary embeddings")

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "LLaDAConfig":
        names = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        known = {k: v for k, v in d.items() if k in names}
        cfg = cls(**known, extra={k: v for k, v in d.items() if k not in names})
        cfg.validate()
        return cfg

    def to_dict(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "extra"}
        d.update(self.extra)
        d.setdefault("architectures", ["LLaDAModelLM"])
        return d

    def save(self, directory: str | Path) -> None:
        Path(directory, "config.json").write_text(json.dumps(self.to_dict(), indent=2) + "\n")
