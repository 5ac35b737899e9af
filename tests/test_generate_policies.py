"""``python -m tspd generate`` offers only the policies it decodes with: EGP, the trace-collection oracle
that it refuses, is not in its --policy help (issue 33)."""
from __future__ import annotations

import argparse

from tspd import cli
from tspd.commands import generate
from tspd.decoding.controllers import REGISTRY, decoding_policies


def test_generate_offers_every_policy_it_accepts_and_not_egp(capsys):
    assert decoding_policies() == [p for p in REGISTRY if p != "egp"]
    parser = argparse.ArgumentParser()
    generate.add_arguments(parser)
    (policy,) = [a for a in parser._actions if a.dest == "policy"]
    offered = policy.help.split(": ", 1)[1].split(" (")[0].split(", ")
    assert offered == decoding_policies() and policy.default == "vanilla"
    assert parser.parse_args(["--prompt", "x", "--policy", "fast-dllm", "--threshold", "0.9"]).policy == "fast-dllm"


def test_generate_refuses_egp_with_the_command_that_runs_it(capsys):
    assert cli.main(["generate", "--policy", "egp", "--prompt", "1+1"]) != 0
    assert "collect-traces --policy egp" in capsys.readouterr().err
