import sys

from tspd.cli import main

sys.exit(main())
