"""``python -m tspd generate`` offers only the controllers it decodes with: EGP, the trace-collection oracle
that it refuses, is not in its --controller help (issue 33)."""
from __future__ import annotations

import argparse

from tspd import cli
from tspd.commands import generate
from tspd.decoding.controllers import REGISTRY, decoding_controllers


def test_generate_offers_every_controller_it_accepts_and_not_egp(capsys):
    assert decoding_controllers() == [p for p in REGISTRY if p != "egp"]
    parser = argparse.ArgumentParser()
    generate.add_arguments(parser)
    (controller,) = [a for a in parser._actions if a.dest == "controller"]
    offered = controller.help.split(": ", 1)[1].split(" (")[0].split(", ")
    assert offered == decoding_controllers() and controller.default == "vanilla"
    assert parser.parse_args(["--prompt", "x", "--controller", "fast-dllm", "--threshold", "0.9"]).controller == "fast-dllm"


def test_generate_refuses_egp_with_the_command_that_runs_it(capsys):
    assert cli.main(["generate", "--controller", "egp", "--prompt", "1+1"]) != 0
    assert "collect-traces --controller egp" in capsys.readouterr().err
