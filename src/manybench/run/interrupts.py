"""How a run ends once interrupted: what measured is saved and the run row written whatever
further Ctrl-C or SIGTERM come; only the variant's teardown may be cut short by one.

A second Ctrl-C during a slow abort used to escape the cleanup and leave the run `running`
for good. Now the saving steps run with both signals ignored (they are short and bounded);
the teardown runs with them raising KeyboardInterrupt, which stops it and moves on.
"""
from __future__ import annotations

import signal
import sys
from contextlib import contextmanager
from typing import Callable, Iterator

SIGNALS = (signal.SIGINT, signal.SIGTERM)

# An interrupt came. Its KeyboardInterrupt is raised wherever Python happens to be, and
# library code may swallow it: raised inside a callback (a weakref's, as an import ends)
# it is printed as "Exception ignored" and lost; a Dask client then waited 10 s on a
# module lock the lost interrupt left taken and failed an assertion (exit 1, a traceback).
# Kept here, the command still ends as interrupted (entry.py, cli/group.py), and a run stops at
# its next phase (check()).
_came = False


def raise_interrupt(signum: int, frame: object) -> None:
    """The handler of both signals: note it, raise KeyboardInterrupt."""
    global _came
    _came = True
    raise KeyboardInterrupt


def interrupted() -> bool:
    """Whether an interrupt came in this process (handled, or swallowed on its way)."""
    return _came


def check() -> None:
    """Raise KeyboardInterrupt for an interrupt that came and was swallowed before it got
    to us (called where a run can stop cleanly: before each phase)."""
    global _came
    if _came:
        _came = False
        raise KeyboardInterrupt


def take_signals() -> None:
    """The command's first instruction: Ctrl-C and SIGTERM raise KeyboardInterrupt, set
    explicitly whatever was inherited (a script's background job starts with SIGINT ignored,
    and Python then leaves it ignored)."""
    for s in SIGNALS:
        signal.signal(s, raise_interrupt)
    sys.unraisablehook = _unraisable


def _unraisable(info: "sys.UnraisableHookArgs") -> None:
    """Python prints an exception it cannot raise ("Exception ignored in ..." and its
    traceback): a KeyboardInterrupt lost so is one of ours, noted in _came, and the command
    ends saying "interrupted", not with a traceback."""
    if isinstance(info.exc_value, KeyboardInterrupt):
        return
    sys.__unraisablehook__(info)


@contextmanager
def signals_ignored() -> Iterator[None]:
    """Ctrl-C and SIGTERM ignored inside (left so after: the run is ending)."""
    for s in SIGNALS:
        signal.signal(s, signal.SIG_IGN)
    yield


def interruptible(step: Callable[[], None], then_ignore: bool = True) -> bool:
    """Run a step that a further Ctrl-C or SIGTERM may stop; True when it was stopped.
    The signals are ignored again afterwards (then_ignore: the run is ending), or handled as
    they were before."""
    before = {s: signal.getsignal(s) for s in SIGNALS}
    stopped = False
    try:
        for s in SIGNALS:
            signal.signal(s, raise_interrupt)
        step()
    except KeyboardInterrupt:
        stopped = True
    finally:
        for s in SIGNALS:
            signal.signal(s, signal.SIG_IGN if then_ignore else before[s])
    return stopped
