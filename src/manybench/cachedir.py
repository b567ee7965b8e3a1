"""Where manybench keeps what it may reuse between runs of one user: $MANYBENCH_CACHE_DIR,
else $XDG_CACHE_HOME/manybench, else ~/.cache/manybench (MPI builds, a machine's clock)."""
from __future__ import annotations

import os


def base() -> str:
    return os.environ.get("MANYBENCH_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "manybench")
