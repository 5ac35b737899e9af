"""One module per ``python -m tspd`` command (:mod:`tspd.cli`): a thin ``add_arguments`` + ``main`` over library
calls."""
