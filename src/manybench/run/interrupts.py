"""How a run ends once interrupted: what measured is saved and the run row written whatever
further Ctrl-C or SIGTERM come; only the variant's teardown may be cut short by one.

A second Ctrl-C during a slow abort used to escape the cleanup and leave the run `running`
for good. Now the saving steps run with both signals ignored (they are short and bounded);
the teardown runs with them raising KeyboardInterrupt, which stops it and moves on.
"""
from __future__ import annotations

import signal
from contextlib import contextmanager
from typing import Callable, Iterator

SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _raise(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def own() -> None:
    """The command's first instruction: Ctrl-C and SIGTERM raise KeyboardInterrupt, set
    explicitly whatever was inherited (a script's background job starts with SIGINT ignored,
    and Python then leaves it ignored)."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _raise)


@contextmanager
def ignored() -> Iterator[None]:
    """Ctrl-C and SIGTERM ignored inside (left so after: the run is ending)."""
    for s in SIGNALS:
        signal.signal(s, signal.SIG_IGN)
    yield


def cut_short(step: Callable[[], None]) -> bool:
    """Run a step that a further Ctrl-C or SIGTERM may stop; True when it was stopped.
    The signals are ignored again afterwards."""
    stopped = False
    try:
        for s in SIGNALS:
            signal.signal(s, _raise)
        step()
    except KeyboardInterrupt:
        stopped = True
    finally:
        for s in SIGNALS:
            signal.signal(s, signal.SIG_IGN)
    return stopped
