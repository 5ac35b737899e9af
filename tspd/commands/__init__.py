"""One module per ``python -m tspd`` command (:mod:`tspd.cli`), named after it (``-`` as ``_``): a thin
``add_arguments`` + ``main`` over library calls. Beside them :mod:`tspd.commands.lmeval`, the command line of
``python -m tspd.lmeval`` (lm-eval's own, with ``--model tspd``)."""
