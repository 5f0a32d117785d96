"""`python -m lift`: the `lift` command (see lift.cli)."""

import sys

from lift.cli import main

if __name__ == "__main__":
    sys.exit(main())
