"""The embedded model's training (``python -m tspd train-lm``), one idea a module.

- :mod:`~tspd.training.lm.config`: the settings and the exact command line;
- :mod:`~tspd.training.lm.data`: tokenizer, batches, the background batch stream;
- :mod:`~tspd.training.lm.objective`: the model's config and initialisation, LLaDA's SFT loss, the schedule;
- :mod:`~tspd.training.lm.evaluation`: the learning curve's points and the final sweep;
- :mod:`~tspd.training.lm.outputs`: ``TRAINING.md``, the logs, the checkpoint and the resumable state.

The loop that ties them together is :mod:`tspd.training.train_lm`.
"""
