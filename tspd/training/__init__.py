"""Training: the embedded model and the controllers.

- :mod:`tspd.training.train_lm`: ``python -m tspd train-lm``, the LLaDA SFT objective on ``arith``
- :mod:`tspd.training.traces`: stage 1, decoding traces labelled by the EGP oracle (Appendix A.4)
- :mod:`tspd.training.train_controller`: stage 2, the TSPD / Learn2PD gates (Appendix A.5)
- :mod:`tspd.training.variants`: trace sets and trained controllers cached for the ablation tables
"""
