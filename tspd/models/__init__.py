"""Models: LLaDA and the Hugging Face-layout backbones behind one forward contract, and their loading.

- :mod:`tspd.models.config`: ``LLaDAConfig``, read from a checkpoint's ``config.json``
- :mod:`tspd.models.llada`: the LLaDA architecture and the KV cache every backbone shares
- :mod:`tspd.models.hf_decoder`: the shared Hugging Face decoder layer (Dream, LLaDA-MoE)
- :mod:`tspd.models.dream`, :mod:`tspd.models.llada_moe`: the two other backbones of Table 2
- :mod:`tspd.models.loading`: local checkpoint directories (and the embedded zoo) -> a model on a device
- :mod:`tspd.models.char_tokenizer`: the embedded model's character tokenizer
"""
