"""``python -m structkernels`` runs the command line."""

import sys

from structkernels.cli import main

sys.exit(main())
