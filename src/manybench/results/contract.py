"""What results.db holds, typed: one dataclass per table, beside record.Record.

  RunInfo      runs      one execution of a plan: plan text, argv, status, environment, notes
  StoredPhase  phases    one synchronized execution of a point: its key, params, T0, status
  StoredNode   nodes     a node of the run: slots, cpus, clock offset, inventory (collected there)
  Warning      warnings  something the reader of the results must know, stored as it happened
  Snapshot     snapshots a node's provenance at a moment: at the start, around setup/teardown
  NodeCommand  node_commands  one setup or teardown command run on a node, with its output
  Sample       samples   a slot's progress inside a phase, at a fixed interval (issue 10)
  TelemetryRow telemetry a node's CPU, memory, disk and network over an interval (issue 10)
  Record       records   what one slot measured in one phase (record.py: the export contract)

Stored by results/store.py (schema and migrations in results/schema.py); read back as these
same classes, so analysis and reports see one shape whatever wrote the file.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from ..model import Phase
from ..status import TextEnum
from ..node.wire_types import TelemetryRow  # noqa: F401  (results' own row, declared with the wire)


class RunStatus(TextEnum):
    """A run's (the runs table's `status`)."""
    RUNNING = "running"          # its coordinator is at work (or was killed: see KILLED)
    FINISHED = "finished"        # every phase ran, every record ok
    FAILED = "failed"            # every phase ran, some records not ok
    INTERRUPTED = "interrupted"  # stopped by Ctrl-C or SIGTERM: `run --resume` goes on
    ABORTED = "aborted"          # stopped by a lost node (on_node_loss = "abort")
    # never stored: what a reader says of a `running` row whose coordinator is gone
    # (results/liveness.py)
    KILLED = "killed"


class PhaseStatus(TextEnum):
    """A stored phase's (the phases table's `status`)."""
    OK = "ok"                    # it ran to its end: its records are all it measured
    INTERRUPTED = "interrupted"  # the run was interrupted during it: its records are cut short


RUN_STATUSES = tuple(RunStatus)
PHASE_STATUSES = tuple(PhaseStatus)

# Kinds once stored under another name, read as their new one (stored runs stay readable):
# "stall" and "stalls" were a slot's and a node's, too alike to tell apart
RENAMED_KINDS = {"stall": "straggler", "stalls": "noise-floor"}


class WarningKind(TextEnum):
    """What a warning is about: each a thing the figures alone would hide. A member is its
    stored text; `meaning` says what it warns of, `label` how stderr and reports head it
    (loudest where figures are wrong or missing, not merely less precise)."""
    meaning: str
    label: str

    def __new__(cls, text: str, meaning: str, label: str = "warning") -> WarningKind:
        member = str.__new__(cls, text)
        member._value_ = text
        member.meaning, member.label = meaning, label
        return member

    @classmethod
    def read(cls, text: str) -> WarningKind | str:
        """A stored kind: its member (under its new name if renamed since), or the text as it
        is when this version does not know it (a newer manybench's)."""
        try:
            return cls(RENAMED_KINDS.get(text, text))
        except ValueError:
            return text

    OVERSUBSCRIBED = ("oversubscribed", "more slots than cpus on a node: slots sleep until T0 "
                      "without spinning")
    PIN = ("pin", "slots could not each have a cpu of their own as the plan's pin asked, or "
           "cpus are withheld from manybench by a cpuset or taskset")
    CLOCK = ("clock", "a node's clock offset bound exceeds the plan's clock_tolerance",
             "CLOCK WARNING")
    MISSING_METRIC = "missing-metric", "a command's metric regex matched nothing in its output"
    NODE_LOST = ("node-lost", "a node stopped answering during the run (its records are "
                 "lost), or a phase needed more slots than the nodes left have", "NODE LOST")
    SETUP = "setup", "a variant's setup failed: its phases did not run", "SETUP FAILED"
    SLOT_REPLACED = ("slot-replaced", "a slot process died while idle between phases: a "
                     "fresh one was forked in its place and ran the next phase in full, so "
                     "nothing measured was lost and the phase keeps its planned workers")
    # run/stalls.py (stored as "stall" before)
    STRAGGLER = ("straggler", "a slot ended far later than its peers in a phase (stopped, "
                 "swapped, starved): its record has metrics.stall_s", "STRAGGLER")
    # issue 10: pyperf-style checks of the figures (run/quality.py)
    UNSTABLE = ("unstable", "a point's repetitions vary by more than 10% (coefficient of "
                "variation)")
    SHORT = "short", "a phase was too short against the clock's resolution or the start skew"
    NOT_QUIET = "not-quiet", "the machine was not quiet: cpufreq governor, turbo, or other load"
    # issue 20: the node's noise floor (inventory/noise.py), measured at the start of the run
    # (stored as "stalls" before)
    NOISE_FLOOR = ("noise-floor", "a node's noise floor: its cpus were taken away for 1 ms or "
                   "more while measured")
    SHARED_MACHINE = ("shared-machine", "several nodes run on one machine (namespaces, "
                      "containers): they share its cpus")
    JOB_ONE_MACHINE = ("job-one-machine", "a parallel job's ranks on different nodes of one "
                       "machine: its MPI may carry their messages through shared memory, not "
                       "the network")
    JOB_SHARED_MEMORY = ("job-shared-memory", "a parallel job's ranks on different nodes "
                         "talked through shared memory, as their MPI library chose (its "
                         "figures are not the network's)")
    UNITS = "units", "a command's metric in different units in different records (or none)"
    LIBRARY = ("library", "a kernel's library does not fit the processor (a BLAS running "
               "older kernels)")
    # issue 16: a failure that used to vanish
    CLEANUP = ("cleanup", "a kernel's cleanup after a phase failed, named with the error (the "
               "phase's figures stand, but files, a child or a connection it held may "
               "remain), or a node did not confirm the run's end")
    # issue 21: how the coordinator reaches a node's agent
    RELAY = ("relay", "a node's agent could not be reached directly: its requests went "
             "through its Dask worker (each phase costs more there; the figures are the same)")
    SIMULATED = ("simulated", "the nodes were simulated (--simulate): nothing ran on them, the "
                 "records are synthetic and measure the coordinator's side only", "SIMULATED")
    FANOUT = ("fanout", "a node could not be reached through the relay chosen for it: the "
              "coordinator reaches it on its own channel (the figures are the same)")
    # issue 28: secure by default
    INSECURE = ("insecure", "the cluster was reached without TLS or authentication "
                "(--insecure): anyone who could reach it could drive its nodes", "INSECURE")
    # issue 28: time the figures do not show
    GAP = ("gap", "a node kept the coordinator waiting between phases far longer than usual "
           "(a stopped or stalled agent, a slow connection): the run took that much longer",
           "GAP")
    CLOCK_STEP = ("clock-step", "the coordinator's wall clock stepped during the run: times "
                  "are kept on the run's clock (monotonic from its start), stored times differ "
                  "from the wall clock by the step", "CLOCK STEP")
    # issue 30: where the run chose not to pay for a precise start
    LATE_GO = ("late-go", "phases whose slots armed late because their go stalled within the "
               "nodes' noise floor: the lead did not grow for every phase to cover them "
               "(run/schedule.py)")
    BUSY_CPU = ("busy-cpu", "a slot with a cpu of its own slept until T0 instead of spinning: "
                "other work kept that cpu busy (node/spin_choice.py), or another slot's of the "
                "phase on its node (node/spin_hold.py)")
    SHARED_PIN = ("shared-pin", "a slot's work found its cpus about all busy while it used "
                  "well less of them: other load took the rest (named as it ran there when "
                  "the window ended), so its figures measured a share of its cpus")
    # issue 31: a parallel job's end is its ranks'
    LEFTOVER = ("leftover", "a process a parallel job's rank left (a daemon it forked) held "
                "the launcher's output after the ranks had ended: it was killed, and named")


# kind -> what it warns of (the docs' list)
WARNING_KINDS = {k.value: k.meaning for k in WarningKind}


def warning_text(kind: str, message: str) -> str:
    """A warning as told on stderr and in reports: headed by its kind's label."""
    k = WarningKind.read(kind)
    return f"{k.label if isinstance(k, WarningKind) else 'warning'}: {message}"


@dataclass
class RunNotes:
    """Facts of the run's set-up the coordinator knows before the first phase."""
    slots: int = 0              # slots in all, over every node
    phases: int = 0             # phases planned
    cpus: int = 0               # cpus in all, over every node
    oversubscribed: bool = False
    # the coordinator, so a reader can tell it was killed (results/liveness.py)
    pid: int = 0
    host: str = ""
    pid_started: float = 0.0    # its process start time, epoch s (a reused pid differs)
    heartbeat_ns: int = 0       # renewed every few seconds while it runs (run/heartbeat.py)
    heartbeat_stale_s: float = 0.0   # older than this: gone (its heartbeat.stale; 0: the reader's)
    # where time went that no phase holds (report: "time outside the windows")
    start_s: float | None = None   # starting the nodes, before the run's row (started_ns)
    end_s: float | None = None     # ending them (slots stopped, scratch removed), in ended_ns
    resumed_ns: int = 0         # when `run --resume` continued the run (0: it never did)

    @classmethod
    def from_json(cls, d: Any) -> RunNotes:
        """Notes as stored; keys this version does not know are ignored."""
        d = d if isinstance(d, dict) else {}
        return cls(**{f.name: d[f.name] for f in fields(cls) if f.name in d})

    def to_json(self) -> dict:
        return asdict(self)


@dataclass
class RunInfo:
    run_id: str
    name: str
    plan_source: str            # the plan's TOML text as given
    plan_raw: dict              # the validated plan, overrides applied
    argv: list[str]
    started_ns: int
    ended_ns: int | None        # None while running (or when the process was killed)
    status: str                 # a RunStatus
    environment: dict           # the coordinator's inventory (inventory/environment.py)
    notes: RunNotes
    phases: int = 0             # phases stored
    options: dict | None = None  # the run command's options as parsed (schema 10); None:
                                 # stored before, or started otherwise than by the command


@dataclass(frozen=True)
class PhaseTimes:
    """Where a phase's time went, in seconds of the coordinator's clock (docs/definitions.md,
    "time outside the windows"); a phase not run, or stored before results schema 8, has
    none."""
    prepare_s: float | None = None   # its slowest node's prepare and connect rounds
    prepare_node: str | None = None  # that node (None: the prepare travelled with the go)
    window_s: float | None = None    # its timed window: last end - first start (ok records)
    cleanup_s: float | None = None   # from the window's end until the last results were in


@dataclass
class StoredPhase:
    run: str
    index: int
    task: str
    kernel: str
    variant: str
    rep: int
    workers: int
    point: str                  # stable key of the point (plan/expand.point_key)
    params: dict[str, Any]
    t0_ns: int | None           # None: not run (a phase that was only planned)
    status: str = PhaseStatus.OK
    label: str = ""
    warmup: bool = False        # a warm-up repetition (plan `warmup`): stored, not analysed
    go_ns: int | None = None    # when the coordinator sent the go (None: stored before v6)
    times: PhaseTimes = PhaseTimes()   # where its time went (all None: stored before v8)

    @classmethod
    def of(cls, run: str, phase: Phase, t0_ns: int | None = None, status: str = PhaseStatus.OK,
           go_ns: int | None = None) -> StoredPhase:
        return cls(run=run, index=phase.index, task=phase.task.name, kernel=phase.kernel,
                   variant=phase.variant, rep=phase.rep, workers=phase.workers,
                   point=phase.point, params=phase.record_params(), t0_ns=t0_ns, status=status,
                   label=phase.label, warmup=phase.warmup, go_ns=go_ns)


@dataclass
class StoredNode:
    run: str
    name: str
    host: str
    slots: int
    cpus: int
    machine: str = ""           # boot id: nodes on one machine share its cpus
    offset_ns: int = 0          # clock minus the coordinator's, latest estimate
    error_ns: int = 0           # bound on that estimate (the largest seen in the run)
    inventory: dict = field(default_factory=dict)   # environment.collect() on the node


@dataclass
class Warning:
    kind: str                   # a WarningKind (stored as its text)
    message: str                # one line a person can act on
    node: str = ""
    task: str = ""
    phase: int | None = None
    time_ns: int = 0
    run: str = ""

    def key(self) -> tuple:
        """Warnings with the same key say the same thing; a run stores each once."""
        return (self.kind, self.node, self.task, self.message)


STEPS = ("setup", "teardown")
START = "start"     # the label of the snapshot every node takes at the start of a run


def step_label(when: str, step: str, variant: str) -> str:
    """A snapshot's label around a variant's step: "before setup numa", "after teardown numa"."""
    return f"{when} {step} {variant}"


@dataclass
class Snapshot:
    run: str
    node: str
    label: str                  # START or step_label(...)
    taken_ns: int               # the coordinator's clock
    data: dict                  # inventory/provenance.snapshot() on the node
    seq: int = 0                # order stored in the run (given by the store)


@dataclass
class NodeCommand:
    run: str
    node: str
    variant: str
    step: str                   # one of STEPS
    argv: list[str]
    exit_status: int            # 0 ok; > 0 its own (127 not found); < 0 killed by a signal
    timed_out: bool
    stdout: str                 # tails (node/commands.OUTPUT_TAIL)
    stderr: str
    started_ns: int             # the coordinator's clock
    ended_ns: int
    seq: int = 0                # order run in the run (given by the store)


@dataclass
class SeriesPoint:
    """One point of a size-indexed table a parser read from a record's output (OSU, IMB):
    y (in `unit`) at message size x (in `x_unit`), of the record (node, slot) with `rank`."""
    run: str
    phase_id: int
    node: str
    slot: int
    rank: int | None
    name: str
    x: float
    y: float
    unit: str
    x_unit: str = "bytes"


@dataclass
class Sample:
    """A slot's cumulative progress at one instant inside a phase (fio's bw log, aligned).

    `t_s` is seconds since the phase's T0 on the coordinator's timebase (so samples of every
    node line up); `done` is the cumulative amount of `unit` ("bytes" or "ops") the slot had
    finished by then. Throughput over an interval is the difference of two samples.
    """
    run: str
    phase_id: int
    rank: int
    node: str
    t_s: float
    done: float
    unit: str
