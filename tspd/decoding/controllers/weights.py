"""Where a learned controller's weights live, and how they are written, found, checked and read.

The learned controllers (:data:`LEARNED`: TSPD, paper Section 3.2, and Learn2PD) read their model's
confidence dynamics, so their weights belong to that model: ``<model dir>/controllers/<name>`` is the
stem of ``<name>.safetensors`` (the tensors) and ``<name>.json`` (``kind``, the architecture and how
they were trained), written by ``python -m tspd train-controller`` (Section 4.1, Appendix A.5).
``weights=`` (a stem, either file, or a directory holding ``<name>.*``) names weights kept elsewhere;
``--controller-weights`` on the command line is :func:`controller_weights`.
"""
from __future__ import annotations

import json
import warnings
import zlib
from pathlib import Path
from typing import Callable

from torch import nn

from tspd.models.loading import ZOO, Checkpoint, LoadedModel, resolve_path
from tspd.validate import UsageError

LEARNED = ("tspd", "learn2pd")   # the controllers that need trained weights
SUFFIXES = (".safetensors", ".json")


def stem_of(weights: str | Path, name: str) -> Path:
    """``weights`` as a stem: a directory means its ``<name>.*``, a named file drops its suffix."""
    p = Path(weights).expanduser()
    if p.is_dir():
        return p / name
    return p.with_suffix("") if p.suffix in SUFFIXES else p


def controller_stem(model: LoadedModel, name: str, weights: str | Path | None = None) -> Path:
    """The stem (no suffix) of ``name``'s weights: ``weights`` if given, else the loaded ``model``'s own
    ``<model dir>/controllers/<name>``."""
    if weights is not None:
        return stem_of(weights, name)
    root = model.path
    if root is None or not Path(root).is_dir():
        raise FileNotFoundError(f"cannot locate {name} controller weights: the model has no directory "
                                f"(path={root!r}); pass weights=PATH")
    return Path(root) / "controllers" / name


def exists(stem: Path) -> bool:
    return all(stem.with_suffix(s).exists() for s in SUFFIXES)


def save_controller(net: nn.Module, config: dict, stem: str | Path) -> Path:
    """Write ``<stem>.safetensors`` (weights) and ``<stem>.json`` (``config``: kind, architecture, ...);
    the ``.json`` last, so that its presence marks a finished write."""
    from safetensors.torch import save_file
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    weights = stem.with_suffix(".safetensors")
    save_file({k: v.detach().contiguous().cpu() for k, v in net.state_dict().items()}, str(weights))
    weights.chmod(0o644)   # safetensors writes 0600; these files are shipped with the model
    stem.with_suffix(".json").write_text(json.dumps(config, indent=2) + "\n")
    return stem


def load_controller(stem: str | Path, kind: str) -> tuple[dict, dict]:
    """(state dict, config) of a controller saved by :func:`save_controller`; clear errors otherwise."""
    from safetensors.torch import load_file
    stem = Path(stem)
    w, c = stem.with_suffix(".safetensors"), stem.with_suffix(".json")
    if not w.exists() or not c.exists():
        raise FileNotFoundError(
            f"no {kind} controller weights at {w} (+ {c.name}); train them with "
            f"`python -m tspd collect-traces ...` then `python -m tspd train-controller --kind {kind} "
            f"--out {stem}`, or pass weights=PATH")
    config = json.loads(c.read_text())
    if config.get("kind") != kind:
        raise ValueError(f"{c} holds a {config.get('kind')!r} controller, expected {kind!r}")
    return load_file(str(w)), config


_LOADED: dict[tuple, nn.Module] = {}   # (kind, stem, the files' checksums) -> the network read from them


def load_net(model: LoadedModel, name: str, weights, kind: str, build: Callable[[dict], nn.Module]) -> nn.Module:
    """The saved network of a learned controller (``build(config)`` makes its shape), in eval mode.

    Built once per process while its files hold the same bytes (a ``generate`` call binds a fresh
    controller, and building the network cost as much as a forward of the embedded model; checking the
    bytes costs a read of two small files): later calls get the same network object, so treat it as
    read-only. Rewritten files (``train-controller``) are read again.
    """
    stem = controller_stem(model, name, weights)
    try:
        sums = tuple(zlib.crc32(stem.with_suffix(s).read_bytes()) for s in SUFFIXES)
    except OSError:
        sums = None                                       # missing: load_controller says what to do
    key = (kind, str(stem), sums)
    if sums is None or key not in _LOADED:
        state, config = load_controller(stem, kind)
        net = build(config)
        net.load_state_dict(state)
        _LOADED[key] = net.eval()
    return _LOADED[key]


def controller_weights(spec: str, controller: str) -> str:
    """``--controller-weights``: a trained controller's directory or stem, or an embedded model's name
    (whose controller is borrowed, with a warning: it was trained on another model)."""
    if controller not in LEARNED:
        raise UsageError(f"--controller-weights is for the learned controllers {' and '.join(LEARNED)}, not {controller!r}")
    if Path(spec).name == spec and (ZOO / spec).is_dir():   # a name, not a path
        warnings.warn(f"using the {controller} controller trained on the embedded model {spec!r}, not on this "
                      "model: its gate reads another model's confidence dynamics")
        return str(ZOO / spec / "controllers")
    return str(Path(spec).expanduser())


def check_controller_files(model: "str | Path | Checkpoint", controller: str, controller_kwargs: dict | None = None) -> None:
    """A learned controller has its trained weights (``weights=``, else ``<model dir>/controllers/``),
    checked before any model weights load; the error names the two commands that make them. ``model``
    is the checkpoint (opened, or its name or directory)."""
    if controller not in LEARNED:
        return
    weights = (controller_kwargs or {}).get("weights")
    if weights is not None:
        stem = stem_of(weights, controller)
        if not exists(stem):
            raise UsageError(f"no {controller} controller at {weights} (expected {stem}.safetensors and {stem}.json)")
        return
    path = model.path if isinstance(model, Checkpoint) else resolve_path(model)
    stem = path / "controllers" / controller
    if exists(stem):
        return
    raise UsageError(
        f"no trained {controller} controller for {path} (looked for {stem}.safetensors): make one with "
        f"`python -m tspd collect-traces --model {path} --prompts flan --flan-source FILE_OR_HUB_ID --n 2640 "
        f"--out traces.pt` (stage 1) then `python -m tspd train-controller --traces traces.pt --kind {controller} "
        f"--out {stem}` (stage 2). The paper's stage 1 took about 2 hours on two A100s for 2,640 prompts with "
        f"LLaDA-8B and stage 2 six minutes (book: reproduce); `--controller-weights tiny-arith` borrows the embedded "
        f"model's controller instead")


__all__ = ["LEARNED", "controller_stem", "save_controller", "load_controller", "load_net", "controller_weights",
           "check_controller_files"]
