"""``python -m benchmarks <sub-command> [options]`` from the repository root."""

import sys

from .run import main

if __name__ == "__main__":
    sys.exit(main())
