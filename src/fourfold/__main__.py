"""`python -m fourfold` runs the CLI."""

import sys

from fourfold.cli import main

sys.exit(main())
