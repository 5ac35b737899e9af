"""Command-line options derived from a config dataclass: one flag per field, its default the field's,
its help the field's why-comment, so that a config and its command line cannot disagree.

    @dataclass
    class Config:
        epochs: int = 60        # training epochs at most

    add_dataclass_arguments(parser, Config)        # --epochs (int, default 60, help "training epochs at most")
    config = from_args(Config, parser.parse_args())

Used by ``train-controller`` (:class:`tspd.training.train_controller.ControllerTrainConfig`), the decoding
options of every command (:func:`tspd.decoding.config.add_decode_arguments`) and ``train-lm``.
"""
from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
from typing import Any

from tspd.validate import UsageError

_TYPES = {"int": int, "float": float, "str": str, "bool": bool}


def field_comments(cls) -> dict[str, str]:
    """The why-comment after each field of dataclass ``cls`` (``name: type = default  # why``), by name."""
    out = {}
    for line in inspect.getsource(cls).splitlines():
        name, _, rest = line.strip().partition(":")
        if "#" in rest and name.isidentifier():
            out[name] = rest.split("#", 1)[1].strip()
    return out


def field_type(f: dataclasses.Field) -> type:
    """``int`` for ``int``, ``int | None`` or ``"int | None"``; str for anything else."""
    text = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
    return _TYPES.get(text.split("|")[0].strip(), str)


def default_of(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return None


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def add_dataclass_arguments(parser: argparse.ArgumentParser, cls, *, only: tuple[str, ...] | None = None,
                            skip: tuple[str, ...] = (), choices: dict | None = None,
                            helps: dict | None = None) -> None:
    """One option per field of ``cls`` (those in ``only``, less ``skip``). A bool field defaulting to
    False is a switch; ``choices`` and ``helps`` (by field name) override what the field says."""
    comments = field_comments(cls)
    choices, helps = choices or {}, helps or {}
    for f in dataclasses.fields(cls):
        if (only is not None and f.name not in only) or f.name in skip:
            continue
        text = (helps.get(f.name) or comments.get(f.name) or f.name.replace("_", " ")).replace("%", "%%")
        kind, default = field_type(f), default_of(f)
        if kind is bool:
            action = "store_true" if default is False else argparse.BooleanOptionalAction
            parser.add_argument(flag(f.name), action=action, default=default, help=text)
        else:
            parser.add_argument(flag(f.name), type=kind, default=default, choices=choices.get(f.name), help=text)


def from_args(cls, args: argparse.Namespace, **changes):
    """An instance of ``cls`` from the parsed options of its fields (``changes`` win)."""
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{**{k: v for k, v in vars(args).items() if k in names}, **changes})


def key_values(items: list[str] | None, option: str) -> dict:
    """``["k=v", ...]`` (a repeatable ``KEY=VALUE`` option) -> dict; values are JSON where they parse
    (numbers, booleans, lists), else strings."""
    out = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"{option} expects KEY=VALUE, got {item!r}")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def as_key_values(settings: dict) -> list[str]:
    """The inverse of :func:`key_values`: ``{"threshold": 0.9}`` -> ``["threshold=0.9"]``."""
    return [f"{k}={json.dumps(v)}" for k, v in settings.items()]


__all__ = ["add_dataclass_arguments", "from_args", "field_comments", "key_values",
           "as_key_values"]
