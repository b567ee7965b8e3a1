"""The running manybench as a program a command can call: the `{manybench}` template.

A plan that calls manybench by name (`manybench mpi-build ...`) finds whichever manybench
PATH holds, or none when the running one was started by its full path from a venv that is
not activated. `{manybench}` is the console script installed with the running package (the
one pip recorded), so a task calls the same manybench, of the same version, that runs it."""
from __future__ import annotations

import functools
import os
import sys


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


@functools.lru_cache(maxsize=1)
def path() -> str:
    """The absolute path of the running package's `manybench` script; "manybench" (looked up
    on PATH, as before) when it was installed without one."""
    from importlib import metadata
    try:
        dist = metadata.distribution("manybench")
        for f in dist.files or ():
            if f.name == "manybench" and f.parent.name == "bin":
                found = os.path.realpath(dist.locate_file(f))
                if _executable(found):
                    return found
    except metadata.PackageNotFoundError:      # run from a source tree (PYTHONPATH=src)
        pass
    beside = os.path.join(os.path.dirname(sys.executable), "manybench")
    return beside if _executable(beside) else "manybench"
