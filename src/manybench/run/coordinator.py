"""The phase loop: place, prepare, pick T0, release, collect, store — one phase at a time.

Every finished phase is committed in one transaction before the next phase is prepared, or,
when the next lead is long enough to hold it without delaying the slots' arming, as soon as
that phase's go is sent (idle time); always before that phase's results are taken; every other
path (a new point, an interrupt, an error, the end) commits it first. So a crash, kill or
Ctrl-C keeps everything measured so far; the run row says how the run ended. The coordinator
works in its own clock only (timebase.py: the wall clock at the run's start, advanced by the
monotonic clock; a wall clock step is watched for each phase): engines convert T0 and stamps
(engines/base.py). What nodes kept it waiting, beyond the schedule, is judged each phase
(run/gaps.py).

Each phase comes back as one frozen PhaseOutcome (run/outcome.py: records, samples, T0, when
its go was sent, telemetry, warnings), which is what a commit stores; a phase whose go is
sent is held as an InFlight until its results are taken, for an interrupt to keep. Where each
phase's time went (run/times.py: prepare, window, cleanup) is stored with it, the nodes'
start and a resume's instant in the run's notes: the report adds them up.
"""
from __future__ import annotations

import os
import secrets
import signal
import sqlite3
import time
from dataclasses import dataclass, replace
from itertools import compress, repeat
from operator import contains
from typing import Iterable, Iterator

from ..extra_keys import MISSING_METRICS, WARNINGS
from ..status import OK_TEXT
from ..results.contract import PhaseStatus, RunStatus, WarningKind
from .. import timebase
from ..engines.base import Engine, EngineError, Node, Results, Work
from ..gc_pause import PhaseCollector
from ..inventory import noise
from ..inventory.environment import collect as collect_environment
from ..model import Phase, Plan
from ..plan import PlanError
from ..plan.expand import distinct
from ..record_columns import RecordColumns
from ..results.contract import START, RunNotes, StoredNode
from ..results.store import Store
from .placement import assign, oversubscribed, spread_counts
from .progress import RunProgress
from .quality import run_checks
from .outcome import InFlight, PhaseOutcome, PhaseWarning, collect
from .schedule import Scheduler
from . import interrupts
from . import clock_steps
from .gaps import Gaps
from .times import phase_times
from .heartbeat import Heartbeat, stamp
from .jobs import layout_problems
from .resume import Resume
from .stalls import flag_stalls, stall_texts
from .setups import Setups, provenance
from .warnings import Warnings, start_warnings

EXIT_OK, EXIT_FAILED, EXIT_INTERRUPTED = 0, 1, 130
# a lead at least this long (and 4 x the last commit) holds the previous phase's commit: on a
# cluster the lead is tens of ms; a 1 ms local lead is left to the slots
OVERLAP_LEAD_NS = 5_000_000


def new_run_id(name: str) -> str:
    """Sortable and unique: plan name, UTC time, 64 random bits in hex. It names the run's
    scratch root on every node: it must not be guessed (16 bits were: 65,536 directories
    made ahead refused any run's root of that second) nor repeat."""
    return f"{name}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{secrets.token_hex(8)}"


@dataclass(frozen=True)
class Outcome:
    run_id: str
    status: str          # finished | failed | interrupted | aborted
    exit_code: int
    failed: int          # records whose status is not ok
    checks_cut: bool = False   # interrupted after its last phase: every phase is stored,
                               # the end's checks were not made


class Coordinator:
    def __init__(self, plan: Plan, phases: list[Phase], outdir: str, engine: Engine,
                 argv: list[str], slots: int | None = None, progress: bool | None = None,
                 resume: Resume | None = None, options: dict | None = None) -> None:
        self.plan, self.phases, self.outdir, self.engine = plan, phases, outdir, engine
        self.resume = resume   # run --resume: the stored run it continues (run/resume.py)
        self.options = options    # the run command's, as parsed: stored for a resume
        self.argv, self.slots, self.show_progress = argv, slots, progress
        self.scheduler = Scheduler(late_target=plan.late_target)
        self.failed = 0
        self.ran_all = False    # every phase ran: the run's end stores and checks them
        self.lost: set[str] = set()
        self.worst_error: dict[str, int] = {}
        self.in_flight: InFlight | None = None    # the phase whose go is sent, until collected
        self.unsaved: PhaseOutcome | None = None  # the last finished phase, until committed
        self.commit_ns = OVERLAP_LEAD_NS    # how long the last commit took (unknown: long)
        self.placements: dict[tuple, Work] = {}   # _work's: a placement's work, once
        self.collector = PhaseCollector()   # the cyclic collector around each phase
        self.gaps = Gaps()                  # what nodes kept the coordinator waiting

    def run(self) -> Outcome:
        timebase.anchor()     # the coordinator's clock: the wall clock now, then monotonic
        began = timebase.now_ns()
        os.makedirs(self.outdir, exist_ok=True)
        run_id = self.resume.info.run_id if self.resume else new_run_id(self.plan.name)
        default_dir = self.plan.scratch or os.path.join(os.path.abspath(self.outdir), "scratch")
        os.makedirs(default_dir, exist_ok=True)
        largest = max((p.workers for p in distinct(self.phases)), default=1)
        nodes = self.engine.start(run_id, self.slots or self.plan.slots, default_dir,
                                  self.plan.keep, largest)
        # stalls this long are the nodes' noise: the lead does not chase them (run/schedule.py)
        self.scheduler.floor_ns = noise.worst_stall_ns(n.inventory for n in nodes)
        problems = check_nodes(distinct(self.phases), nodes)
        if problems:       # a plan that does not fit the cluster: nothing is run
            self.engine.close()
            raise PlanError(problems)
        store = Store(self.outdir)
        notes = RunNotes(slots=sum(n.slots for n in nodes), phases=len(self.phases),
                         cpus=sum(len(n.cpus) for n in nodes),
                         oversubscribed=any(oversubscribed(n.slots, n.cpus) for n in nodes),
                         start_s=(timebase.now_ns() - began) / 1e9)
        beat = self._begin(store, run_id, nodes, notes, default_dir)
        status, code = RunStatus.ABORTED, EXIT_FAILED
        end_s = None     # how long its nodes took to end (known when they were closed)
        previous = signal.signal(signal.SIGTERM, interrupts.raise_interrupt)
        try:
            status = self._phases(nodes)
            code = {RunStatus.FINISHED: EXIT_OK, RunStatus.FAILED: EXIT_FAILED}.get(status, EXIT_FAILED)
        except KeyboardInterrupt:
            # further Ctrl-C / SIGTERM: they may only cut the teardown short (interrupts.py)
            with interrupts.signals_ignored():
                status, code = RunStatus.INTERRUPTED, EXIT_INTERRUPTED
                previous = signal.SIG_IGN   # until the process exits: the run is ending
                self._flush()
                self._save_interrupted()
                interrupts.interruptible(self._tear_down)
                self.engine.abort()
                self._engine_warnings()
        except BaseException:
            try:
                self._flush()     # what was measured, if the store still takes it
            except (sqlite3.Error, OSError):
                pass    # the store fails too (the full disk that stopped the run, say): the
                        # error being raised tells it; any other error is raised, this one
                        # as its context
            finally:
                self.engine.abort()
                store.end_run(run_id, RunStatus.ABORTED)
                store.close()
            raise
        else:
            # measured, stored and checked: a Ctrl-C now only cuts the nodes' close short
            # (they are aborted), and the run keeps its status
            closing = timebase.now_ns()
            if interrupts.interruptible(self.engine.close, then_ignore=False):
                with interrupts.signals_ignored():
                    self.engine.abort()
                interrupts.take_signals()   # signals_ignored() leaves them so: the report may take a while
            end_s = (timebase.now_ns() - closing) / 1e9    # scratch removed: can be minutes
            self._engine_warnings()
        finally:
            # first: the collector as found and nothing frozen past the run, whatever fails next
            self.collector.release()
            signal.signal(signal.SIGTERM, previous)
            beat.stop()
        store.end_run(run_id, status, end_s)
        store.close()
        return Outcome(run_id, status, code, self.failed,
                       checks_cut=status == RunStatus.INTERRUPTED and self.ran_all)

    def _engine_warnings(self) -> None:
        """What the engine found while ending the run (a node that did not confirm it)."""
        for kind, node, text in self.engine.take_warnings():
            self.warnings.add(kind, text, node=node)

    def _begin(self, store: Store, run_id: str, nodes: list[Node], notes: RunNotes,
               default_dir: str) -> Heartbeat:
        """The run row, its heartbeat, warnings, nodes and snapshots. An interrupt in here
        (the snapshots take a while) leaves the row `interrupted`, never `running`."""
        beat = None
        try:
            if self.resume:   # the same run goes on: its phases so far are kept
                notes.phases = self.resume.info.notes.phases or notes.phases
                notes.resumed_ns = timebase.now_ns()   # the time line starts again here
                store.resume_run(run_id, stamp(notes))
                self.failed = self.resume.failed
            else:
                store.begin_run(run_id, self.plan, self.argv, collect_environment(), stamp(notes),
                                self.options)
            beat = Heartbeat(store, run_id).start()
            self.store, self.run_id, self.nodes = store, run_id, nodes
            self.warnings = Warnings(store, run_id)
            for kind, node, msg in ([] if self.resume else start_warnings(self.phases, nodes)):
                self.warnings.add(kind, msg, node=node)   # a resumed run has them already
            self._engine_warnings()      # what the engine found starting (a node relayed)
            self._store_nodes()
            dirs, programs = provenance(self.plan, self.phases, default_dir)
            store.write_snapshots(run_id, "resume" if self.resume else START,
                                  self.engine.snapshot(dirs, programs))
            self.setups = Setups(self.plan, self.engine, run_id,
                                 lambda v, step, done: store.write_step(run_id, v, step, done),
                                 dirs, programs)
            return beat
        except KeyboardInterrupt:
            with interrupts.signals_ignored():   # no row yet: the update changes nothing
                if beat is not None:
                    beat.stop()
                store.end_run(run_id, RunStatus.INTERRUPTED)
                store.close()
            raise

    def _phases(self, nodes: list[Node]) -> str:
        """Run every phase, committing each; the run's status."""
        point = None
        with RunProgress(len(self.phases), self.show_progress) as bar:
            for phase in self.phases:
                interrupts.check()     # a Ctrl-C that library code swallowed stops us here
                if point is not None and phase.point != point:
                    self._flush()     # a new point may set a variant up: commit first
                    self.engine.sync_clocks()    # clocks drift: re-measure between points
                    self._store_nodes()
                point = phase.point
                bar.point(phase.label, phase.index)
                done = self._phase(phase, nodes, bar)
                for w in done.said:
                    self.warnings.add(w.kind, w.message, node=w.node, task=w.task,
                                      phase=w.phase, key=w.key)
                # committed once the next phase's go is sent (its lead is idle time), or
                # when anything else happens first
                self.unsaved = done
                self.failed += done.failed
                bar.advance(done.records)
                if self._lost_nodes() and self.plan.on_node_loss == "abort":
                    self._flush()
                    self._tear_down()
                    return RunStatus.ABORTED
        self.ran_all = True    # an interrupt from here on stores the last phase (_flush)
        self._flush()
        self._tear_down()
        self._quality()
        unchased = self.scheduler.unchased()   # why the lead let those slots arm late
        if unchased:
            self.warnings.add(WarningKind.LATE_GO, unchased)
        return RunStatus.FINISHED if self.failed == 0 else RunStatus.FAILED

    def _phase(self, phase: Phase, nodes: list[Node], bar: RunProgress) -> PhaseOutcome:
        """One phase run, or its records saying why it was not: a loss left too few slots
        (unfit), or its variant's setup failed (unset)."""
        live = [n for n in nodes if n.name not in self.lost]   # no work to lost nodes
        unfit = lost_unfit(phase, live, self.lost)
        unset = "" if unfit else (self.setups.before(phase) or "")
        if unfit or unset:
            self._flush()
            why = (PhaseWarning(WarningKind.NODE_LOST, unfit, key=("unfit", phase.point)) if unfit
                   else PhaseWarning(WarningKind.SETUP, unset, key=(WarningKind.SETUP, phase.variant)))
            # its records have no T0; the phase is stored with the instant it was decided
            done = replace(collect(self.run_id, phase, nodes, work_of(phase, nodes), 0, {},
                                   missing=why.message), t0=timebase.now_ns(), said=(why,))
        else:
            done = self._run_phase(phase, live, bar)
        said = done.said + tuple(_metric_warnings(phase, done.records)) + tuple(
            PhaseWarning(WarningKind.SLOT_REPLACED, notice) for notice in self.engine.take_notices())
        return replace(done, telemetry=tuple(self.engine.telemetry()), said=said)

    def _work(self, phase: Phase, nodes: list[Node]) -> Work:
        """work_of, once per placement: repetitions and points that place alike share it
        (placing every node's slots is a phase's largest cost on the coordinator)."""
        key = (phase.workers, phase.order, phase.pin, repr(phase.cpus), repr(phase.bind),
               tuple(phase.task.nodes or ()), tuple(n.name for n in nodes))
        work = self.placements.get(key)
        if work is None:
            work = self.placements[key] = work_of(phase, nodes)
        return work

    def _run_phase(self, phase: Phase, nodes: list[Node], bar: RunProgress) -> PhaseOutcome:
        work = self._work(phase, nodes)
        if self.scheduler.lead_ns() < max(OVERLAP_LEAD_NS, 4 * self.commit_ns):
            self._flush()   # a short lead: the commit would compete with the slots arming
        bar.doing("preparing")
        self.engine.prepare(phase, work, bar.tick)
        if not self.scheduler.samples and self.engine.dispatch_hint_ns:
            # no go has been timed yet: a round trip to every slot is the best first guess
            self.scheduler.hint(self.engine.dispatch_hint_ns)
        self._watch_clock(phase, nodes, during=False)    # a step: offsets again, then T0
        t0 = self.scheduler.next_t0()
        sent = timebase.now_ns()
        self.in_flight = InFlight(phase, tuple(nodes), work, t0, sent)   # what Ctrl-C keeps
        self.collector.pause((t0 - sent) / 1e9)
        try:
            self.engine.go(t0)
            bar.doing("running")
            self._flush()     # the previous phase, while this one waits for its (long) lead
            polled = timebase.now_ns()    # from here on, the coordinator waits on the nodes
            while not self.engine.poll(0.2):
                bar.tick()
                self.collector.waiting()
            results = self.engine.results()
            self.scheduler.observe(sent, t0, *_armed_and_started(results))
            done = collect(self.run_id, phase, nodes, work, t0, results, go_ns=sent)
            self.collector.freeze()
        finally:
            self.collector.resume()
        self.in_flight = None
        self._watch_clock(phase, nodes, during=True)
        stalled = flag_stalls(done.records)     # flagged in place: metrics.stall_s
        said = [PhaseWarning(WarningKind.STRAGGLER, text, node=node, task=task, phase=at)
                for node, task, at, text in stall_texts(stalled)]
        waits = self.engine.waits()
        said += self.gaps.judge(phase, t0, polled, {n: r.elapsed_ns for n, r in results.items()},
                                *waits)
        records = done.records
        times = phase_times(records.column("start_ns"), records.column("end_ns"),
                            records.column("status"), t0, polled, *waits)
        return replace(done, said=tuple(said), times=times)

    def _watch_clock(self, phase: Phase, nodes: list[Node], during: bool) -> None:
        """A step of the wall clock since last looked (run/clock_steps.py) is warned, and the
        nodes' offsets from the coordinator's clock are measured again."""
        step = clock_steps.step(max((n.error_ns for n in nodes), default=0))
        if step:
            self.warnings.add(WarningKind.CLOCK_STEP, clock_steps.step_text(
                step, phase.index, phase.task.name, during), task=phase.task.name,
                phase=phase.index)
            self.engine.sync_clocks()
            self._store_nodes()

    def _quality(self) -> None:
        """pyperf-style warnings on the whole run's figures (run/quality.py)."""
        for kind, node, task, msg in run_checks(self.store, self.run_id,
                                                {n.name: len(n.cpus) for n in self.nodes}):
            self.warnings.add(kind, msg, node=node, task=task)

    def _flush(self) -> None:
        """Commit the last finished phase, if it is not yet: one transaction, in order. It
        stays unsaved until the commit is done: an interrupt inside it (rolled back) commits
        it again."""
        if self.unsaved is not None:
            t = time.monotonic_ns()
            self._commit(self.unsaved)
            self.unsaved = None
            self.collector.unfreeze()
            self.commit_ns = time.monotonic_ns() - t

    def _commit(self, done: PhaseOutcome) -> None:
        self.store.write_phase(self.run_id, done.phase, done.t0, done.records,
                               status=done.status, samples=done.samples, go_ns=done.go_ns,
                               times=done.times)
        self.store.write_telemetry(self.run_id, done.telemetry)

    def _tear_down(self) -> None:
        """The variant in force gets its teardown, however the run ends (a second Ctrl-C
        stops it)."""
        try:
            self.setups.finish()
        except KeyboardInterrupt:
            pass

    def _lost_nodes(self) -> bool:
        """Warn of nodes lost since the last phase; True when there were any."""
        new = {n: why for n, why in self.engine.lost_nodes().items() if n not in self.lost}
        for node, why in new.items():
            self.lost.add(node)
            self.warnings.add(WarningKind.NODE_LOST, why + ("; the run stops (on_node_loss = \"abort\")"
                                                  if self.plan.on_node_loss == "abort" else
                                                  "; the run goes on without it"), node=node)
        return bool(new)

    def _store_nodes(self) -> None:
        """Store every node's latest clock offset and the worst bound seen; warn of nodes
        whose bound exceeds the plan's clock_tolerance."""
        tol = self.plan.clock_tolerance
        for n in self.nodes:
            self.worst_error[n.name] = max(self.worst_error.get(n.name, 0), n.error_ns)
            if tol is not None and n.error_ns > tol * 1e9:
                self.warnings.add(WarningKind.CLOCK, f"node {n.name}: clock offset bound "
                                  f"{n.error_ns / 1e3:.1f} us exceeds the plan's clock_tolerance "
                                  f"{tol * 1e6:.1f} us", node=n.name, key=(WarningKind.CLOCK, n.name))
        self.store.write_nodes(self.run_id, [
            StoredNode(run=self.run_id, name=n.name, host=n.host, slots=n.slots,
                       cpus=len(n.cpus), machine=n.machine, offset_ns=n.offset_ns,
                       error_ns=self.worst_error[n.name], inventory=n.inventory)
            for n in self.nodes])

    def _save_interrupted(self) -> None:
        """Keep what the interrupted phase measured; slots without a result say so."""
        flight, self.in_flight = self.in_flight, None
        if flight is None:   # interrupted before its go was sent: nothing was measured
            return
        try:
            results = self.engine.results()
        except EngineError as e:    # what the nodes hold is out of reach: the records say so
            results, why = {}, f"interrupted; its results could not be taken: {e}"
        else:
            why = "interrupted"
        done = collect(self.run_id, flight.phase, flight.nodes, flight.work, flight.t0,
                       results, missing=why, go_ns=flight.go_ns, status=PhaseStatus.INTERRUPTED)
        self._commit(done)
        self.failed += done.failed


def _metric_warnings(phase: Phase, records: RecordColumns) -> Iterator[PhaseWarning]:
    """The kernels' own warnings their records carry, and command metrics that matched
    nothing."""
    extras = records.column("extra")
    # the records that say anything, found at C speed (a phase of 64,000 says nothing)
    said = sorted({*compress(range(len(extras)), map(contains, extras, repeat(WARNINGS))),
                   *compress(range(len(extras)),
                             map(contains, extras, repeat(MISSING_METRICS)))})
    nodes = records.column("node") if said else ()
    for i in said:
        node, extra = nodes[i], extras[i]
        for kind, text in extra.get(WARNINGS, ()):   # a kernel's own (kernels/)
            yield PhaseWarning(kind, text, node=node, task=phase.task.name)
        for name in extra.get(MISSING_METRICS, ()):
            yield PhaseWarning(WarningKind.MISSING_METRIC, f"task {phase.task.name}: metric {name!r} matched "
                       "nothing in the command's output", task=phase.task.name,
                       phase=phase.index)


def _armed_and_started(results: Results) -> tuple[list[int], list[int]]:
    """What the scheduler learns of a phase (schedule.observe: the latest armed, whether a
    start was late) from its ok slots' stamps, 0 left out: a node whose slots are all ok
    and whose stamps are all >= 0 gives its largest of each, read in C (max), not slot by
    slot (64,000 slots at 1,000 nodes x 64); the largest is all observe reads of them."""
    armed: list[int] = []
    started: list[int] = []
    for arr in results.values():
        n = len(arr.status)
        if (n and arr.status.count(OK_TEXT) == n and min(arr.armed_ns) >= 0
                and min(arr.start_ns) >= 0):
            pairs = [(max(arr.armed_ns), max(arr.start_ns))]
        else:
            pairs = [(a, s) for a, s, st in zip(arr.armed_ns, arr.start_ns, arr.status)
                     if st == OK_TEXT]
        armed += [a for a, _ in pairs if a]
        started += [s for _, s in pairs if s]
    return armed, started


def work_of(phase: Phase, nodes: list[Node]) -> Work:
    """Which slot of which node runs each of the phase's workers (run/placement.py)."""
    return assign(phase.workers, phase.order, phase.pin, capacity(phase, nodes),
                  {n.name: n.cpus for n in nodes}, {n.name: n.machine for n in nodes},
                  phase.cpus, phase.bind)


def lost_unfit(phase: Phase, live: list[Node], lost: set[str]) -> str:
    """Why the phase cannot run on the nodes left after a loss ("" when it can): a phase
    is never given fewer workers than it is labelled with."""
    if not lost:
        return ""
    room = sum(capacity(phase, live).values())
    if phase.workers <= room:
        return ""
    return (f"not run: task {phase.task.name} needs {phase.workers} workers, the nodes left "
            f"after losing {', '.join(sorted(lost))} have {room} slots for it")


def capacity(phase: Phase, nodes: list[Node]) -> dict[str, int]:
    """Slots per node open to the phase's task: its `nodes` (in their order) or all."""
    slots = {n.name: n.slots for n in nodes}
    names = phase.task.nodes or list(slots)
    return {n: slots[n] for n in names if n in slots}


def check_nodes(phases: Iterable[Phase], nodes: list[Node]) -> list[str]:
    """Problems of a plan on these nodes: unknown node names, more workers than slots."""
    known = {n.name for n in nodes}
    problems: list[str] = []
    for p in phases:
        task = p.task.name
        for name in p.task.nodes or []:
            msg = f"task.{task}.nodes: unknown node {name!r} (nodes: {', '.join(sorted(known))})"
            if name not in known and msg not in problems:
                problems.append(msg)
        room = sum(capacity(p, nodes).values())
        msg = f"task.{task}.workers: {p.workers} workers but {room} slots on its nodes"
        if p.workers > room and msg not in problems:
            problems.append(msg)
            continue
        problems += [m for m in _resource_problems(p, nodes) if m not in problems]
        problems += [m for m in _layout_problems(p, nodes) if m not in problems]
    return problems


def _layout_problems(p: Phase, nodes: list[Node]) -> list[str]:
    """A parallel task's launcher must be able to say where its ranks go (run/jobs.py)."""
    if not isinstance(p.params.get("ranks"), int) or len(nodes) < 2:
        return []
    return layout_problems(p, work_of(p, nodes), f"task.{p.task.name}.launcher")


def _resource_problems(p: Phase, nodes: list[Node]) -> list[str]:
    """Every concurrent slot of a node needs its own id of each resource."""
    ids = {name: len(r["ids"]) for name, r in p.resources.items() if name != "scratch"}
    if not ids:
        return []
    try:
        counts = spread_counts(p.workers, p.order, capacity(p, nodes))
    except ValueError:
        return []
    most = max(counts.values())
    return [f"placement.resources.{name}: {n} ids but task {p.task.name} puts {most} slots "
            f"on one node (workers = {p.workers}): each concurrent slot needs its own"
            for name, n in ids.items() if most > n]

