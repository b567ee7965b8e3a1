"""The coordinator's heartbeat: its run row's notes.heartbeat_ns renewed every few seconds
from a thread, so a reader can tell a run whose coordinator was killed (results/liveness.py).
"""
from __future__ import annotations

import os
import sqlite3
import threading

from ..config import timing
from ..results.contract import RunNotes
from ..results.liveness import process_started, this_host
from ..results.store import Store


def stamp(notes: RunNotes) -> RunNotes:
    """Notes naming this process as the run's coordinator, and how old its heartbeat may
    be before readers call it gone (its own heartbeat.stale, not theirs)."""
    pid = os.getpid()
    notes.pid, notes.host, notes.pid_started = pid, this_host(), process_started(pid)
    notes.heartbeat_stale_s = timing("heartbeat.stale")
    return notes


class Heartbeat:
    def __init__(self, store: Store, run_id: str, every_s: float | None = None) -> None:
        self.store, self.run_id = store, run_id
        self.every_s = timing("heartbeat.every") if every_s is None else every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="manybench-heartbeat",
                                        daemon=True)

    def start(self) -> Heartbeat:
        self.store.heartbeat(self.run_id)
        self._thread.start()
        return self

    def _beat(self) -> None:
        while not self._stop.wait(self.every_s):
            try:
                self.store.heartbeat(self.run_id)
            except (sqlite3.Error, OSError):   # a busy or full disk: the next beat tries again
                pass      # (a bug ends the thread, told by threading.excepthook)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=self.every_s + 1)
