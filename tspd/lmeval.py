"""``python -m tspd.lmeval ...``: lm-evaluation-harness with ``--model tspd`` (:mod:`tspd.commands.lmeval`)."""
import sys

from tspd.commands.lmeval import main

if __name__ == "__main__":
    sys.exit(main())
