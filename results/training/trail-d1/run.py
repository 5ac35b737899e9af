"""Scratch (not committed): train-lm on the trail task with a smaller answer (window 64), for a learning-speed gate."""
import sys
from tspd.tasks import trail
trail.TRAILS, trail.CYCLE = (1, 3), (5, 9)
from tspd.cli import main
sys.exit(main(sys.argv[1:]))
