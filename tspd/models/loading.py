"""Load a diffusion LM from a local HF checkpoint directory (``tspd.load_model``).

The model is built on the meta device and every tensor is read from safetensors straight onto the
target device and dtype, one tensor at a time, so two full copies never exist in memory.
Hub ids cannot be downloaded here; pass a local directory (``huggingface-cli download`` it elsewhere).
"""
from __future__ import annotations

import hashlib
import io
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open

from tspd.models.fused import fuse_projections, is_fused
from tspd.models.pointwise import compiles_here, use_compiled
from tspd.models.config import LLaDAConfig
from tspd.models.dream import DreamConfig, DreamModelLM
from tspd.models.llada import LLaDAModelLM
from tspd.models.llada_moe import LLaDAMoEConfig, LLaDAMoEModelLM
from tspd.validate import check_device

ZOO = Path(__file__).resolve().parent.parent / "zoo"   # tspd/zoo: the embedded checkpoints
# The book's model, kept as data in tspd/zoo/book.json: every default of the package that names a model names
# this one (the notebooks' parameter cells name it too; tests/test_notebooks.py checks that they agree).
# scripts/switch_book.py rewrites that file and the parameter cells (scripts/ship_model.sh's header).
BOOK_MODEL_FILE = ZOO / "book.json"
DEFAULT_MODEL: str = json.loads(BOOK_MODEL_FILE.read_text())["model"]

# config.json "model_type" -> (config class, model class): the one backbone registry. Dream's released
# config.json says "Dream"; "lladamoe" is the LLaDA-MoE remote code's own model_type.
ARCHITECTURES: dict[str, tuple[type, type]] = {
    "llada": (LLaDAConfig, LLaDAModelLM),
    "Dream": (DreamConfig, DreamModelLM), "dream": (DreamConfig, DreamModelLM),
    "lladamoe": (LLaDAMoEConfig, LLaDAMoEModelLM), "llada_moe": (LLaDAMoEConfig, LLaDAMoEModelLM),
}


def checkpoint_model_type(raw: dict) -> str:
    """The :data:`ARCHITECTURES` key for a raw ``config.json``.

    Released LLaDA-MoE checkpoints reportedly say ``"model_type": "llada"`` with ``"architectures":
    ["LLaDAMoEModel"]`` (ZHZisZZ/dllm-trainer's README tells users to edit it to ``lladamoe``; unsloth's
    diffusion profiles route on the architecture name; verify on the download), so the architecture
    name decides where it names LLaDA-MoE.
    """
    archs = raw.get("architectures") or []
    if any(a.startswith("LLaDAMoE") for a in archs):
        return "lladamoe"
    return raw.get("model_type", "llada")


class CheckpointError(ValueError):
    """A model directory that is missing, incomplete or of an unknown architecture."""


@dataclass
class SpecialTokens:
    """Token ids that decoding needs, read from the checkpoint (never constants in code)."""
    mask: int
    eos: int
    pad: int
    eot: int | None = None   # LLaDA-Instruct's <|eot_id|> ends a chat turn; None where absent

    def stop_ids(self) -> list[int]:
        return [self.eos] + ([self.eot] if self.eot is not None else [])


def resolve_path(path_or_name: str | Path | None) -> Path:
    """A zoo name (``tiny-arith``) or a local directory -> an existing directory."""
    name = str(path_or_name or DEFAULT_MODEL)
    if (ZOO / name).is_dir():
        return ZOO / name
    path = Path(name).expanduser()
    if path.is_dir():
        return path
    zoo = sorted(p.name for p in ZOO.iterdir() if p.is_dir()) if ZOO.is_dir() else []
    raise CheckpointError(
        f"no model directory {name!r}: pass a local checkpoint directory (hub ids are not downloaded) "
        f"or one of the embedded models {zoo}")


PAPER_LENGTHS = (256, 32)   # gen_length, block_length of the paper's GSM8K runs (Sec. 5.1)


def decode_lengths(model_or_config=None) -> tuple[int, int]:
    """``(gen_length, block_length)`` a checkpoint decodes with by default.

    A checkpoint trained by ``train-lm`` names its window in ``config.json`` (``tspd_task``); any other
    (LLaDA-8B-Instruct, Dream, LLaDA-MoE) gets the paper's 256 / 32. Accepts a loaded model, an opened
    :class:`Checkpoint` or their config (nothing is read again), or a zoo name / directory (then only
    ``config.json`` is read, no weights).
    """
    task = task_spec(model_or_config)
    return int(task.get("gen_length", PAPER_LENGTHS[0])), int(task.get("block_length", PAPER_LENGTHS[1]))


def window(model_or_config, gen_length: int | None = None, block_length: int | None = None) -> tuple[int, int]:
    """``(gen_length, block_length)`` as given, the checkpoint's own (:func:`decode_lengths`) where 0 or None
    (``config.json`` is read only then)."""
    if not gen_length or not block_length:
        own = decode_lengths(model_or_config)
        gen_length, block_length = gen_length or own[0], block_length or own[1]
    return int(gen_length), int(block_length)


def task_spec(model_or_config=None) -> dict:
    """``config.json``'s ``tspd_task`` (the generated task a ``train-lm`` checkpoint was trained on: its
    module, fingerprint and window); empty for any other checkpoint. Takes what :func:`decode_lengths` takes."""
    cfg = getattr(model_or_config, "config", model_or_config)
    if cfg is None or isinstance(cfg, (str, Path)):
        file = resolve_path(cfg) / "config.json"
        extra = json.loads(file.read_text()) if file.is_file() else {}
    else:
        extra = getattr(cfg, "extra", {}) or {}
    return extra.get("tspd_task") or {}


def checkpoint_task(model_or_config=None) -> str | None:
    """The short name (``arith``, ``chain``) of the generated task a ``train-lm`` checkpoint was trained on;
    None for any other checkpoint (LLaDA-8B-Instruct, Dream, ...)."""
    name = task_spec(model_or_config).get("name")
    return name.rsplit(".", 1)[-1] if name else None


def default_task(model_or_config=None) -> str:
    """The task a run of a checkpoint decodes unless told otherwise: the one it was trained on, else (a
    checkpoint trained on none, or not on this machine) the book model's, :data:`DEFAULT_MODEL`'s."""
    try:
        own = checkpoint_task(model_or_config)
    except CheckpointError:
        own = None
    return own or checkpoint_task(DEFAULT_MODEL)


@dataclass(frozen=True)
class Checkpoint:
    """A checkpoint directory, resolved and its ``config.json`` read once (:meth:`open`).

    What a command or an evaluation job checks before any weights load (the architecture, the task a
    ``train-lm`` checkpoint was trained on), takes its default window from (:func:`decode_lengths`) and
    finally loads (:func:`load_model` takes it in place of a name and reads no ``config.json`` again).
    """
    path: Path                                  # the directory
    config: Any = field(repr=False, compare=False)   # config.json as its architecture's config class (``extra``: the rest)
    model_class: type = field(repr=False, compare=False)   # the network class of its model_type (:data:`ARCHITECTURES`)
    config_bytes: bytes = field(default=b"", repr=False, compare=False)   # config.json as read (its fingerprint)

    @classmethod
    def open(cls, path_or_name: "str | Path | Checkpoint | None" = None) -> "Checkpoint":
        """A zoo name or a local directory, resolved, with its ``config.json`` read and its architecture
        known; :class:`CheckpointError` (one line: what is missing, what to do) otherwise."""
        if isinstance(path_or_name, Checkpoint):
            return path_or_name
        path = resolve_path(path_or_name)
        file = path / "config.json"
        if not file.is_file():
            raise CheckpointError(f"{path}: config.json is missing")
        data = file.read_bytes()
        raw = json.loads(data)
        model_type = checkpoint_model_type(raw)   # released LLaDA-MoE configs say "llada": see there
        if model_type not in ARCHITECTURES:
            raise CheckpointError(f"{path}: model_type {model_type!r} is not supported (known: {sorted(ARCHITECTURES)})")
        cfg_cls, model_cls = ARCHITECTURES[model_type]
        return cls(path, cfg_cls.from_dict(raw), model_cls, data)

    @property
    def backbone(self) -> str:
        """``llada``, ``dream`` or ``llada-moe`` (``train-lm --arch``'s names): which of the paper's backbones."""
        return {LLaDAModelLM: "llada", DreamModelLM: "dream", LLaDAMoEModelLM: "llada-moe"}[self.model_class]

    @property
    def trained_on(self) -> str | None:
        """The fingerprint of the task version a ``train-lm`` checkpoint was trained on (None for others)."""
        return task_spec(self).get("fingerprint")

    def fingerprint(self) -> str:
        """16 hex digits over config.json (as read) and each weight file's size and first / last MiB: cheap
        enough to check on every run that the checkpoint behind a name is unchanged (what a cached run's key
        and sidecar name). The exact weights are :func:`weights_hash`'s."""
        h = hashlib.sha256()
        for p in sorted(p for p in self.path.iterdir() if p.name == "config.json" or p.suffix == ".safetensors"):
            config = p.name == "config.json"
            size = len(self.config_bytes) if config else p.stat().st_size
            h.update(f"{p.name}:{size}".encode())
            with io.BytesIO(self.config_bytes) if config else open(p, "rb") as f:
                h.update(f.read(1 << 20))
                if size > 2 << 20:
                    f.seek(-(1 << 20), os.SEEK_END)
                h.update(f.read())          # the rest of a file up to 2 MiB, else its last MiB
        return h.hexdigest()[:16]


def weights_hash(path_or_name: "str | Path | Checkpoint", digits: int = 16) -> str:
    """The sha256 of a checkpoint's weights (every byte of its safetensors files, in shard order: its
    ``model.safetensors`` alone where unsharded), its first ``digits`` hex digits: 16 are what a record
    kept beside the checkpoint says it measured (``regime.json``, ``evals.json``), 64 (all) what a
    controller says it was trained on. :class:`CheckpointError` where there are no weights."""
    path = path_or_name.path if isinstance(path_or_name, Checkpoint) else resolve_path(path_or_name)
    h = hashlib.sha256()
    for file in _weight_files(path):
        with open(file, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 24), b""):
                h.update(chunk)
    return h.hexdigest()[:digits]


def _weight_files(path: Path) -> list[Path]:
    index = path / "model.safetensors.index.json"
    if index.exists():
        shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        missing = [s for s in shards if not (path / s).exists()]
        if missing:
            raise CheckpointError(f"{path}: shards listed in {index.name} are missing: {', '.join(missing[:3])}")
        return [path / s for s in shards]
    single = path / "model.safetensors"
    if single.exists():
        return [single]
    if any(path.glob("*.bin")):
        raise CheckpointError(f"{path}: only PyTorch .bin weights found; convert them to safetensors")
    raise CheckpointError(f"{path}: no model.safetensors or model.safetensors.index.json")


def _set_tensor(module: torch.nn.Module, name: str, value: torch.Tensor) -> None:
    *parents, leaf = name.split(".")
    for p in parents:
        module = getattr(module, p) if not p.isdigit() else module[int(p)]
    old = getattr(module, leaf)
    if tuple(old.shape) != tuple(value.shape):
        raise CheckpointError(f"{name}: checkpoint shape {tuple(value.shape)} != model shape {tuple(old.shape)}")
    setattr(module, leaf, torch.nn.Parameter(value, requires_grad=False))


def load_weights(model: torch.nn.Module, files: list[Path], device, dtype) -> None:
    """Read every tensor onto ``device`` in ``dtype``; error on missing or unexpected names."""
    expected = dict(model.named_parameters())
    seen = set()
    for f in files:
        try:
            with safe_open(str(f), framework="pt", device=str(device)) as st:
                for key in st.keys():
                    if key not in expected:
                        raise CheckpointError(f"{f.name}: unexpected tensor {key!r} for {type(model).__name__}")
                    _set_tensor(model, key, st.get_tensor(key).to(dtype))
                    seen.add(key)
        except CheckpointError:
            raise
        except Exception as e:   # safetensors' own errors name neither the file nor the fix
            raise CheckpointError(f"{f}: cannot be read ({type(e).__name__}: {e}); the file is incomplete or "
                                  "corrupt, copy or download it again") from e
    missing = sorted(set(expected) - seen)
    if missing:
        more = f" (+{len(missing) - 3} more)" if len(missing) > 3 else ""
        raise CheckpointError(f"checkpoint lacks {', '.join(missing[:3])}{more}")


def load_tokenizer(path_or_name: str | Path | None = None):
    """The checkpoint's HF tokenizer (``tokenizer.json`` + ``tokenizer_config.json``)."""
    from transformers import AutoTokenizer
    path = resolve_path(path_or_name)
    if not (path / "tokenizer.json").exists() and not (path / "tokenizer_config.json").exists():
        raise CheckpointError(f"{path}: no tokenizer files (tokenizer.json / tokenizer_config.json)")
    from transformers import PretrainedConfig
    from transformers.utils import logging as hf_logging
    # Where tokenizer_config.json names its class, the model's config.json has nothing to add: hand transformers
    # an empty config rather than let it parse ours (a null rope_scaling there is deprecated in transformers 5).
    named = (path / "tokenizer_config.json").is_file() and \
        json.loads((path / "tokenizer_config.json").read_text()).get("tokenizer_class")
    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()   # transformers warns that it does not know model_type "llada"
    try:
        return AutoTokenizer.from_pretrained(str(path), **({"config": PretrainedConfig()} if named else {}))
    finally:
        hf_logging.set_verbosity(level)


def special_tokens(config, tokenizer=None) -> SpecialTokens:
    """Mask/EOS/pad/EoT ids from the config first, the tokenizer second."""
    def tok_id(token: str) -> int | None:
        if tokenizer is None:
            return None
        i = tokenizer.convert_tokens_to_ids(token)
        return i if isinstance(i, int) and i != tokenizer.unk_token_id else None

    mask = config.mask_token_id
    if mask is None and tokenizer is not None:
        mask = tokenizer.mask_token_id if tokenizer.mask_token_id is not None else tok_id("<|mdm_mask|>")
    eos = config.eos_token_id if config.eos_token_id is not None else getattr(tokenizer, "eos_token_id", None)
    if mask is None or eos is None:
        raise CheckpointError(f"cannot find the {'mask' if mask is None else 'EOS'} token id in config.json or the tokenizer")
    pad = config.pad_token_id if config.pad_token_id is not None else getattr(tokenizer, "pad_token_id", None)
    eot = tok_id("<|eot_id|>")                 # LLaDA-Instruct's end of turn ...
    eot = eot if eot is not None else tok_id("<|im_end|>")   # ... or Qwen/Dream-Instruct's
    return SpecialTokens(mask=mask, eos=eos, pad=eos if pad is None else pad, eot=eot)


@dataclass
class LoadedModel:
    """A checkpoint ready to decode: the network and what decoding reads beside it, from one directory.

    The one model type of the package: :func:`tspd.generate`, the controllers, the harness and the
    lm-eval adapter all take it. It calls like its network (``model(ids, ...)``) and says what callers
    need of it by name (``config``, ``device``, ``dtype``, ``parameters()``, ``new_cache()``, ``eval()`` /
    ``train()``, which return the LoadedModel); anything else of the network is ``model.module``'s.
    """
    module: torch.nn.Module            # the network, in eval mode on its device and dtype
    tokenizer: Any = None              # the checkpoint's tokenizer (None: the directory has none)
    special: SpecialTokens | None = None   # mask / EOS / pad / EoT ids from its config and tokenizer
    path: Path | None = None           # the checkpoint directory (learned controllers live below it)
    graphs: Any = field(default=None, repr=False, compare=False)   # fast path: the CUDA-graph runner of its
                                                                   # last canvas shape (tspd.decoding.graphs)

    @property
    def config(self):
        return self.module.config

    @property
    def device(self) -> torch.device:
        return self.module.device

    @property
    def dtype(self) -> torch.dtype:
        return self.module.dtype

    @property
    def name_or_path(self) -> str | None:
        return None if self.path is None else str(self.path)

    @property
    def graph_capturable(self) -> bool:
        """Whether its forward can be captured in a CUDA graph (not LLaDA-MoE's: its routing syncs)."""
        return self.module.graph_capturable

    @property
    def training(self) -> bool:
        return self.module.training

    def __call__(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def new_cache(self):
        return self.module.new_cache()

    def parameters(self):
        return self.module.parameters()

    def eval(self) -> "LoadedModel":
        """The network in eval mode; returns this LoadedModel (not the network)."""
        self.module.eval()
        return self

    def train(self, mode: bool = True) -> "LoadedModel":
        """The network in training mode (or eval mode, ``mode=False``); returns this LoadedModel."""
        self.module.train(mode)
        return self


def load_model(path_or_name: str | Path | Checkpoint | None = None, device: str | torch.device = "cpu",
               dtype: torch.dtype | str | None = None, fuse: bool | None = None,
               compile: bool | None = None) -> LoadedModel:
    """Load a local checkpoint directory (LLaDA format), an embedded model by name, or an opened
    :class:`Checkpoint` (whose ``config.json`` is not read again).

    Returns a :class:`LoadedModel`: the network in eval mode, its tokenizer (None if the directory has
    none) and its :class:`SpecialTokens`. ``dtype`` defaults to float32 on CPU (bf16 matmuls are very
    slow there) and bfloat16 elsewhere. ``fuse``: q/k/v and gate/up as one matmul each
    (:mod:`tspd.models.fused`; None: on a GPU, where it saves kernels, not on the CPU, whose committed runs are
    reproduced bit for bit). ``compile``: the element-wise chains compiled into one kernel each
    (:mod:`tspd.models.pointwise`; None: on a CUDA GPU with Triton, where the fast path's full forward at LLaDA-8B's shape
    took 28.5 ms with them against 37.0 without on an H200, ``results/gpu/``; the logits change within bf16
    rounding).
    """
    checkpoint = Checkpoint.open(path_or_name)
    path, config = checkpoint.path, checkpoint.config
    files = _weight_files(path)
    device = check_device(device)     # a GPU where torch sees none: said so, not as a corrupt file
    if isinstance(dtype, str):
        dtype = getattr(torch, dtype)
    dtype = dtype or (torch.float32 if device.type == "cpu" else torch.bfloat16)
    with torch.device("meta"):
        model = checkpoint.model_class(config)
    load_weights(model, files, device, dtype)
    if (device.type != "cpu") if fuse is None else fuse:   # unset: on a GPU only
        fuse_projections(model)
    if compiles_here(device) if compile is None else compile:   # unset: on a CUDA GPU with Triton only
        use_compiled(model)
    try:
        tokenizer = load_tokenizer(path)
    except CheckpointError:
        tokenizer = None
    return LoadedModel(model.eval(), tokenizer, special_tokens(config, tokenizer), path)


def save_model(model: torch.nn.Module, directory: str | Path, max_shard_bytes: int | None = None,
               dtype: torch.dtype | None = None) -> Path:
    """Write ``config.json`` and safetensors in the HF layout ``load_model`` reads.

    With ``max_shard_bytes`` the weights are split into ``model-0000i-of-0000n.safetensors`` shards
    plus ``model.safetensors.index.json``; otherwise one ``model.safetensors``.
    """
    from safetensors.torch import save_file
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    if isinstance(model, LoadedModel):          # a LoadedModel saves its network
        model = model.module
    if is_fused(model):
        raise ValueError("a network with fused projections is for decoding and cannot be saved: "
                         "load it with load_model(..., fuse=False)")
    model.config.save(out)
    tensors = {k: (v.detach().to(dtype) if dtype else v.detach()).contiguous().cpu()
               for k, v in model.state_dict().items()}
    if not max_shard_bytes:
        save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
        return out
    shards, cur, size = [], {}, 0
    for k, v in tensors.items():
        nbytes = v.numel() * v.element_size()
        if cur and size + nbytes > max_shard_bytes:
            shards.append(cur)
            cur, size = {}, 0
        cur[k], size = v, size + nbytes
    shards.append(cur)
    weight_map = {}
    for i, shard in enumerate(shards, 1):
        name = f"model-{i:05d}-of-{len(shards):05d}.safetensors"
        save_file(shard, str(out / name), metadata={"format": "pt"})
        weight_map.update({k: name for k in shard})
    total = sum(v.numel() * v.element_size() for v in tensors.values())
    (out / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}, indent=2) + "\n")
    return out
