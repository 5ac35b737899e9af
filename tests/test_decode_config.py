"""``DecodeConfig``: checked once on construction, resolved against a checkpoint, taken whole by generate."""
from __future__ import annotations

import dataclasses

import pytest
import torch

from tspd import DecodeConfig, generate
from tspd.validate import UsageError

from conftest import TEST_MODEL


@pytest.mark.parametrize("bad, message", [
    (dict(cache="full"), "cache must be one of"),
    (dict(controller="nope"), "unknown controller"),
    (dict(controller="vanilla", controller_kwargs={"threshold": 0.9}), "takes no threshold"),
    (dict(controller="fast-dllm", controller_kwargs={"threshold": 1.5}), r"threshold must be in \(0, 1\]"),
    (dict(gen_length=30, block_length=8), "not a multiple of block_length"),
    (dict(gen_length=32, block_length=8, steps=6), "multiple of the number of blocks"),
    (dict(temperature=-1.0), "temperature must be >= 0"),
    (dict(confidence_dtype="int8"), "unknown confidence_dtype"),
])
def test_bad_settings_fail_on_construction(bad, message):
    with pytest.raises(UsageError, match=message):
        DecodeConfig(**bad)


def test_of_replace_and_resolved():
    base = DecodeConfig.of(controller="fast-dllm", threshold=0.8)
    assert base.controller_kwargs == {"threshold": 0.8}
    assert DecodeConfig.of(base, threshold=0.7).controller_kwargs == {"threshold": 0.7}
    with pytest.raises(UsageError, match="no colour"):
        base.replace(colour="red")
    r = base.resolved(_config_with_window(64, 32))
    assert (r.gen_length, r.block_length, r.steps, r.num_blocks) == (64, 32, 64, 2)
    assert r.resolved(None) is r                                   # nothing left to fill
    assert r.replace(gen_length=128).resolved(None).steps == 128   # default steps follow the window
    assert r.replace(steps=32).replace(gen_length=128).steps == 32  # an explicit budget is kept
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.cache = "dual"


def test_equal_decodings_compare_equal():
    assert DecodeConfig(ce=True, ce_kwargs={"tau": 0.6}) == DecodeConfig(ce=True)      # 0.6 is CE's default
    assert DecodeConfig(ce=False, ce_kwargs={"H": 10}) == DecodeConfig()                # CE off: no settings
    assert DecodeConfig(confidence_dtype=torch.float64).confidence_dtype == "float64"


def test_controller_and_ce_are_names_plus_settings():
    """One shape each: the controller by name with controller_kwargs, CE on or off with ce_kwargs."""
    from tspd.decoding.controllers.prophet import Prophet
    from tspd.decoding.extrapolate import CEConfig
    with pytest.raises(UsageError, match="controller=") as refused:
        DecodeConfig(controller=Prophet())
    assert "Prophet" in str(refused.value)
    for not_a_bool in ("yes", CEConfig(H=10), {"H": 10}):   # the settings go in ce_kwargs, never in ce
        with pytest.raises(UsageError, match="ce is True or False \\(its settings go in ce_kwargs\\)"):
            DecodeConfig(ce=not_a_bool)
    from tspd.eval.job import RunConfig
    assert RunConfig(model=TEST_MODEL, decode=DecodeConfig(ce=True, ce_kwargs={"H": 10})).ce_kwargs == {"H": 10}   # any


def test_a_ready_controller_decodes_through_generate(tiny_model):
    from tspd.decoding.controllers.fast_dllm import FastDLLM
    prompts = [[5, 6, 7, 8], [9, 10, 11, 12]]
    by_name = generate(tiny_model, prompts, gen_length=16, block_length=8, controller="fast-dllm", threshold=0.5)
    ready = generate(tiny_model, prompts, gen_length=16, block_length=8, controller=FastDLLM(threshold=0.5))
    assert torch.equal(by_name.token_ids, ready.token_ids) and by_name.nfe == ready.nfe


def test_generate_takes_the_config_whole_or_as_overrides(tiny_model):
    prompts = [[5, 6, 7, 8], [9, 10, 11, 12]]
    config = DecodeConfig(controller="fast-dllm", controller_kwargs={"threshold": 0.5}, gen_length=16, block_length=8,
                          cache="dual")
    whole = generate(tiny_model, prompts, config)
    spelled = generate(tiny_model, prompts, gen_length=16, block_length=8, controller="fast-dllm", threshold=0.5,
                       cache="dual")
    overridden = generate(tiny_model, prompts, config.replace(cache="none"), cache="dual")
    assert torch.equal(whole.token_ids, spelled.token_ids) and whole.nfe == spelled.nfe
    assert torch.equal(whole.token_ids, overridden.token_ids) and whole.nfe == overridden.nfe
    with pytest.raises(UsageError, match="cache must be one of"):
        generate(tiny_model, prompts, config, cache="full")


def _config_with_window(gen_length: int, block_length: int):
    """A stand-in for a loaded model whose checkpoint names its window (tspd_task)."""
    from tspd.models.config import LLaDAConfig
    return LLaDAConfig(extra={"tspd_task": {"gen_length": gen_length, "block_length": block_length}})


# ------------------------------------------------------------------------------------------------
# One set of decoding options for every command
# ------------------------------------------------------------------------------------------------
def parse(*argv: str, skip: tuple = ()):
    import argparse
    from tspd.decoding.config import add_decode_arguments
    p = argparse.ArgumentParser()
    add_decode_arguments(p, skip=skip)
    return p.parse_args(list(argv))


def test_the_options_default_to_the_dataclass():
    assert DecodeConfig.from_args(parse()) == DecodeConfig()
    args = parse()
    for f in dataclasses.fields(DecodeConfig):
        if hasattr(args, f.name) and getattr(args, f.name) is not None:   # None: the field's default
            assert getattr(args, f.name) == getattr(DecodeConfig(), f.name), f.name


def test_options_become_one_config():
    got = DecodeConfig.from_args(parse("--controller", "fast-dllm", "--threshold", "0.8", "--controller-arg", "factor=0.5",
                                       "--ce", "--ce-arg", "tau=0.5", "--cache", "dual", "--gen-length", "64",
                                       "--block-length", "32", "--temperature", "0.5", "--seed", "3", "--fast"))
    assert got == DecodeConfig(controller="fast-dllm", controller_kwargs={"factor": 0.5, "threshold": 0.8}, ce=True,
                               ce_kwargs={"tau": 0.5}, cache="dual", gen_length=64, block_length=32,
                               temperature=0.5, seed=3, fast=True)
    with pytest.raises(UsageError, match="KEY=VALUE"):
        DecodeConfig.from_args(parse("--controller-arg", "novalue"))
    with pytest.raises(UsageError, match="with CE off"):
        DecodeConfig.from_args(parse("--no-ce", "--ce-arg", "tau=0.5"))
    assert DecodeConfig.from_args(parse("--ce-arg", "tau=0.5")) == DecodeConfig(ce=True, ce_kwargs={"tau": 0.5})


# ------------------------------------------------------------------------------------------------
# One parser: the command line, lm-eval's --model_args, a notebook's parameters and a stored run agree
# ------------------------------------------------------------------------------------------------
def test_every_entry_point_reads_the_same_settings_alike():
    from tspd.book.notebook import base_run
    from tspd.eval.job import RunConfig
    from tspd.eval.lmeval.settings import parse_model_args
    want = DecodeConfig(controller="fast-dllm", controller_kwargs={"threshold": 0.8}, ce=True, ce_kwargs={"tau": 0.5},
                        cache="dual", gen_length=64, block_length=32, steps=64, temperature=0.0, seed=3)
    cli = DecodeConfig.from_args(parse("--controller", "fast-dllm", "--threshold", "0.8", "--ce-arg", "tau=0.5",
                                       "--cache", "dual", "--gen-length", "64", "--block-length", "32",
                                       "--steps", "64", "--seed", "3"))
    lm = parse_model_args("pretrained=tiny-arith,controller=fast-dllm,threshold=0.8,ce.tau=0.5,cache=dual,"
                          "gen_length=64,block_length=32,seed=3").decode
    text = DecodeConfig.from_mapping({"controller": "fast-dllm", "threshold": "0.8", "ce": "true", "ce_kwargs": '{"tau": 0.5}',
                                      "cache": "dual", "gen_length": "64", "block_length": "32", "steps": "64",
                                      "seed": "3"})
    run = base_run({"model": "tiny-arith", "gen_length": 64, "block_length": 32, "seed": 3},
                   controller="fast-dllm", threshold=0.8, ce=True, ce_kwargs={"tau": 0.5}, cache="dual")
    stored = RunConfig.from_dict(run.to_dict())
    assert cli == lm == text == run.decode == stored.decode == want


@pytest.mark.parametrize("settings, words", [
    ({"ce": True, "ce_kwargs": {"tua": 0.5}}, "CE takes no tua"),
    ({"ce": True, "ce_kwargs": {"tau": 2}}, "tau must lie"),
    ({"controller.threshold": 1.5, "controller": "fast-dllm"}, "threshold must be in (0, 1]"),
    ({"threshhold": 0.9}, "unknown settings threshhold"),
    ({"gen_length": "sixty"}, "expected a whole number"),
    ({"fast": "maybe"}, "expected true or false"),
    ({"ce": False, "ce.tau": 0.5}, "with CE off"),
])
def test_a_bad_setting_is_one_usage_line(settings, words):
    with pytest.raises(UsageError) as e:
        DecodeConfig.from_mapping(settings)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_bad_ce_settings_fail_when_the_config_is_made():
    with pytest.raises(UsageError, match="CE takes no bogus"):
        DecodeConfig(ce=True, ce_kwargs={"bogus": 1})


def test_every_plain_field_has_a_reader_and_the_lists_follow_the_dataclass():
    from tspd.decoding import config
    assert set(config._PLAIN_TYPES) == set(config.plain_fields())
    assert set(config.settings_keys()) == {f.name for f in dataclasses.fields(DecodeConfig)} | set(config.SUGAR)


def test_one_threshold_rule_for_the_config_and_the_controllers():
    from tspd.decoding.controllers.credit import CreditDecoding
    from tspd.decoding.controllers.fast_dllm import FastDLLM
    for bad in (0.0, 1.5):
        for make in (lambda t: DecodeConfig(controller="fast-dllm", controller_kwargs={"threshold": t}),
                     lambda t: FastDLLM(threshold=t), lambda t: CreditDecoding(threshold=t)):
            with pytest.raises(UsageError, match=r"threshold must be in \(0, 1\]"):
                make(bad)


@pytest.mark.parametrize("config", [
    DecodeConfig(),
    DecodeConfig(controller="tspd", controller_kwargs={"weights": "a dir/tspd", "gate": 0.4}, cache="prefix", gen_length=64,
                 block_length=32, steps=16, confidence_dtype="float64"),
    DecodeConfig(controller="fast-dllm", controller_kwargs={"threshold": 0.9}, ce=True, ce_kwargs={"tau": 0.4, "H": 10},
                 temperature=0.7, seed=1, fast=True),
])
def test_a_config_round_trips_through_its_options(config):
    from tspd.decoding.config import decode_options
    assert DecodeConfig.from_args(parse(*decode_options(config))) == config


def test_a_command_with_its_own_controller_skips_the_controller_options():
    from tspd.decoding.config import CONTROLLER_OPTIONS
    args = parse("--gen-length", "32", "--block-length", "32", skip=CONTROLLER_OPTIONS)
    assert not hasattr(args, "controller") and DecodeConfig.from_args(args) == DecodeConfig(gen_length=32, block_length=32)


def test_dataclass_options_take_help_and_defaults_from_the_fields():
    import argparse
    from dataclasses import dataclass

    from tspd.options import add_dataclass_arguments, field_comments, from_args

    @dataclass
    class Config:
        epochs: int = 60            # training epochs at most
        rate: float | None = None   # learning rate (default per kind)
        quiet: bool = False         # no progress bar
        name: str = "x"

    p = argparse.ArgumentParser()
    add_dataclass_arguments(p, Config, choices={"name": ("x", "y")})
    assert field_comments(Config) == {"epochs": "training epochs at most", "rate": "learning rate (default per kind)",
                                      "quiet": "no progress bar"}
    assert from_args(Config, p.parse_args([])) == Config()
    assert from_args(Config, p.parse_args(["--epochs", "3", "--rate", "0.1", "--quiet", "--name", "y"])) == \
        Config(3, 0.1, True, "y")
    assert "training epochs at most" in p.format_help()
