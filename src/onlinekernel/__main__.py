"""``python -m onlinekernel``: the command line (see :mod:`onlinekernel.cli`)."""
import sys

from onlinekernel.cli import main

sys.exit(main())
