"""tspd: Temporal-Spatial Parallel Decoding and Confidence Extrapolation for diffusion LLMs.

    model = tspd.load_model("tiny-arith")            # or a local LLaDA-8B-Instruct directory
    out = tspd.generate(model, ["..."], gen_length=128, block_length=32, policy="tspd", ce=True, cache="dual")
"""
from .config import LLaDAConfig
from .loading import SpecialTokens, load_model, load_tokenizer, save_model
from .model import KVCache, LLaDAModelLM
from .generate import Generation, generate  # noqa: E402  (the function shadows the submodule name on purpose)

__all__ = ["LLaDAConfig", "LLaDAModelLM", "KVCache", "SpecialTokens", "Generation", "generate",
           "load_model", "load_tokenizer", "save_model"]
