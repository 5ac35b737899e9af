"""What an embedded checkpoint's decoding does on the task it was trained on, measured from its own decodings.

- :mod:`tspd.measures.regime`: the regime figures (accuracy at 1 / 2 / 4 / 8 tokens per step and one step per
  block, Fast-dLLM's TPF, what each cache costs, the doubled window), ``<checkpoint>/regime.json``;
- :mod:`tspd.measures.dynamics`: the token traces' Section 3 dynamics (certain at once, right but unsure,
  Fig. 1's flip gap, rises before 0.9), ``<checkpoint>/dynamics.json``.

Both read only the layers below (models, tasks, decoding, records): ``train-lm`` logs the regime figures along
its learning curve, the ``regime`` and ``dynamics`` commands write the records, the book draws them.
"""
