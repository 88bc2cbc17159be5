"""Fail on purpose (for the failed-run test)."""

__version__ = "1.0.0"
__tool_type__ = "python"
__executor_id__ = "rt/py_rt"
__category__ = "text"
__tool_description__ = "Print to stderr and exit 3"

import sys

if __name__ == "__main__":
    print("boom", file=sys.stderr, flush=True)
    sys.exit(3)
