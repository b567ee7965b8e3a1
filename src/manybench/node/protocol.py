"""Every message that crosses to a node, typed, and the one envelope they travel in. Nothing
else travels between the processes.

Two hops, one vocabulary:

  engine -> node agent   requests below, answered by the reply named beside each. The local
                         engine calls its in-process Agent with them. On Dask, the run's Start
                         (and Close, Abort, and the worker's own Info, Renew, MeasureNoise)
                         go through the worker's one handler, `mb_call`; every other request
                         goes straight to the agent over its direct channel (node/direct.py,
                         engines/direct.py), opened with the run's secret, or through the
                         worker's relay when a node cannot be reached directly.
  agent  -> slot         Slot* messages over each slot's pipe (the same encoding, no envelope:
                         both ends are one installation), answered by Slot* replies.

  Info()                         -> NodeInfo          the first request (Dask): who the node is,
                                                         and whether its cpu runs the build
  Renew(seconds)                 -> None              the coordinator is alive (engines/lease.py);
                                                         not sent to a node that heard it on
                                                         its direct channel meanwhile
  MeasureNoise(seconds)          -> NoiseFloor(floor) inventory/noise.py, before Start
  Start(run, node, slots, ..., protocol, secret, host, lease_s, kill_grace_s)
                                 -> Started(dispatch_ns, direct, why)   refused unless protocol
                                                         matches; direct: where the agent
                                                         listens for the run's coordinator
  Challenge(nonce, use)          <- the node's first frame on a channel it serves (direct,
                                    echo): answer with proof of the run's secret
  Hello(nonce, proof, protocol)  -> Welcome(proof) | Failed   the proof: an HMAC of both
                                    nonces with the run's secret (security/auth.py); the
                                    Welcome proves the node holds it too
  Prepare(phase, work)           -> Prepared(failed, published, notices)
  Connect(peers)                 -> Connected(failed)
  Run(t0_ns, work, phase|None)   -> Finished(results, notices, telemetry)   phase given:
                                                         prepare first (one message per node
                                                         per phase each way); results: the
                                                         node's slots as arrays (arrays.py);
                                                         telemetry: rows since the last
  RunCommands(commands, env, timeout, dirs, programs)
                                 -> CommandsDone(outputs, before, after)   a variant's setup
                                                         or teardown (node/commands.py)
  TakeSnapshot(dirs, programs)   -> SnapshotTaken(data)  provenance (inventory/provenance.py)
  Ping()                         -> None
  Group(members)                 -> Grouped(failed)   become a relay (node/relay.py): open a
                                                         direct channel to each member
  Forward(frames)                -> Forwarded(replies, lost)   a relay: each member's request
                                                         (an envelope, unread) sent on, its own
                                                         (under its own name) served, the
                                                         replies gathered (envelopes, unread)
  SyncClocks()                   -> Clocks(offsets, lost)   a relay: each member's clock offset
                                                         against the relay's (Cristian)
  Close() / Abort()              -> None, then the agent ends (scratch kept if Start said so)
  any request that fails         -> Failed(error)

  SlotPrepare(phase, ctx, place) -> SlotReady(info) | SlotDone(result)    (prepare failed)
  SlotConnect(peers)             -> SlotConnected() | SlotDone(result)    (connect failed)
  SlotGo(t0_ns)                  -> SlotDone(result)
  SlotGo(t0_ns, SlotPrepare(...)) -> SlotDone(result)   a light phase: prepare, then go
  SlotPing()                     -> SlotPong(pid)
  SlotExit()                     the slot ends

A phase crosses as a WirePhase: frozen plain data (str, int, float, tuples, dicts), only what
a node reads of it (node/wire_types.py: the fields of the coordinator's Phase it names, made
from them), built from the Phase in one place (engines/base.wire_phase). No model object
crosses: the model may change without a protocol change, except in a field that crosses.

Encoding (codec.py): the envelope, MAGIC then the version as an unsigned short, then the
message as msgpack: each wire type (WIRE_TYPES, in that fixed order) is an extension whose
code is its place in the table and whose data is the array of its fields. No pickle: a node
or a coordinator that gets something else refuses it and runs nothing. On a direct channel
each envelope is a frame: its length (4 bytes, big-endian) ahead of it.

Versions: PROTOCOL_VERSION changes with any message here (node/wire_pins.py holds the
version's fingerprint, node/fingerprint.py: a change without a bump fails the fast pass).
`decode` reads the body only when the version is its own: a node with another manybench is
refused at its first answer (Info), naming both versions, before anything of it is read; a
node refuses a request of another version unread, on the relay and on the direct channel
(whose Hello carries it too). Start carries the version too, which the agent checks on both
engines.

Times: every t0_ns sent to a node and every stamp in its results, a CommandOutput or a
snapshot's taken_ns coming back is in that NODE's clock (CLOCK_REALTIME there).
engines/base.py converts both ways, and nothing else does.
Published info and peers are what net kernels exchange before T0: each slot publishes (a
port, say); every slot then gets {rank: published info + "host" of its node}.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

from .arrays import SlotResults
from .codec import Codec
from .wire_types import (Cpu, Inventory, NoiseReading, Published, Result, SlotContext, Snapshot,
                         TelemetryRow, WirePhase, WireTask)

# The version of everything in this module: bump it with any change to a message's fields or
# meaning. The envelope (MAGIC, then the version as an unsigned short) never changes.
# 4: a request on the direct channel counts as a renewal; 5: channels open on a challenge
# answered with the run's secret (Challenge, Hello, Welcome), never the secret itself, every
# mb_call is signed; Start.host, SlotContext.job_key and .host (a parallel task's rank links);
# 6: no message changed (bumped for TaskSpec.order, which stays on the coordinator: a
# version once used is kept); 7: WireTask.startup_timeout; 8: WirePhase and WireTask made
# from model.Phase and TaskSpec (WirePhase's fields in Phase's order), every field typed (the
# maps as TypedDicts, node/wire_types.py), the wire pinned to its fingerprint (wire_pins.py);
# Start.lease_s and .kill_grace_s (the coordinator's timings, config/); SlotResults' and
# Result's fields in the record table's order (record_table.py: elapsed_ns before armed_ns,
# hist before extra); 9: NodeInfo.refused (a cpu that cannot run the build, said at Info)
PROTOCOL_VERSION = 9
MAGIC = b"MBP"
_HEAD = struct.Struct("!3sH")
HEADER_SIZE = _HEAD.size


class ProtocolMismatch(Exception):
    """The other side speaks another protocol version: nothing it sent was read."""

    def __init__(self, theirs: int | None, who: str) -> None:
        self.theirs, self.ours = theirs, PROTOCOL_VERSION
        said = ("no manybench protocol version (not manybench, or one older than the check)"
                if theirs is None else f"manybench protocol version {theirs}")
        super().__init__(f"{who} speaks {said}; this side speaks version {self.ours}: install "
                         "the same manybench on the coordinator and every node")


def encode(msg: object) -> bytes:
    """One message as it crosses to or from a node: the envelope, then its body (msgpack).
    TypeError when it holds anything but wire values."""
    return _HEAD.pack(MAGIC, PROTOCOL_VERSION) + CODEC.pack(msg)


def encode_with(msg: object, packed: dict[str, bytes]) -> bytes:
    """encode(msg), byte for byte, with some of its fields already packed (codec.pack_with:
    a node's assignments packed once, sent phase after phase)."""
    return _HEAD.pack(MAGIC, PROTOCOL_VERSION) + CODEC.pack_with(msg, packed)


def pack_value(value: object) -> bytes:
    """One field's value packed as encode packs it inside a message (for encode_with)."""
    return CODEC.pack(value)


def version_of(data: bytes) -> int | None:
    """The protocol version a message was encoded with; None: no envelope of ours."""
    if len(data) < _HEAD.size or data[:len(MAGIC)] != MAGIC:
        return None
    return _HEAD.unpack_from(data)[1]


def check_envelope(data: bytes, who: str) -> None:
    """ProtocolMismatch unless `who` encoded the message with our version (body unread)."""
    theirs = version_of(data)
    if theirs != PROTOCOL_VERSION:
        raise ProtocolMismatch(theirs, who)


def decode(data: bytes, who: str) -> Any:
    """A message `who` sent; ProtocolMismatch, its body unread, when its version is not ours;
    ValueError when the body is not a message of ours."""
    # the usual case in one comparison (every frame); the version read where it is set
    if data[:HEADER_SIZE] != _HEAD.pack(MAGIC, PROTOCOL_VERSION):
        check_envelope(data, who)
    return CODEC.unpack(memoryview(data)[HEADER_SIZE:])


def check_version(theirs: int, who: str) -> None:
    """A message's own version field (Start): ProtocolMismatch unless it is ours."""
    if theirs != PROTOCOL_VERSION:
        raise ProtocolMismatch(theirs, who)


# -- where a slot runs in one phase ------------------------------------------------------------
@dataclass(frozen=True)
class SlotPlace:
    slot: int
    cpu: int                    # the cpu the slot is pinned to; -1 when not pinned to one cpu
    affinity: tuple[int, ...]   # cpus the slot may run on in this phase
    spin: bool                  # it has a core to itself, so it may spin the last stretch
    settle_ns: int = 0          # sharing a core: rest this long after the end stamp, so
                                # reporting does not delay slots not yet woken on that core
    mems: tuple[int, ...] | None = None   # memory nodes to bind to; None: default policy


@dataclass(frozen=True)
class Assignment:
    """One slot's part in a phase: where it runs and its rank among the phase's workers."""
    place: SlotPlace
    rank: int


# -- engine -> agent ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Info:
    """Who are you (the first request to a Dask node; its envelope carries the version)."""


@dataclass(frozen=True)
class NodeInfo:
    node: str                   # the node's name in records
    slots: int                  # slots it offers by default
    cpus: tuple[Cpu, ...]
    echo_port: int              # its clock echo (Cristian)
    host: str                   # where other nodes' slots reach it
    pid: int
    machine: str                # boot id: nodes on one machine share its cpus
    inventory: Inventory = field(default_factory=dict)   # environment.collect() there
    refused: str = ""           # why its cpu cannot run the build (build_isa.refusal); "": it can


@dataclass(frozen=True)
class Renew:
    """The coordinator is alive: hold the run's lease this much longer (node/lease.py)."""
    seconds: float


@dataclass(frozen=True)
class MeasureNoise:
    """Measure the node's noise floor now, for this long (inventory/noise.py)."""
    seconds: float


@dataclass(frozen=True)
class NoiseFloor:
    floor: NoiseReading | None  # inventory/noise.measure(); None: not measured there


@dataclass(frozen=True)
class Start:
    run: str
    node: str
    slots: int
    default_dir: str            # scratch base for tasks that give no `dir`
    keep: bool = False          # leave scratch files at the end
    telemetry_s: float = 0.0    # interval of the node's telemetry (node/telemetry.py); 0: none
    protocol: int = PROTOCOL_VERSION   # the coordinator's: the agent refuses another
    secret: str = ""            # the run's: a direct channel must present it (Hello)
    host: str = ""              # where other nodes' slots reach this node's (Node.host): a
                                # parallel task's abort port listens there only
    # the coordinator's timings (config/), never a node's own: a Dask node's lease length
    # (lease.length; 0: no lease holds the node) and how long past a task's timeout the agent
    # kills its slots itself (node.kill_grace; under the coordinator's engines.lost_grace)
    lease_s: float = 0.0
    kill_grace_s: float = 0.0


@dataclass(frozen=True)
class DirectOffer:
    """Where the agent listens for the run's coordinator (node/direct.py)."""
    port: int
    tls: bool                   # TLS with the cluster's own certificates (a secured cluster)


@dataclass(frozen=True)
class Started:
    dispatch_ns: int            # one round trip to all of the node's slots
    direct: DirectOffer | None = None   # None: only the worker's relay reaches the agent
    why: str = ""               # why there is no direct channel


@dataclass(frozen=True)
class Challenge:
    """A node's first frame on a channel it serves for the run (node/gate.py)."""
    nonce: bytes
    use: str                    # "direct" or "echo": a proof for one opens no other


@dataclass(frozen=True)
class Hello:
    """The answer to a Challenge: our nonce and the proof that we hold the run's secret."""
    nonce: bytes
    proof: bytes
    protocol: int = PROTOCOL_VERSION


@dataclass(frozen=True)
class Welcome:
    """The node's proof that it holds the run's secret too: the channel is open."""
    proof: bytes


@dataclass(frozen=True)
class Prepare:
    phase: WirePhase
    work: list[Assignment]


@dataclass(frozen=True)
class Prepared:
    failed: SlotResults         # slots whose prepare failed, and why
    published: dict[int, Published]   # slot -> what its kernel published for peers
    notices: list[str] = field(default_factory=list)   # slots replaced since: for warnings


@dataclass(frozen=True)
class Connect:
    peers: dict[int, Published]   # rank -> published info + "host"


@dataclass(frozen=True)
class Connected:
    failed: SlotResults


@dataclass(frozen=True)
class Run:
    t0_ns: int                  # the node's clock
    work: list[Assignment]
    phase: WirePhase | None = None   # given: prepare first; None: already prepared


@dataclass(frozen=True)
class Finished:
    results: SlotResults        # every slot of the phase, stamps in the node's clock
    notices: list[str] = field(default_factory=list)   # slots replaced since: for warnings
    telemetry: list[TelemetryRow] = field(default_factory=list)   # taken since the last


@dataclass(frozen=True)
class RunCommands:
    """Run these commands on the node, one after the other, stopping at the first that fails
    (non-zero exit, timeout, not found); snapshot the node before and after. Argument lists,
    never a shell unless a command is ["sh", "-c", ...]. Every argument's "{node}" becomes the
    node's name there."""
    commands: list[list[str]]
    env: dict[str, str] = field(default_factory=dict)   # over the agent's own environment
    timeout: float | None = None                        # seconds, per command
    # for the snapshots (provenance.snapshot): paths, or {name: path}; commands' argv[0]s
    dirs: list[str] | dict[str, str] = field(default_factory=list)
    programs: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class CommandOutput:
    argv: list[str]
    exit_status: int        # 0 ok; > 0 its own (127 not found, 126 not executable);
                            # < 0 killed by that signal (-9: killed at its timeout)
    stdout: str             # the last OUTPUT_TAIL bytes (node/commands.py), decoded
    stderr: str
    started_ns: int         # the node's clock
    ended_ns: int
    timed_out: bool = False


@dataclass(frozen=True)
class CommandsDone:
    outputs: list[CommandOutput]   # the commands run, in order; the last failed if any did
    before: Snapshot               # snapshots (provenance.snapshot) around them
    after: Snapshot


@dataclass(frozen=True)
class TakeSnapshot:
    dirs: list[str] | dict[str, str]     # as provenance.snapshot takes them
    programs: list[str]


@dataclass(frozen=True)
class SnapshotTaken:
    data: Snapshot                 # provenance.snapshot(dirs, programs) on the node


@dataclass(frozen=True)
class Ping:
    pass


@dataclass(frozen=True)
class Member:
    """A node a relay reaches: its direct channel and its clock echo."""
    host: str
    port: int
    tls: bool
    echo_port: int


@dataclass(frozen=True)
class Group:
    """Become the relay of these nodes (node/relay.py): open their direct channels with the
    run's secret (Start.secret), over TLS with this node's certificates where they want it."""
    members: dict[str, Member]


@dataclass(frozen=True)
class Grouped:
    failed: dict[str, str]      # member -> why it could not be reached: not grouped


@dataclass(frozen=True)
class Forward:
    """One round for the relay's group: node -> its request's envelope, unread here. The
    relay's own name: its own request, served while the members work."""
    frames: dict[str, bytes]


@dataclass(frozen=True)
class Forwarded:
    replies: dict[str, bytes]   # node -> its reply's envelope (its stamps in its own clock)
    lost: dict[str, str]        # member -> why it gave no reply (it is lost)


@dataclass(frozen=True)
class SyncClocks:
    """A relay: measure each member's clock offset against this node's (Cristian)."""


@dataclass(frozen=True)
class Clocks:
    offsets: dict[str, tuple[int, int]]   # member -> (its clock minus the relay's, bound) ns
    lost: dict[str, str]                  # member -> why its echo failed


@dataclass(frozen=True)
class Close:
    """End the run: stop slots, remove scratch unless Start kept it."""


@dataclass(frozen=True)
class Abort:
    """Stop everything now (Ctrl-C, a fatal error)."""


@dataclass(frozen=True)
class Failed:
    error: str


Request = (Info | Renew | MeasureNoise | Start | Hello | Prepare | Connect | Run | RunCommands
           | TakeSnapshot | Ping | Group | Forward | SyncClocks | Close | Abort)


# -- agent -> slot -----------------------------------------------------------------------------
@dataclass(frozen=True)
class SlotPrepare:
    phase: WirePhase
    ctx: SlotContext
    place: SlotPlace


@dataclass(frozen=True)
class SlotConnect:
    peers: dict[int, Published]


@dataclass(frozen=True)
class SlotGo:
    t0_ns: int
    # a light phase's prepare travels with its go (one message, one reply: SlotDone)
    prepare: SlotPrepare | None = None


@dataclass(frozen=True)
class SlotPing:
    pass


@dataclass(frozen=True)
class SlotExit:
    pass


@dataclass(frozen=True)
class SlotReady:
    info: Published | None
    child: int = 0      # the process group of the child it forked (a command), 0: none


@dataclass(frozen=True)
class SlotConnected:
    pass


@dataclass(frozen=True)
class SlotDone:
    result: Result


@dataclass(frozen=True)
class SlotPong:
    pid: int



# -- the wire types, in their fixed order: a type's code is its place (codec.py) ---------------
# Append only; any change here or to a field of a type reached from here is a protocol change
# (PROTOCOL_VERSION): node/wire_pins.py pins its fingerprint (node/fingerprint.py).
WIRE_TYPES = (Info, NodeInfo, Cpu, Renew, MeasureNoise, NoiseFloor, Start, DirectOffer, Started,
              Hello, SlotPlace, Assignment, WireTask, WirePhase, Prepare, Prepared, SlotResults,
              Connect, Connected, Run, Finished, TelemetryRow, RunCommands, CommandOutput,
              CommandsDone, TakeSnapshot, SnapshotTaken, Ping, Close, Abort, Failed,
              # agent -> slot, over a local pipe (the same encoding; no envelope there)
              Result, SlotContext, SlotPrepare, SlotConnect, SlotGo, SlotPing, SlotExit,
              SlotReady, SlotConnected, SlotDone, SlotPong,
              # relays (issue 21)
              Member, Group, Grouped, Forward, Forwarded, SyncClocks, Clocks,
              # channels opened on a challenge (protocol 5)
              Challenge, Welcome)
# sent to every node and slot, or (a placement's assignments) phase after phase
# how many of each kept: a phase and its task are new at every phase (a few kept, not
# thousands: memory stays flat), a placement's assignments come back phase after phase (a
# run of 1,000 nodes x 64 slots has 64,000)
CODEC = Codec(WIRE_TYPES, shared={WirePhase: 16, WireTask: 16, Assignment: 1 << 17})
