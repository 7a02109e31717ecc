"""`python -m fourfold.cli` runs the CLI."""

import sys

from fourfold.cli import main

sys.exit(main())
