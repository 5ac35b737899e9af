"""``python -m tspd.lmeval ...``: lm-evaluation-harness with ``--model tspd`` (:mod:`tspd.eval.lmeval.cli`)."""
import sys

from tspd.eval.lmeval.cli import main

if __name__ == "__main__":
    sys.exit(main())
