"""A selector's select held once armed, for tests of a loop that serves a batch of events: the
events of its next call are made while it waits, so they come in one batch, as on a machine
that kept the loop off its cpu (tests/node/test_simulated_server.py, tests/node/test_gate.py)."""
from __future__ import annotations

import threading

WAIT_S = 30.0       # a bound on events that come at once when nothing is wrong


class HeldSelect:
    """Set as a selector's select (sel.select = HeldSelect(sel)); arm(), make the events,
    then go.set(): the held call returns them in one batch (its keys' data in `batch`)."""

    def __init__(self, sel) -> None:
        self.select_now = sel.select
        self.armed = False
        self.idle = threading.Event()     # in a select not held: armed now, the next is held
        self.waiting, self.go = threading.Event(), threading.Event()
        self.batch: list = []             # the data of the held call's keys, in order

    def __call__(self, timeout=None):
        if not self.armed:
            self.idle.set()
            try:
                return self.select_now(timeout)
            finally:
                self.idle.clear()
        self.armed = False
        self.waiting.set()
        self.go.wait(WAIT_S)
        events = self.select_now(timeout)
        self.batch = [key.data for key, _ in events]
        return events

    def arm(self) -> None:
        """Hold the select after the one the loop is in (the next event's)."""
        assert self.idle.wait(WAIT_S)
        self.armed = True
