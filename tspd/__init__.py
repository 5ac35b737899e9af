"""tspd: Temporal-Spatial Parallel Decoding and Confidence Extrapolation for diffusion LLMs."""
from .config import LLaDAConfig
from .loading import SpecialTokens, load_model, load_tokenizer, save_model
from .model import KVCache, LLaDAModelLM

__all__ = ["LLaDAConfig", "LLaDAModelLM", "KVCache", "SpecialTokens", "load_model", "load_tokenizer", "save_model"]
