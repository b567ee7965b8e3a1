"""Every message that crosses to a node, typed. Nothing else travels between the processes.

Two hops, one vocabulary:

  engine -> node agent   requests below, answered by the reply named beside each. The local
                         engine calls its in-process Agent with them; the Dask engine pickles
                         them through the worker's `mb_call` handler to the agent server.
  agent  -> slot         Slot* messages over each slot's pipe, answered by Slot* replies.

  NodeInfo                       the worker's answer to `mb_info` (before any request)
  Start(run, node, slots, ...)   -> Started(dispatch_ns)
  Prepare(phase, work)           -> Prepared(failed, published)
  Connect(peers)                 -> Connected(failed)
  Run(t0_ns, work, phase|None)   -> Finished(results, telemetry)   phase given: prepare
                                                         first (one message per node per
                                                         phase); telemetry: the node's rows
                                                         since the last Finished
  RunCommands(commands, env, timeout, dirs, programs)
                                 -> CommandsDone(outputs, before, after)   a variant's setup
                                                         or teardown (node/commands.py)
  TakeSnapshot(dirs, programs)   -> SnapshotTaken(data)  provenance (inventory/provenance.py)
  Ping()                         -> None
  Close() / Abort()              -> None, then the agent ends (scratch kept if Start said so)
  any request that fails         -> Failed(error)

  SlotPrepare(phase, ctx, place) -> SlotReady(info) | SlotDone(result)    (prepare failed)
  SlotConnect(peers)             -> SlotConnected() | SlotDone(result)    (connect failed)
  SlotGo(t0_ns)                  -> SlotDone(result)
  SlotGo(t0_ns, SlotPrepare(...)) -> SlotDone(result)   a light phase: prepare, then go
  SlotPing()                     -> SlotPong(pid)
  SlotExit()                     the slot ends

Times: every t0_ns sent to a node and every stamp in a Result, a CommandOutput or a
snapshot's taken_ns coming back is in that NODE's clock (CLOCK_REALTIME there). engines/base.py converts both ways, and nothing else does.
Published info and peers are what net kernels exchange before T0: each slot publishes (a
port, say); every slot then gets {rank: published info + "host" of its node}.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from ..inventory.topology import Cpu
from ..kernels.base import Result, SlotContext
from ..model import Phase


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
class NodeInfo:
    node: str                   # the node's name in records
    slots: int                  # slots it offers by default
    cpus: tuple[Cpu, ...]
    echo_port: int              # its clock echo (Cristian)
    host: str                   # where other nodes' slots reach it
    pid: int
    machine: str                # boot id: nodes on one machine share its cpus
    inventory: dict = field(default_factory=dict)   # inventory.environment.collect() there


@dataclass(frozen=True)
class Start:
    run: str
    node: str
    slots: int
    default_dir: str            # scratch base for tasks that give no `dir`
    keep: bool = False          # leave scratch files at the end
    telemetry_s: float = 0.0    # interval of the node's telemetry (node/telemetry.py); 0: none


@dataclass(frozen=True)
class Started:
    dispatch_ns: int            # one round trip to all of the node's slots


@dataclass(frozen=True)
class Prepare:
    phase: Phase
    work: list[Assignment]


@dataclass(frozen=True)
class Prepared:
    failed: dict[int, Result]   # slot -> why its prepare failed
    published: dict[int, dict]  # slot -> what its kernel published for peers
    notices: list[str] = field(default_factory=list)   # slots replaced since: for warnings


@dataclass(frozen=True)
class Connect:
    peers: dict[int, dict]      # rank -> published info + "host"


@dataclass(frozen=True)
class Connected:
    failed: dict[int, Result]


@dataclass(frozen=True)
class Run:
    t0_ns: int                  # the node's clock
    work: list[Assignment]
    phase: Phase | None = None  # given: prepare first; None: already prepared


@dataclass(frozen=True)
class Finished:
    results: dict[int, Result]  # slot -> result, stamps in the node's clock
    notices: list[str] = field(default_factory=list)   # slots replaced since: for warnings
    telemetry: list = field(default_factory=list)   # TelemetryRows taken since the last


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
    before: dict                   # snapshots (provenance.snapshot) around them
    after: dict


@dataclass(frozen=True)
class TakeSnapshot:
    dirs: list[str] | dict[str, str]     # as provenance.snapshot takes them
    programs: list[str]


@dataclass(frozen=True)
class SnapshotTaken:
    data: dict                     # provenance.snapshot(dirs, programs) on the node


@dataclass(frozen=True)
class Ping:
    pass


@dataclass(frozen=True)
class Close:
    """End the run: stop slots, remove scratch unless Start kept it."""


@dataclass(frozen=True)
class Abort:
    """Stop everything now (Ctrl-C, a fatal error)."""


@dataclass(frozen=True)
class Failed:
    error: str


Request = Start | Prepare | Connect | Run | RunCommands | TakeSnapshot | Ping | Close | Abort


# -- agent -> slot -----------------------------------------------------------------------------
@dataclass(frozen=True)
class SlotPrepare:
    phase: Phase
    ctx: SlotContext
    place: SlotPlace


@dataclass(frozen=True)
class SlotConnect:
    peers: dict[int, dict]


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
    info: dict | None
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

