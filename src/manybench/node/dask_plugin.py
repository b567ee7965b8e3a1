"""The node side on Dask: a WorkerPlugin giving a Dask worker manybench's agent.

It adds one RPC handler to the worker, `mb_call` (over Dask's comms and so its TLS), a TCP
clock echo, and starts the node agent as a fresh subprocess (server.py) that owns the slot
pool; the next run's agent is started ahead, when the worker starts or a run ends, so a
run's start does not wait for an interpreter on every node. Requests and replies are
protocol.py's, encoded by the engine and the agent server; the worker answers Info, Renew,
MeasureNoise and Abort itself, relays the rest's bytes unread, and refuses a request of
another protocol version before anything else.

Who is served (security/auth.py): from a run's Start to its end the node is that run's, and
every request must carry the HMAC of its kind and bytes under the run's key; one that does
not is refused, whatever it asks (an Abort, a Start of another run: a Start waits for the
run's lease to run out, then takes the node). A free node answers Info and MeasureNoise
(on a secured cluster only members reach it at all: Dask's mutual TLS), takes a Start, and
ignores an Abort, Close or Renew: there is nothing to end.

A run's phases do not pass through here: the agent listens for the run's coordinator on a
port of its own (node/direct.py), plain on an open cluster, TLS with this worker's own
certificates on a secured one (direct_config). Where that cannot be (certificates held only
in memory, MANYBENCH_DIRECT=0 on the node), the agent does not listen, says why in its
Started, and the coordinator relays every request through here as before.

Workers get it from `manybench worker` or, when started by SSHCluster, dask-jobqueue or
srun, through `--preload manybench.node.dask_plugin` (see dask_setup below).
"""
from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import struct
import threading
from typing import Any

from distributed import WorkerPlugin

from .. import build_isa
from ..inventory import noise
from ..inventory.environment import collect, warm
from ..inventory.topology import topology
from ..security import auth
from .clock import EchoServer
from .lease import Heard, Lease
from .procs import wait_child
from .protocol import (Failed, Info, MeasureNoise, NodeInfo, NoiseFloor, ProtocolMismatch,
                       Renew, Start, check_envelope, decode, encode)

PLUGIN_NAME = "manybench-agent"
FREE = ("Info", "MeasureNoise")       # what a node no run holds answers (Start aside)
ENDS = ("Abort", "Close", "Renew")    # ... and takes as done: there is nothing to end


class AgentPlugin(WorkerPlugin):
    name = PLUGIN_NAME

    def __init__(self, slots: int | None = None, node: str | None = None) -> None:
        self.slots = slots
        self.node = node
        self.proc: subprocess.Popen | None = None
        self.stream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self.lock = asyncio.Lock()
        self.echo: EchoServer | None = None
        self.heard: Heard | None = None   # the running agent's stamp (lease.py)
        self.lease = Lease(self._heard)   # the run's coordinator must renew it (lease.py)
        # an agent process started ahead, idle until a run's Start: its interpreter start
        # and imports are paid while the worker waits, not by the run (64 nodes on a few
        # cpus would otherwise start their agents in series at every run start)
        self.spare: Spare | None = None
        self.run = ""                         # the run that holds this node ("": none)
        self.call_key: bytes | None = None    # its keys (security/auth.py)
        self.echo_key: bytes | None = None

    # -- the worker's life -----------------------------------------------------------
    def setup(self, worker: Any) -> None:
        self.worker = worker
        # our ports listen where the worker is reached (the interface that routes to the
        # scheduler, or --host), never on every interface
        self.echo = EchoServer(worker.ip, lambda: self.echo_key)
        worker.handlers["mb_call"] = self.call
        self.direct = direct_config(worker)
        self.spare = _popen_agent(self.direct)
        # Info's inventory probes one core once per process: now, off the loop, not in
        # the run's first round
        threading.Thread(target=warm, name="mb-warm", daemon=True).start()

    def teardown(self, worker: Any) -> None:
        self.lease.stop()
        self._stop(terminate=True)
        if self.spare is not None:      # idle: closing its pipe ends it
            proc, sock, _ = self.spare
            self.spare = None
            sock.close()
            _end(proc)
        if self.echo:
            self.echo.close()

    def node_name(self) -> str:
        name = self.node or self.worker.name
        # Dask's own names are numbers, addresses or cluster-job names; a hostname says more
        if name is None or isinstance(name, int) or str(name).isdigit() or "://" in str(name):
            return socket.gethostname().split(".")[0]
        return str(name)

    # -- requests the worker answers itself ------------------------------------------
    async def info(self, req: Info) -> NodeInfo:
        """Who this node is, with its inventory collected here, and why its cpu cannot run
        the build if it cannot (the agent it would start refuses the run's Start for that)."""
        inventory = await asyncio.to_thread(collect)
        return NodeInfo(
            node=self.node_name(), slots=self.slots or len(topology()), cpus=topology(),
            echo_port=self.echo.port if self.echo else 0, host=self.worker.ip, pid=os.getpid(),
            machine=_boot_id(), inventory=inventory, refused=build_isa.refusal())

    async def noise(self, req: MeasureNoise) -> NoiseFloor:
        """This node's noise floor (inventory/noise.py), measured now on its cpus: the
        coordinator asks one node per machine and cpus (engines/floors.py)."""
        return NoiseFloor(await asyncio.to_thread(noise.measure, [c.id for c in topology()],
                                                  req.seconds))

    async def renew(self, req: Renew) -> None:
        """The coordinator is alive: extend the lease by `seconds`."""
        if self.lease.until is not None:
            self.lease.renew(req.seconds)

    def _heard(self) -> float:
        """When our agent last heard the coordinator on its direct channel (0.0: never)."""
        return self.heard.last() if self.heard is not None else 0.0

    async def _lease_ran_out(self) -> None:
        # the coordinator is gone: stop the agent, its slots and their commands
        self._end_run()
        await asyncio.to_thread(self._stop, True)

    async def call(self, kind: str, request: bytes, tag: bytes = b"") -> bytes:
        """The coordinator's one handler: an encoded request in, its encoded reply out.
        kind: the request's type name; tag: its HMAC under the run's key. A request of
        another protocol version is refused unread; one the node's run did not sign is
        refused unread; the agent's requests are relayed without decoding either way
        (asyncio on the pipe, no thread hop)."""
        try:
            check_envelope(request, "the coordinator")
        except ProtocolMismatch as e:   # our reply's envelope makes the coordinator refuse us
            return encode(Failed(str(e)))
        refused = await self._refusal(kind, request, tag)
        if refused is not None:
            return refused
        answer = self.ANSWERED_HERE.get(kind)
        if answer is not None:      # not behind the lock: a phase may be holding it
            try:
                return encode(await answer(self, decode(request, "the coordinator")))
            except Exception as e:   # a probe that failed here: the coordinator says why
                return encode(Failed(f"{kind}: {e!r}"))
        if kind == "Abort":
            self._end_run()
            await asyncio.to_thread(self._stop, True)
            await self._ready_next()
            return encode(None)
        if self.lease.until is not None:
            self.lease.renew()
        async with self.lock:
            if kind == "Start":
                await asyncio.to_thread(self._stop)
                await self._spawn()
                self.lease.renew()
                self.lease.watch(self._lease_ran_out)
            if self.stream is None:
                return encode(Failed("the node agent is not started"))
            reader, writer = self.stream
            try:
                writer.write(struct.pack("!i", len(request)) + request)
                await writer.drain()
                (n,) = struct.unpack("!i", await reader.readexactly(4))
                reply = await reader.readexactly(n)
            except (OSError, asyncio.IncompleteReadError) as e:
                await asyncio.to_thread(self._stop)
                return encode(Failed(f"the node agent died: {e!r}"))
            if kind == "Close":
                self._end_run()
                await asyncio.to_thread(self._stop)
                await self._ready_next()
            return reply

    async def _refusal(self, kind: str, request: bytes, tag: bytes) -> bytes | None:
        """The reply to a request this node must not act on, or None to serve it; a Start
        takes the node here (its keys)."""
        if kind == "Info":
            return None
        signed = auth.valid(self.call_key, tag, kind.encode(), request)
        if self.run and signed:
            return None
        if kind == "Start":
            if self.run and not await self._free_within(self.lease.length + 1.0):
                return encode(Failed(f"busy: it is running another coordinator's run "
                                     f"({self.run}); try again once that ends"))
            return self._take(request, tag)
        if self.run:
            return encode(Failed(f"refused {kind}: this node serves run {self.run}, and the "
                                 "request does not carry its secret"))
        if kind in ENDS:
            return encode(None)
        if kind in FREE:
            return None
        return encode(Failed(f"refused {kind}: no run holds this node (a run begins with "
                             "Start)"))

    def _take(self, request: bytes, tag: bytes) -> bytes | None:
        """A Start on a free node: the run's keys, from its secret (the Start must carry its
        own HMAC under it: a Start altered on the way is refused)."""
        try:
            start = decode(request, "the coordinator")
        except (ProtocolMismatch, ValueError) as e:
            return encode(Failed(str(e)))
        if not isinstance(start, Start) or not isinstance(start.secret, str) or not start.secret:
            return encode(Failed("a run's Start must carry its secret"))
        key = auth.derive(start.secret, "call")
        if not auth.valid(key, tag, b"Start", request):
            return encode(Failed("refused Start: its HMAC is not its own secret's"))
        self.run, self.call_key = start.run, key
        if start.lease_s > 0:     # the coordinator's length from the start, not this node's
            self.lease.length = start.lease_s
        self.echo_key = auth.derive(start.secret, "echo")
        return None

    async def _free_within(self, seconds: float) -> bool:
        """Wait (up to `seconds`) for the run holding this node to end or lose its lease."""
        end = asyncio.get_running_loop().time() + seconds
        while self.run and asyncio.get_running_loop().time() < end:
            await asyncio.sleep(0.1)
        return not self.run

    def _end_run(self) -> None:
        self.lease.release()
        self.run, self.call_key, self.echo_key = "", None, None

    # the requests the plugin answers itself (by kind), never relayed to the agent
    ANSWERED_HERE = {"Info": info, "MeasureNoise": noise, "Renew": renew}

    # -- the agent subprocess --------------------------------------------------------
    async def _spawn(self) -> None:
        spare, self.spare = self.spare, None
        if spare is None or spare[0].poll() is not None:
            if spare is not None:
                spare[1].close()
            spare = _popen_agent(self.direct)
        self.proc, mine, self.heard = spare
        self.stream = await asyncio.open_unix_connection(sock=mine)

    async def _ready_next(self) -> None:
        """After a run: the next run's agent, started while nothing is measured."""
        if self.spare is None:
            self.spare = await asyncio.to_thread(_popen_agent, self.direct)

    def _stop(self, terminate: bool = False) -> None:
        """End our agent subprocess: SIGTERM makes it stop its slots and clean up first;
        closing the pipe makes an idle one do the same."""
        proc, stream = self.proc, self.stream
        if proc is not None and terminate and proc.poll() is None:
            proc.terminate()
        if stream is not None and not terminate:
            stream[1].close()
            self.stream = None
        if proc is not None:
            _end(proc)
            self.proc, self.heard = None, None


def direct_config(worker: Any) -> dict:
    """How this node's agent listens for its run's coordinator (server.AgentServer): {"tls":
    [ca, cert, key] | None} (files: the agent is another process), or {"off": why}. A secured
    worker's agent listens with TLS or not at all: never in the clear."""
    if os.environ.get("MANYBENCH_DIRECT", "1").strip().lower() in ("0", "no", "false", "off"):
        return {"off": "MANYBENCH_DIRECT=0 on the node"}
    sec = getattr(worker, "security", None)
    tls = {}
    if sec is not None:
        tls = sec.get_tls_config_for_role("worker")
    secured = (bool(getattr(sec, "require_encryption", False)) or any(tls.get(k) for k in (
        "ca_file", "cert", "key")) or str(getattr(worker, "address", "")).startswith("tls://"))
    host = getattr(worker, "ip", "") or ""     # where the worker is reached: not 0.0.0.0
    if not secured:
        return {"tls": None, "host": host}
    files = [tls.get("ca_file"), tls.get("cert"), tls.get("key") or tls.get("cert")]
    if not all(files):
        return {"off": "the cluster is secured but this worker has no TLS certificate and key "
                       "of its own for the agent's channel"}
    if any("\n" in f for f in files):
        return {"off": "the cluster is secured and this worker's TLS certificates are held in "
                       "memory, not in files its agent process can read"}
    return {"tls": files, "host": host}


Spare = tuple[subprocess.Popen, socket.socket, Heard]


def _popen_agent(direct: dict | None = None) -> Spare:
    """A fresh agent process (server.py), our end of its pipe and the stamp it writes when
    it hears the coordinator (lease.Heard); direct: direct_config."""
    mine, theirs = socket.socketpair()
    heard = Heard()
    try:
        proc = subprocess.Popen([sys.executable, "-m", "manybench.node.server",
                                 str(theirs.fileno()), json.dumps(direct or {"off": ""}),
                                 str(heard.fd)],
                                pass_fds=[theirs.fileno(), heard.fd], stdin=subprocess.DEVNULL)
    finally:
        theirs.close()
        heard.close()
    return proc, mine, heard


def _end(proc: subprocess.Popen) -> None:
    """Wait for our agent process to end (10 s), then kill it: our own child, by its pid."""
    try:
        if wait_child(proc.pid, 10) is None:
            proc.kill()
            proc.wait()
    except ChildProcessError:
        pass


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return ""


async def dask_setup(worker: Any) -> None:
    """`--preload manybench.node.dask_plugin`: give a plain `dask worker` the agent plugin.

    MANYBENCH_SLOTS and MANYBENCH_NODE in the worker's environment set its slots and name.
    """
    slots = os.environ.get("MANYBENCH_SLOTS")
    node = os.environ.get("MANYBENCH_NODE") or socket.gethostname().split(".")[0]
    await worker.plugin_add(AgentPlugin(int(slots) if slots else None, node), name=PLUGIN_NAME)
