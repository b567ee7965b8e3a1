"""The slot process: one pinned worker that prepares, waits for T0 in C, runs, reports.

Driven by its agent over a pipe with the Slot* messages of protocol.py.
"""
from __future__ import annotations

import os
import signal
import traceback
from typing import Any

from .. import _native
from ..kernels import KERNELS, Kernel, Result, SlotContext
from ..kernels.base import KernelError
from ..model import Phase
from .procs import die_with_parent
from .protocol import (SlotConnect, SlotConnected, SlotDone, SlotExit, SlotGo,
                       SlotPing, SlotPlace, SlotPong, SlotPrepare, SlotReady)

SPIN_NS = 300_000   # the last stretch before T0 is spun, only on a core of the slot's own


def _error(msg: str) -> Result:
    return Result(status="error", error=msg)


class SlotLoop:
    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.prepared: tuple[Kernel, Any, int] | None = None   # kernel, state, spin_ns
        self.settle_ns = 0
        self.affinity: tuple[int, ...] = ()

    def prepare(self, phase: Phase, ctx: SlotContext, place: SlotPlace) -> Result | None:
        if place.affinity != self.affinity:
            os.sched_setaffinity(0, place.affinity)
            self.affinity = place.affinity
        kernel = KERNELS[phase.kernel]
        try:
            state = kernel.prepare(ctx, phase.params)
        except KernelError as e:
            return _error(str(e))
        except OSError as e:
            return _error(f"prepare: {e.strerror or e}" + (f": {e.filename}" if e.filename else ""))
        except Exception as e:  # a kernel bug must not take the slot down
            return _error(f"prepare failed: {e!r}\n{traceback.format_exc(limit=3)}")
        if place.settle_ns != self.settle_ns:
            _native.set_settle(place.settle_ns)
            self.settle_ns = place.settle_ns
        self.prepared = (kernel, state, SPIN_NS if place.spin else 0)
        return None

    def publish(self) -> dict | None:
        if self.prepared is None or self.prepared[0].publish is None:
            return None
        kernel, state, _ = self.prepared
        return kernel.publish(state)

    def connect(self, peers: dict) -> Result | None:
        """Before T0 is chosen: let a kernel whose slots talk to each other connect."""
        if self.prepared is None or self.prepared[0].connect is None:
            return None
        kernel, state, _ = self.prepared
        try:
            kernel.connect(state, peers)
            return None
        except KernelError as e:
            failed = _error(str(e))
        except Exception as e:
            failed = _error(f"connect failed: {e!r}")
        self.cancel()
        return failed

    def go(self, t0_ns: int) -> Result:
        if self.prepared is None:
            return _error("go without a prepared phase")
        kernel, state, spin = self.prepared
        self.prepared = None
        try:
            return kernel.run(state, t0_ns, spin)
        except Exception as e:
            return _error(f"run failed: {e!r}")
        finally:
            self._cleanup(kernel, state)

    def cancel(self) -> None:
        if self.prepared is not None:
            kernel, state = self.prepared[:2]
            self.prepared = None
            self._cleanup(kernel, state)

    @staticmethod
    def _cleanup(kernel: Kernel, state: Any) -> None:
        if kernel.cleanup is not None:
            try:
                kernel.cleanup(state)
            except Exception:
                pass

    def _prepare_reply(self, msg: SlotPrepare) -> SlotReady | SlotDone:
        failed = self.prepare(msg.phase, msg.ctx, msg.place)
        if failed is not None:
            return SlotDone(failed)
        try:
            return SlotReady(self.publish())
        except Exception as e:
            self.cancel()
            return SlotDone(_error(f"publish failed: {e!r}"))

    def serve(self) -> None:
        conn = self.conn
        while True:
            try:
                msg = conn.recv()
            except (EOFError, OSError):
                return
            match msg:
                case SlotGo(t0_ns):
                    conn.send(SlotDone(self.go(t0_ns)))
                case SlotConnect(peers):
                    failed = self.connect(peers)
                    conn.send(SlotConnected() if failed is None else SlotDone(failed))
                case SlotPrepare():
                    conn.send(self._prepare_reply(msg))
                case SlotPing():
                    conn.send(SlotPong(os.getpid()))
                case SlotExit():
                    return


def slot_main(conn: Any) -> None:
    """Entry point in the forked child. Never returns: the process ends with os._exit."""
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)   # the coordinator handles Ctrl-C
        die_with_parent()   # a slot must not outlive its agent, even one killed with SIGKILL
        _native.install_term_handler()
        _native.set_timerslack(1)
        SlotLoop(conn).serve()
    except BaseException:
        code = 1
    finally:
        os._exit(code)
