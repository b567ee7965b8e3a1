"""A node's agent as its own small process, for nodes reached through Dask.

The Dask worker process is large and threaded: slots forked from it would each carry a
share of its memory, and forking a threaded process is fragile. So the worker starts this
fresh interpreter, which forks the slot pool and serves the worker over one pipe:
  ("start", run, node, slots, default_dir, keep) -> ("ok", ns of a round trip to all slots)
  ("prepare", phase, places, ranks)              -> ("ok", ({slot: Result} failed prepares,
                                                          {slot: published info}))
  ("connect", peers)                             -> ("ok", {slot: Result}) failed connects
  ("run", phase | None, places, ranks, t0_ns)    -> ("ok", {slot: Result})
       phase given: prepare first (one message per node per phase); None: already prepared
  ("ping",)                                      -> ("ok", None)
  ("close",)                                     -> ("ok", None), then the process ends
Any failure answers ("error", text). SIGTERM (the worker aborting the run, or dying: the
kernel sends it then) stops every slot and its children, removes scratch unless the plan
keeps it, and exits.
"""
from __future__ import annotations

import ctypes
import os
import signal
import sys
import traceback
from multiprocessing.connection import Connection

from .agent import Agent

PR_SET_PDEATHSIG = 1


class Stop(BaseException):
    """Raised by SIGTERM wherever the agent is (waiting for slots or for the worker)."""


def _on_term(signum: int, frame: object) -> None:
    raise Stop


class AgentServer:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.agent: Agent | None = None
        self.keep = False

    def handle(self, msg: tuple) -> object:
        op, agent = msg[0], self.agent
        if op == "start":
            _, run, node, slots, default_dir, self.keep = msg
            self.agent = Agent(node, run, slots, default_dir)
            return self.agent.start()
        if op == "ping":
            return None
        if agent is None:
            raise RuntimeError("the agent has not been started")
        if op == "prepare":
            agent.prepare(*msg[1:])
            return agent.results(), agent.ready_info()
        if op == "connect":
            agent.connect(msg[1])
            return agent.results()
        if op == "run":
            phase, places, ranks, t0_ns = msg[1:]
            if phase is not None:
                agent.prepare(phase, places, ranks)
            agent.go(t0_ns)
            while not agent.poll(0.5):
                pass
            return agent.results()
        raise ValueError(f"unknown request {op!r}")

    def serve(self) -> None:
        try:
            while True:
                try:
                    msg = self.conn.recv()
                except (EOFError, OSError):   # the worker is gone
                    break
                if msg[0] == "close":
                    if self.agent:
                        self.agent.close(self.keep)
                        self.agent = None
                    self.conn.send(("ok", None))
                    return
                try:
                    self.conn.send(("ok", self.handle(msg)))
                except Exception as e:
                    self.conn.send(("error", f"{e!r}\n{traceback.format_exc(limit=5)}"))
        except Stop:
            pass
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if self.agent:
            self.agent.abort(self.keep)


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)    # the worker decides when we stop
    signal.signal(signal.SIGTERM, _on_term)
    try:
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    AgentServer(Connection(int(sys.argv[1]))).serve()
    os._exit(0)


if __name__ == "__main__":
    main()
