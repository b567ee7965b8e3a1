"""A node's agent as its own small process, for nodes reached through Dask.

The Dask worker process is large and threaded: slots forked from it would each carry a
share of its memory, and forking a threaded process is fragile. So the worker starts this
fresh interpreter, which forks the slot pool and serves two channels, one request at a time:
the worker over one pipe (the run's Start, Close, and any request relayed for a coordinator
that cannot reach this process directly), and, from the run's Start on, the coordinator
itself over the direct channel (direct.py: its own port, the run's secret, TLS on a secured
cluster). Each request of protocol.py gets its reply, or Failed(error).

In the largest runs the agent may also be a relay (relay.py): Group makes it one, each
Forward carries a round to its members while it serves its own request, SyncClocks measures
their clocks. Its channels to them close with the run.

Each request on the direct channel is stamped in memory shared with the worker (lease.Heard),
which holds the run's lease: the coordinator need not renew it while phases come.

SIGTERM (the worker aborting the run, its lease running out, or the worker dying: the
kernel sends it then) stops every slot and its children, removes scratch unless the plan
keeps it, and exits.
"""
from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import sys
import traceback
from multiprocessing.connection import Connection

from ..build_isa import CpuMismatch
from .agent import Agent
from .direct import Listener, TlsFiles, client_context, recv_frame, send_frame
from .lease import Heard
from .procs import die_with_parent
from .protocol import (Abort, Close, Connect, DirectOffer, Failed, Finished, Forward, Group,
                       Grouped, Ping, Prepare, ProtocolMismatch, Request, Run, RunCommands,
                       SnapshotTaken, Start, Started, SyncClocks, TakeSnapshot, decode, encode)
from .relay import Relay


class Stop(BaseException):
    """Raised by SIGTERM wherever the agent is (waiting for slots or for the worker)."""


def _on_term(signum: int, frame: object) -> None:
    raise Stop


class AgentServer:
    def __init__(self, conn: Connection | None, direct: dict | None = None,
                 heard: Heard | None = None) -> None:
        """conn: the pipe to the worker. direct: how to listen for the coordinator ({"host",
        "tls": [ca, cert, key] | None}), or {"off": why} (dask_plugin.direct_config). heard:
        stamped at each request on the direct channel (the worker's lease reads it)."""
        self.conn = conn
        self.heard = heard
        self.direct_config = direct or {"off": "no direct channel was configured"}
        self.agent: Agent | None = None
        self.listener: Listener | None = None
        self.direct: socket.socket | None = None     # the coordinator's connection
        self.secret = ""                              # the run's (Start)
        self.node = ""                                # this node's name in the run
        self.relay: Relay | None = None               # this node relays a group (Group)
        self.sel = selectors.DefaultSelector()        # kept: made anew, it costs per phase

    def reply(self, req: Request) -> object:
        """handle's answer, or Failed saying why it has none (a refused Start: the versions)."""
        try:
            return self.handle(req)
        except (ProtocolMismatch, CpuMismatch) as e:    # refused: no traceback to read
            return Failed(str(e))
        except Exception as e:
            return Failed(f"{e!r}\n{traceback.format_exc(limit=5)}")

    def handle(self, req: Request) -> object:
        if type(req) is Run and self.agent is not None:    # every phase: no chain of tests
            return self._run(self.agent, req)
        if isinstance(req, Start):
            self.agent = Agent.of(req)
            self.secret, self.node = req.secret, req.node
            dispatch = self.agent.start()
            offer, why = self._listen(req.secret)
            return Started(dispatch, offer, why)
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
            case Group(members):
                return self._group(members)
            case Forward(frames) if self.relay is not None:
                return self.relay.forward(frames, self._own)
            case SyncClocks() if self.relay is not None:
                return self.relay.clocks()
            case Run():
                return self._run(agent, req)
        raise ValueError(f"unknown request {type(req).__name__}")

    @staticmethod
    def _run(agent: Agent, req: Run) -> Finished:
        """A phase: go at T0, its results. A light phase's prepare travels with its go (one
        round trip to each slot)."""
        agent.go(req.t0_ns, None if req.phase is None else Prepare(req.phase, req.work))
        while not agent.poll(0.5):
            pass
        return agent.finished()

    def _listen(self, secret: str) -> tuple[DirectOffer | None, str]:
        """Open the direct channel for the run that holds `secret`: where it listens, or why
        it does not (the coordinator then keeps the worker's relay)."""
        self._close_direct()
        why = self.direct_config.get("off", "")
        if why or not secret:
            return None, why or "the coordinator gave no secret (it does not go direct)"
        tls = self.direct_config.get("tls")
        try:
            self.listener = Listener(secret, TlsFiles(*tls) if tls else None,
                                     self.direct_config.get("host", ""))
        except (OSError, ValueError) as e:     # no port, certificates it cannot load
            return None, f"the agent cannot listen: {e}"
        self.sel.register(self.listener, selectors.EVENT_READ)
        return DirectOffer(self.listener.port, self.listener.tls), ""

    def _group(self, members: dict) -> Grouped:
        """Become the relay of these members (again: the old group's channels close)."""
        self._close_relay()
        if not self.secret:
            raise RuntimeError("a relay needs the run's secret (Start gave none)")
        tls = self.direct_config.get("tls")
        self.relay = Relay(members, self.secret, client_context(TlsFiles(*tls)) if tls else None,
                           self.node)
        return Grouped(self.relay.open())

    def _own(self, data: bytes) -> bytes:
        """The relay's own request of a Forward, served as if it came alone."""
        try:
            req = decode(data, "the coordinator")
        except (ProtocolMismatch, ValueError) as e:
            return encode(Failed(str(e)))
        return encode(self.reply(req))

    def _close_relay(self) -> None:
        if self.relay is not None:
            self.relay.close()
            self.relay = None

    def _set_direct(self, conn: socket.socket | None) -> None:
        """The coordinator's connection (None: none)."""
        if self.direct is not None:
            self.sel.unregister(self.direct)
            self.direct.close()
        self.direct = conn
        if conn is not None:
            self.sel.register(conn, selectors.EVENT_READ)

    def _close_direct(self) -> None:
        self._close_relay()
        self._set_direct(None)
        if self.listener is not None:
            self.sel.unregister(self.listener)
            self.listener.close()
            self.listener = None

    # -- serving -------------------------------------------------------------------------------
    def serve(self) -> None:
        self.sel.register(self.conn, selectors.EVENT_READ)
        try:
            while True:
                for key, _ in self.sel.select():
                    r = key.fileobj
                    if r is self.conn:
                        if not self._from_worker():
                            return
                    elif r is self.listener:     # a connection the gate authenticated
                        conn = self.listener.take()
                        if conn is not None:        # the run's coordinator (again): the last
                            self._set_direct(conn)
                    elif r is self.direct:
                        self._from_coordinator()
        except Stop:
            pass
        finally:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            self._close_direct()
            if self.agent:
                self.agent.abort()
                self.agent = None

    def _from_worker(self) -> bool:
        """One request from the worker's pipe; False once the agent must end."""
        try:
            data = self.conn.recv_bytes()
        except (EOFError, OSError):   # the worker is gone
            return False
        try:
            req = decode(data, "the coordinator")
        except (ProtocolMismatch, ValueError) as e:   # the relay refuses these first
            self.conn.send_bytes(encode(Failed(str(e))))
            return True
        if isinstance(req, (Close, Abort)):
            self._close_direct()
            if self.agent:
                (self.agent.close if isinstance(req, Close) else self.agent.abort)()
                self.agent = None
            self.conn.send_bytes(encode(None))
            return False
        self.conn.send_bytes(encode(self.reply(req)))
        return True

    def _from_coordinator(self) -> None:
        """The direct channel's requests, each answered on it; a channel that closes or
        speaks garbage is dropped (the coordinator finds the node lost)."""
        sock, heard = self.direct, self.heard
        try:
            while True:
                data = recv_frame(sock)
                if heard is not None:   # only the run's coordinator or relay gets this far
                    heard.stamp()
                try:
                    reply = self.reply(decode(data, "the coordinator"))
                except (ProtocolMismatch, ValueError) as e:
                    reply = Failed(str(e))
                send_frame(sock, encode(reply))
                # TLS may hold a whole next frame already read off the socket
                if not (hasattr(sock, "pending") and sock.pending()):
                    return
        except (EOFError, OSError, ValueError):
            self._set_direct(None)


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)    # the worker decides when we stop
    signal.signal(signal.SIGTERM, _on_term)
    die_with_parent()
    direct = json.loads(sys.argv[2]) if len(sys.argv) > 2 else None
    heard = Heard(int(sys.argv[3])) if len(sys.argv) > 3 else None
    from ..inventory.environment import warm   # noqa: PLC0415
    warm()     # started ahead of the run: its snapshot's probe is paid here, idle
    AgentServer(Connection(int(sys.argv[1])), direct, heard).serve()
    os._exit(0)


if __name__ == "__main__":
    main()
