"""One home for learned-controller weights (tspd.decoding.controllers.weights): where they are, how they
are written, checked before any model loads, and read back."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from tspd.decoding.controllers import weights
from tspd.models.loading import LoadedModel
from tspd.validate import UsageError


def test_save_then_load_round_trips(tmp_path):
    net = nn.Linear(3, 2)
    stem = weights.save_controller(net, {"kind": "learn2pd", "width": 3}, tmp_path / "c" / "learn2pd")
    assert weights.exists(stem) and (stem.with_suffix(".safetensors").stat().st_mode & 0o777) == 0o644
    state, config = weights.load_controller(stem, "learn2pd")
    assert config["width"] == 3 and torch.equal(state["weight"], net.weight.detach())
    with pytest.raises(ValueError, match="holds a 'learn2pd' controller"):
        weights.load_controller(stem, "tspd")
    with pytest.raises(FileNotFoundError, match="train-controller --kind tspd"):
        weights.load_controller(tmp_path / "nothing", "tspd")


def test_a_stem_may_be_named_by_directory_file_or_stem(tmp_path):
    assert weights.stem_of(tmp_path, "tspd") == tmp_path / "tspd"
    assert weights.stem_of(tmp_path / "x.safetensors", "tspd") == tmp_path / "x"
    assert weights.stem_of(tmp_path / "x.json", "tspd") == weights.stem_of(tmp_path / "x", "tspd") == tmp_path / "x"


def test_the_default_stem_is_beside_the_model(tmp_path):
    model = LoadedModel(nn.Linear(1, 1), path=tmp_path)
    assert weights.controller_stem(model, "tspd") == tmp_path / "controllers" / "tspd"
    assert weights.controller_stem(model, "tspd", tmp_path / "elsewhere.json") == tmp_path / "elsewhere"
    with pytest.raises(FileNotFoundError, match="pass weights=PATH"):
        weights.controller_stem(LoadedModel(nn.Linear(1, 1)), "tspd")     # a model of no directory


def test_learned_controllers_are_checked_before_any_weights_load(tmp_path):
    weights.check_controller_files("tiny-arith", "tspd")             # shipped with the embedded model
    weights.check_controller_files(str(tmp_path), "vanilla")         # nothing to check
    with pytest.raises(UsageError, match="collect-traces .* train-controller"):
        weights.check_controller_files(str(tmp_path), "learn2pd")
    with pytest.raises(UsageError, match="no tspd controller at"):
        weights.check_controller_files("tiny-arith", "tspd", {"weights": str(tmp_path)})


def test_controller_option_borrows_an_embedded_models_controller_with_a_warning(tmp_path):
    with pytest.warns(UserWarning, match="trained on the embedded model"):
        assert weights.controller_weights("tiny-arith", "tspd").endswith("tiny-arith/controllers")
    assert weights.controller_weights(str(tmp_path), "learn2pd") == str(tmp_path)
    with pytest.raises(UsageError, match="learned controllers"):
        weights.controller_weights("tiny-arith", "fast-dllm")
