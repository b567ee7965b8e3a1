"""A node's agent as its own small process, for nodes reached through Dask.

The Dask worker process is large and threaded: slots forked from it would each carry a
share of its memory, and forking a threaded process is fragile. So the worker starts this
fresh interpreter, which forks the slot pool and serves the worker over one pipe: each
request of protocol.py (encoded, as the coordinator sent it) gets its reply, or
Failed(error). SIGTERM (the worker
aborting the run, or dying: the kernel sends it then) stops every slot and its children,
removes scratch unless the plan keeps it, and exits.
"""
from __future__ import annotations

import os
import signal
import sys
import traceback
from multiprocessing.connection import Connection

from .agent import Agent
from .procs import die_with_parent
from .protocol import (Abort, Close, Connect, Failed, Finished, Ping, Prepare,
                       ProtocolMismatch, Request, Run, RunCommands, SnapshotTaken, Start,
                       Started, TakeSnapshot, decode, encode)


class Stop(BaseException):
    """Raised by SIGTERM wherever the agent is (waiting for slots or for the worker)."""


def _on_term(signum: int, frame: object) -> None:
    raise Stop


class AgentServer:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.agent: Agent | None = None

    def reply(self, req: Request) -> object:
        """handle's answer, or Failed saying why it has none (a refused Start: the versions)."""
        try:
            return self.handle(req)
        except ProtocolMismatch as e:
            return Failed(str(e))
        except Exception as e:
            return Failed(f"{e!r}\n{traceback.format_exc(limit=5)}")

    def handle(self, req: Request) -> object:
        if isinstance(req, Start):
            self.agent = Agent.of(req)
            return Started(self.agent.start())
        if isinstance(req, Ping):
            return None
        if isinstance(req, TakeSnapshot):      # needs no slots: also before Start
            from ..inventory.provenance import snapshot   # noqa: PLC0415
            return SnapshotTaken(snapshot(req.dirs, req.programs))
        if isinstance(req, RunCommands) and self.agent is None:
            from .commands import run_commands   # noqa: PLC0415
            return run_commands(req)
        agent = self.agent
        if agent is None:
            raise RuntimeError("the agent has not been started")
        match req:
            case Prepare():
                return agent.prepare(req)
            case Connect():
                return agent.connect(req)
            case RunCommands():
                return agent.run_commands(req)
            case Run(t0_ns, work, phase):
                # a light phase's prepare travels with its go (one round trip to each slot)
                agent.go(t0_ns, None if phase is None else Prepare(phase, work))
                while not agent.poll(0.5):
                    pass
                return Finished(agent.results(), notices=agent.take_notices(),
                                telemetry=agent.telemetry.drain())
        raise ValueError(f"unknown request {type(req).__name__}")

    def serve(self) -> None:
        try:
            while True:
                try:
                    req = decode(self.conn.recv_bytes(), "the coordinator")
                except (EOFError, OSError):   # the worker is gone
                    break
                except ProtocolMismatch as e:   # the relay refuses these first
                    self.conn.send_bytes(encode(Failed(str(e))))
                    continue
                if isinstance(req, (Close, Abort)):
                    if self.agent:
                        (self.agent.close if isinstance(req, Close) else self.agent.abort)()
                        self.agent = None
                    self.conn.send_bytes(encode(None))
                    return
                self.conn.send_bytes(encode(self.reply(req)))
        except Stop:
            pass
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if self.agent:
            self.agent.abort()


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)    # the worker decides when we stop
    signal.signal(signal.SIGTERM, _on_term)
    die_with_parent()
    AgentServer(Connection(int(sys.argv[1]))).serve()
    os._exit(0)


if __name__ == "__main__":
    main()
