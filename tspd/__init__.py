"""tspd: Temporal-Spatial Parallel Decoding and Confidence Extrapolation for diffusion LLMs.

    model = tspd.load_model("tiny-arith")            # or a local LLaDA-8B-Instruct directory
    config = tspd.DecodeConfig(controller="tspd", ce=True, cache="dual")   # the checkpoint's own window
    out = tspd.generate(model, ["..."], config)          # or keyword overrides: tspd.generate(model, p, cache="dual")
"""
from tspd.models.config import LLaDAConfig
from tspd.decoding.config import DecodeConfig
from tspd.models.loading import LoadedModel, SpecialTokens, load_model, load_tokenizer, save_model
from tspd.models.kv_cache import KVCache
from tspd.models.llada import LLaDAModelLM
from tspd.decoding.loop import Generation, generate

__all__ = ["DecodeConfig", "LLaDAConfig", "LLaDAModelLM", "KVCache", "LoadedModel", "SpecialTokens", "Generation", "generate",
           "load_model", "load_tokenizer", "save_model"]
