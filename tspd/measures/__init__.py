"""What an embedded checkpoint's decoding does on the task it was trained on, measured from its own decodings.
An experiment is one module: what it measures, its record (path, load, save) and the book's tables and figure.

- :mod:`tspd.measures.regime`: the regime figures (accuracy at 1 / 2 / 4 / 8 tokens per step and one step per
  block, Fast-dLLM's TPF, what each cache costs, the doubled window), ``<checkpoint>/regime.json``, and the
  Regime page's tables and figures;
- :mod:`tspd.measures.dynamics`: the token traces' Section 3 dynamics (certain at once, right but unsure,
  Fig. 1's flip gap, rises before 0.9), ``<checkpoint>/dynamics.json``, and their tables and figure;
- :mod:`tspd.measures.ce_audit`: does CE lift the tokens that rise (Section 3.3), ``<checkpoint>/ce_audit.json``,
  and its tables;
- :mod:`tspd.measures.oracle`: the dynamics measures on a task's exact posterior (no model),
  ``results/training/oracle/oracle.json``, and its tables;
- :mod:`tspd.measures.cache_agreement`: where a KV-cached decoding parts from its no-cache twin (paper Table 4),
  ``results/cache_agreement.json`` and its per-problem rows, and its table;
- :mod:`tspd.measures.lmeval_example`: the README's lm-eval example, its three commands run and timed,
  ``results/lmeval_example.json``, and its table.

They read only the layers below (models, tasks, decoding, records): ``train-lm`` logs the regime figures along
its learning curve, the ``regime``, ``dynamics``, ``ce-audit``, ``oracle-dynamics``, ``cache-agreement`` and
``lmeval-example`` commands write the records, the book draws them.
"""
