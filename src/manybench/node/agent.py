"""The node agent: owns this node's pool of persistent, pinned slot processes.

Slots are forked once per run and fed phases over pipes (protocol.py's Slot* messages). A
phase is three steps so the coordinator can pick T0 only when every slot is ready: prepare
(files laid out, child forked; then connect, for slots that talk to each other), go (T0 in
this node's clock), collect (results). A slot that dies yields an error result and is
replaced; one that overruns its timeout is killed and yields a timeout result.
"""
from __future__ import annotations

import os
import select
import signal
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection, Pipe
from typing import Callable

from ..build_isa import check as check_cpu
from ..config import load as load_config, timing
from ..kernels import WARM_UP
from ..kernels.rank_keys import run_key
from ..status import Status
from . import pipe
from .procs import exit_text, reap
from .reaper import SlotCgroup, cgroup_name, kill_group, sweep_stale
from .arrays import SlotResults
from .protocol import (CODEC, Assignment, CommandsDone, Connect, Connected, Finished, Prepare,
                       Prepared, RunCommands, SlotConnect, SlotConnected, SlotDone, SlotExit,
                       SlotGo, SlotPing, SlotPlace, SlotPrepare, SlotReady, Start, WirePhase,
                       WireTask, check_version)
from .context import ContextError, slot_context
from .scratch import Scratch
from .spin_hold import held_place, held_result, sleepers
from .telemetry import Telemetry
from .wire_types import Result


@dataclass
class SlotHandle:
    index: int
    pid: int
    conn: Connection
    cgroup: SlotCgroup | None = None   # where cgroup v2 is writable (reaper.py)
    fd: int = -1    # conn's, read once (every phase writes and reads it); -1 once closed

    def __post_init__(self) -> None:
        self.fd = self.conn.fileno()

    def close(self) -> None:
        self.conn.close()
        self.fd = -1     # a write or read then fails (EBADF), never reaches a reused fd


@dataclass
class Running:
    """One slot's part in the phase under way."""
    place: SlotPlace
    result: Result | None = None
    ready: bool = False
    info: dict | None = None    # what the slot's kernel published for its peers
    waiting: bool = False       # a connect was sent and not yet answered
    child: int = 0              # its command's process group (SlotReady.child)
    prepare: SlotPrepare | None = None   # a light phase's prepare, sent with the go
    held: float | None = None   # its spin held: another slot slept (spin_hold.py)


class Agent:
    def __init__(self, node: str, run: str, slots: int, default_dir: str,
                 keep: bool = False, telemetry_s: float = 0.0, secret: str = "",
                 host: str = "", kill_grace_s: float = 0.0) -> None:
        """kill_grace_s: beyond a task's own timeout before the agent kills the slot itself,
        the coordinator's (Start); 0: this process's node.kill_grace (tests)."""
        self.node = node
        self.kill_grace_s = kill_grace_s or timing("node.kill_grace")
        # what the slots of a parallel task's jobs derive their secrets from: never the
        # run's secret itself (kernels/rank_keys.py)
        self.job_key = run_key(secret)
        self.host = host
        self.keep = keep   # leave scratch at the end
        self.run = run
        self.default_dir = default_dir
        self.scratch = Scratch(run, node)
        self.slots: list[SlotHandle] = []
        self.nslots = slots
        self.phase: WirePhase | None = None
        self.running: dict[int, Running] = {}
        self.deadline: float | None = None
        self.replaced = 0   # slots that died and were replaced in this run
        self.notices: list[str] = []   # for the coordinator's stored warnings (slot-replaced)
        self.forked = 0     # slot processes forked: names each one's cgroup
        self.telemetry = Telemetry(node, telemetry_s)
        self.t0_ns = 0      # the phase under way's T0 (this node's clock)
        self.went_ns = 0    # when its go came (this node's clock)
        self._poller = select.poll()     # _receive's, for the fds in _polled
        self._polled: set[int] = set()
        self.asleep: dict[int, float] = {}   # the phase's slots that slept for busy cpus
        self.held_warned: set[int] = set()     # slots whose held spin was told (once each)

    @classmethod
    def of(cls, req: Start) -> Agent:
        """The agent a Start asks for; ProtocolMismatch when the coordinator that sent it
        speaks another protocol version, CpuMismatch when this node's cpu lacks instructions
        the C kernels were built for (both engines start their agents here, before any slot
        loads the kernels)."""
        check_version(req.protocol, "the coordinator")
        check_cpu()
        return cls(req.node, req.run, req.slots, req.default_dir, req.keep, req.telemetry_s,
                   req.secret, req.host, req.kill_grace_s)

    # -- slot pool -------------------------------------------------------------------
    def start(self) -> int:
        """Fork the pool and warm it up; returns how long one round trip to all slots took."""
        sweep_stale()     # what killed runs' slots left behind on this node
        load_config()     # before the fork: the slots inherit it, none reads YAML in a phase
        self.slots = [self._fork(i) for i in range(self.nslots)]
        self._warm_up()
        t = time.monotonic_ns()
        for s in self.slots:
            _send(s, SlotPing())
        for s in self.slots:
            _recv(s)
        return time.monotonic_ns() - t

    def _warm_up(self) -> None:
        """One unrecorded null phase: first-use costs (imports, page faults) are paid here,
        not by the first measured phase."""
        warm = WirePhase(index=-1, task=WireTask(name="warm-up"), kernel=WARM_UP, variant="",
                         rep=0, workers=self.nslots, params={})
        everywhere = tuple(sorted(os.sched_getaffinity(0)))
        self.prepare(Prepare(warm, [Assignment(SlotPlace(i, -1, everywhere, False), i)
                                    for i in range(self.nslots)]))
        self.go(time.time_ns())
        while not self.poll(1.0):
            pass
        self.running = {}

    def _fork(self, index: int) -> SlotHandle:
        parent, child = Pipe(duplex=True)
        self.forked += 1
        cgroup = SlotCgroup(cgroup_name(os.getpid(), index, self.forked))
        pid = os.fork()
        if pid == 0:   # the slot: keep only its own pipe end
            try:
                cgroup.join()    # before anything it starts: they are all in it
                parent.close()
                for s in self.slots:
                    s.close()
                from .slot import slot_main   # noqa: PLC0415 (only the child needs it)
                slot_main(child, cgroup.path)
            finally:
                os._exit(1)
        child.close()
        return SlotHandle(index, pid, parent, cgroup)

    def _replace(self, index: int, why: str) -> str:
        """Reap a dead (or killed) slot, fork a fresh one in its place; returns why it died."""
        old = self.slots[index]
        old.close()
        status = reap(old.pid, 1.0)
        # what the dead slot started (its command) dies too: its whole cgroup, else at
        # least the command's process group
        if old.cgroup is not None and old.cgroup.path is not None:
            old.cgroup.remove()
        elif index in self.running and self.running[index].child > 0:
            kill_group(self.running[index].child)
        if not why:
            why = "slot died" + (f" ({exit_text(status)})" if status is not None else "")
        self.slots[index] = self._fork(index)
        self.replaced += 1
        return why

    def _kill(self, index: int) -> None:
        try:
            os.kill(self.slots[index].pid, signal.SIGTERM)   # its C handler kills its child first
        except ProcessLookupError:
            pass

    # -- one phase -------------------------------------------------------------------
    def _slot_prepares(self, req: Prepare) -> dict[int, SlotPrepare]:
        """The phase under way becomes req's; each slot's SlotPrepare (a slot whose context
        cannot be made gets its error result instead)."""
        phase = self.phase = req.phase
        if not self.keep:
            self.scratch.drop_phase_dirs()
        # who slept for busy cpus in the last phase holds the others' spin in this one
        self.asleep = sleepers((i, r.result) for i, r in self.running.items())
        self.running = {a.place.slot: Running(a.place) for a in req.work}
        out = {}
        for a in req.work:
            # a [[concurrent]] group's phase: each rank runs its member task's phase
            mine, rank = phase.member_of(a.rank) if phase.members else (phase, a.rank)
            try:
                ctx = slot_context(mine, a.place, rank, self.node, self.run, self.scratch,
                                   self.default_dir, self.job_key, self.host)
            except ContextError as e:
                self.running[a.place.slot].result = Result(status=Status.ERROR, error=str(e))
                continue
            place, self.running[a.place.slot].held = held_place(a.place, self.asleep)
            out[a.place.slot] = SlotPrepare(mine, ctx, place)
        return out

    def prepare(self, req: Prepare, tick: Callable[[], None] | None = None) -> Prepared:
        """Send the phase to its slots and wait until each is ready or has failed."""
        for i, msg in self._slot_prepares(req).items():
            self._send_prepare(i, msg)
        # a prepare (files laid out, a wrap's launcher started) may take node.prepare_timeout
        # when the task gives no timeout of its own; past it the slot is stopped
        limit = req.phase.task.timeout or timing("node.prepare_timeout")
        deadline = time.monotonic() + limit
        measured = req.phase.index >= 0      # not the pool's warm-up
        began = time.time_ns()
        while not all(r.ready or r.result for r in self.running.values()):
            self._receive(min(0.2, max(0.0, deadline - time.monotonic())))
            if time.monotonic() >= deadline:
                self._stop_preparing(limit, req.phase.task.timeout is not None)
            if measured:    # between phases: a prepare's I/O is not its phase's
                self.telemetry.tick(None)
            if tick:
                tick()
        if measured:
            self.telemetry.boundary(None, began)
        return Prepared(SlotResults.of(self.results()),
                        {i: r.info for i, r in self.running.items()
                         if r.ready and r.info is not None}, self.take_notices())

    def _stop_preparing(self, limit: float, from_task: bool) -> None:
        """Past the prepare's deadline: each slot still preparing is stopped (and replaced)
        and its record says so; the phase goes on with the others, the run with the next."""
        why = "the task's timeout" if from_task else "the default, the task gives no timeout"
        for i, r in self.running.items():
            if not (r.ready or r.result):
                self._kill(i)
                r.result = Result(status=Status.ERROR, error=f"prepare did not finish within "
                                  f"{limit:g}s ({why}): the slot was stopped")
                self._replace(i, "prepare past its deadline")

    def _send_prepare(self, index: int, msg: SlotPrepare) -> None:
        """A slot that died while idle (between phases) is replaced before it is given the
        phase: it held nothing measured, so the phase runs in full on the fresh slot."""
        status = self._exited(index)
        if status is not None:
            self._replace_idle(index, f"exited while idle ({exit_text(status)})")
        try:
            _send(self.slots[index], msg)
        except OSError:   # died between the check and the send
            self._replace_idle(index, "its pipe closed while idle")
            _send(self.slots[index], msg)

    def _exited(self, index: int) -> int | None:
        try:
            pid, status = os.waitpid(self.slots[index].pid, os.WNOHANG)
        except ChildProcessError:
            return 0
        if pid:   # reaped here: _replace's reap finds it gone
            return status
        return None

    def _replace_idle(self, index: int, why: str) -> None:
        self._replace(index, why)
        self.notices.append(f"node {self.node}: slot {index} {why}; replaced by a fresh slot "
                            "before the next phase (nothing measured was lost)")

    def take_notices(self) -> list[str]:
        """What happened to this node's slots since last asked, for stored warnings."""
        out, self.notices = self.notices, []
        return out

    def _ready_slots(self) -> list[int]:
        return [i for i, r in self.running.items() if r.ready and r.result is None]

    def connect(self, req: Connect, tick: Callable[[], None] | None = None) -> Connected:
        """Hand every ready slot its peers and wait until each has connected or failed."""
        began = time.time_ns()
        for i in self._ready_slots():
            self.running[i].waiting = True
            _send(self.slots[i], SlotConnect(req.peers))
        while any(r.waiting and r.result is None for r in self.running.values()):
            self._receive(0.2)
            self.telemetry.tick(None)
            if tick:
                tick()
        self.telemetry.boundary(None, began)
        return Connected(SlotResults.of(self.results()))

    def go(self, t0_ns: int, light: Prepare | None = None) -> None:
        """Release the prepared slots at T0, in this node's clock. light: a phase whose
        prepare touches nothing (kernel trait light_prepare), not yet prepared: it travels
        with the go, which saves a round trip to every slot."""
        if light is not None:
            for i, msg in self._slot_prepares(light).items():
                status = self._exited(i)    # died while idle: replaced, as prepare does
                if status is not None:
                    self._replace_idle(i, f"exited while idle ({exit_text(status)})")
                self.running[i].ready = True     # ready when it takes the go
                self.running[i].prepare = msg
        timeout = self.phase.task.timeout if self.phase else None
        self.deadline = None if timeout is None else (time.monotonic() + timeout
                                                      + max(0, (t0_ns - time.time_ns()) / 1e9)
                                                      + self.kill_grace_s)
        self.t0_ns = t0_ns
        self.went_ns = time.time_ns()    # the phase's rows are from here (telemetry)
        go = b""     # packed once for every slot: the loop is the dispatch time
        for i in self._ready_slots():
            r = self.running[i]
            if r.prepare is None and not go:
                go = CODEC.pack(SlotGo(t0_ns))
            try:
                pipe.send(self.slots[i].fd, go if r.prepare is None else
                          CODEC.pack(SlotGo(t0_ns, r.prepare)))
            except OSError:   # died since it was ready: its record says so, the run goes on
                r.result = Result(status=Status.ERROR, error="the slot died before its go")

    def poll(self, timeout: float) -> bool:
        """Take in what slots have sent; True when every slot of the phase has a result."""
        if self.deadline is not None and time.monotonic() > self.deadline:
            for i, r in self.running.items():
                if r.result is None:
                    self._kill(i)
                    r.result = Result(status=Status.TIMEOUT, error="killed by the agent after the "
                                      f"task's timeout ({self.phase.task.timeout:g}s)")
                    self._replace(i, "timeout")
        if self._done():
            return True
        self._receive(timeout)
        done = self._done()
        if self.phase is not None and self.phase.index >= 0:   # not the pool's warm-up
            if done:     # the phase's last row ends with it: the next prepare's are apart
                self.telemetry.boundary(self.phase.index, self.went_ns)
            else:
                self.telemetry.tick(self.phase.index, self.t0_ns)
        return done

    def _done(self) -> bool:
        """Every slot of the phase has its result (a plain loop: twice a phase, and all()
        over a generator costs a frame and a call per slot)."""
        for r in self.running.values():
            if r.result is None:
                return False
        return True

    def _receive(self, timeout: float) -> None:
        waiting = {self.slots[i].fd: i for i, r in self.running.items()
                   if r.result is None}
        # one poll object, made again only when the slots waited on change (this runs once
        # or twice per phase); poll(2) is given the fds afresh at every call
        if self._polled != waiting.keys():
            self._poller = select.poll()
            for fd in waiting:
                self._poller.register(fd, select.POLLIN)
            self._polled = set(waiting)
        for fd, _ in self._poller.poll(max(0, round(timeout * 1000))):
            i = waiting[fd]
            try:
                msg = _recv(self.slots[i])
            except (EOFError, OSError, ValueError):
                self.running[i].result = Result(status=Status.ERROR, error=self._replace(i, ""))
                continue
            match msg:
                case SlotReady(info, child):
                    self.running[i].ready = True
                    self.running[i].info = info
                    self.running[i].child = child
                case SlotConnected():
                    self.running[i].waiting = False
                case SlotDone(result):
                    r = self.running[i]
                    if r.held is not None and result.status == Status.OK:
                        result = held_result(result, r.held, self.asleep,
                                             i not in self.held_warned, r.place,
                                             self.phase.index if self.phase else -1)
                        self.held_warned.add(i)
                    r.result = result

    def results(self) -> dict[int, Result]:
        return {i: r.result for i, r in self.running.items() if r.result is not None}

    def finished(self) -> Finished:
        """The phase's reply: every slot's result as arrays, what happened to slots, the
        telemetry taken since the last."""
        return Finished(SlotResults.of(self.results()), self.take_notices(),
                        self.telemetry.drain())

    # -- a variant's setup or teardown --------------------------------------------------
    def run_commands(self, req: RunCommands) -> CommandsDone:
        """Run the commands here, between phases (the slots are idle), with "{node}" filled."""
        from .commands import run_commands   # noqa: PLC0415 (slots never need it)
        return run_commands(req, self.node)

    # -- the end ---------------------------------------------------------------------
    def close(self) -> None:
        for s in self.slots:
            try:
                _send(s, SlotExit())
            except OSError:
                pass
        self._reap_all(2.0)
        if not self.keep:
            self.scratch.cleanup()

    def abort(self) -> None:
        """Ctrl-C or a fatal error: stop every slot and its child now."""
        for i in range(len(self.slots)):
            self._kill(i)
        self._reap_all(2.0)
        if not self.keep:
            self.scratch.cleanup()

    def _reap_all(self, grace: float) -> None:
        end = time.monotonic() + grace
        for s in self.slots:
            reap(s.pid, max(0.0, end - time.monotonic()))
            s.close()
            if s.cgroup is not None:
                s.cgroup.remove()
        self.slots = []



def _send(slot: SlotHandle, msg: object) -> None:
    """A Slot* message down a slot's pipe (protocol.CODEC, as every message is encoded)."""
    pipe.send(slot.fd, CODEC.pack(msg))


def _recv(slot: SlotHandle) -> object:
    """A slot's reply; EOFError when it is gone, ValueError for what is not a message."""
    return CODEC.unpack(pipe.recv(slot.fd))
