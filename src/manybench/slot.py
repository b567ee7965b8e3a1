"""The slot process: one pinned worker that prepares, waits for T0 in C, runs, reports.

Protocol on the slot's pipe (pickled tuples), driven by its agent:
  ("prepare", phase, ctx, place) -> ("ready", info) | ("done", Result)   (prepare failed)
  ("connect", peers)             -> ("connected",) | ("done", Result)   (connect failed)
  ("go", t0_ns)                  -> ("done", Result)
     info: what the kernel publishes for its peers (net kernels), else None;
     peers: {rank: info with the node's host}, for kernels whose slots connect
  ("cancel",)                    -> drops a prepared phase, no reply
  ("ping",)                      -> ("pong", pid)
  ("exit",)                      -> the process ends
"""
from __future__ import annotations

import ctypes
import os
import signal
import traceback
from typing import Any

from . import _native
from .command import COMMAND
from .kernels import KERNELS, Kernel, Result, SlotContext
from .kernels.base import KernelError
from .model import Phase
from .placement import SlotPlace

SPIN_NS = 300_000   # the last stretch before T0 is spun, only on a core of the slot's own
PR_SET_PDEATHSIG = 1


def kernel_for(name: str) -> Kernel:
    return COMMAND if name == "command" else KERNELS[name]


def _die_with_parent() -> None:
    # A slot must not outlive its agent, even one killed with SIGKILL.
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass


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
        kernel = kernel_for(phase.kernel)
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

    def serve(self) -> None:
        conn = self.conn
        while True:
            try:
                msg = conn.recv()
            except (EOFError, OSError):
                return
            op = msg[0]
            if op == "go":
                conn.send(("done", self.go(msg[1])))
            elif op == "connect":
                failed = self.connect(msg[1])
                conn.send(("connected",) if failed is None else ("done", failed))
            elif op == "prepare":
                failed = self.prepare(*msg[1:])
                if failed is None:
                    try:
                        conn.send(("ready", self.publish()))
                    except Exception as e:
                        self.cancel()
                        conn.send(("done", _error(f"publish failed: {e!r}")))
                else:
                    conn.send(("done", failed))
            elif op == "cancel":
                self.cancel()
            elif op == "ping":
                conn.send(("pong", os.getpid()))
            elif op == "exit":
                return


def slot_main(conn: Any) -> None:
    """Entry point in the forked child. Never returns: the process ends with os._exit."""
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)   # the coordinator handles Ctrl-C
        _die_with_parent()
        _native.install_term_handler()
        _native.set_timerslack(1)
        SlotLoop(conn).serve()
    except BaseException:
        code = 1
    finally:
        os._exit(code)
