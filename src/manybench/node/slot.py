"""The slot process: one pinned worker that prepares, waits for T0 in C, runs, reports.

Driven by its agent over a pipe with the Slot* messages of protocol.py.
"""
from __future__ import annotations

import dataclasses
import os
import signal
import traceback
from dataclasses import replace
from typing import Any

from ..extra_keys import WARNINGS
from .. import _native
from ..kernels import KERNELS, Kernel
from ..kernels.base import KernelError
from ..kernels.binding import (MIN_CPU_NS, allowed_count, busy_figure, cpu_figures, cpu_shared,
                               cpulist, others_took, parse_cpulist, proc_binding, self_cpu,
                               stat_text)
from ..kernels.figures import CPU_BUSY, CPUS_ALLOWED, CPUS_BUSY, CPUS_USED, SPUN
from ..results.contract import WarningKind
from ..status import Status
from . import pipe
from .procs import die_with_parent
from .cpu_others import lineage, named, running_on
from .reaper import become_subreaper, kill_descendants
from .sampler import Sampler
from .spin_choice import SpinChoice
from .protocol import (CODEC, SlotConnect, SlotConnected, SlotDone, SlotExit, SlotGo,
                       SlotPing, SlotPlace, SlotPong, SlotPrepare, SlotReady, WirePhase)
from .wire_types import Result, SlotContext

SPIN_NS = 300_000   # the last stretch before T0 is spun: on cpus of the slot's own, idle


def _error(msg: str) -> Result:
    return Result(status=Status.ERROR, error=msg)


def _with(res: Result, **changes: Any) -> Result:
    """A copy of res with these fields changed: what dataclasses.replace makes (Result is a
    plain frozen dataclass) without its call per field, on every phase's result."""
    out = object.__new__(Result)
    out.__dict__.update(res.__dict__, **changes)
    return out


MPOL_DEFAULT, MPOL_BIND = 0, 2
MPOL_NAMES = {0: "default", 1: "preferred", 2: "bind", 3: "interleave", 4: "local",
              5: "preferred_many", 6: "weighted_interleave"}


_NAMED: dict[tuple, str] = {}    # (mode, nodes) read back -> its name: a few per slot


def mempolicy() -> str:
    """This thread's memory policy as numactl --show would name it: "default", "bind:0-1".
    Read every phase (the policy the work ran with); only its naming is kept."""
    try:
        mode, nodes = _native.get_mempolicy()
    except OSError:
        return ""
    key = (mode, *nodes)
    got = _NAMED.get(key)
    if got is None:
        name = MPOL_NAMES.get(mode & 0xFF, str(mode))
        got = _NAMED[key] = f"{name}:{cpulist(nodes)}" if nodes and name != "default" else name
    return got


class SlotLoop:
    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.prepared: tuple[Kernel, Any, int] | None = None   # kernel, state, spin_ns
        self.settle_ns = 0
        self.affinity: tuple[int, ...] = ()
        self.mems: tuple[int, ...] | None = None
        self.sample_s = 0.0     # the prepared phase's progress interval; 0: not sampled
        # [kind, text] of warnings (a failed cleanup, a first sleep for busy cpus) carried by
        # the next result's extra
        self.pending_warnings: list[list[str]] = []
        # the last /proc readback of the binding and the cpus it was read with: read again
        # only when the cpus the slot may use change (a new placement, a kernel's own pin)
        self.binding: tuple[set, dict[str, str], int] | None = None
        self.choice = SpinChoice()   # spin only while the slot's own cpus are otherwise idle
        self.busy: float | None = None   # others' share of them when it made the slot sleep
        self.shared_told = False   # a window found its cpus taken by others: told once

    def _bind(self, place: SlotPlace) -> Result | None:
        """Pin to the place's cpus and bind memory to its nodes (inherited by threads and
        by a command's process); the default policy when it names none."""
        try:
            if place.affinity != self.affinity:
                os.sched_setaffinity(0, place.affinity)
                self.affinity = place.affinity
            if place.mems != self.mems:
                _native.set_mempolicy(MPOL_BIND if place.mems else MPOL_DEFAULT,
                                      list(place.mems or ()))
                self.mems = place.mems
        except (OSError, ValueError) as e:
            self.affinity, self.mems = (), None   # unknown now: set both again next time
            what = f"cpus {cpulist(place.affinity)}" + (
                f", memory nodes {cpulist(place.mems)}" if place.mems else "")
            return _error(f"bind to {what}: {getattr(e, 'strerror', None) or e} (does this "
                          "node have them?)")
        return None

    def prepare(self, phase: WirePhase, ctx: SlotContext, place: SlotPlace) -> Result | None:
        failed = self._bind(place)
        if failed is not None:
            return failed
        kernel = KERNELS[phase.kernel]
        if ctx.wrap and not kernel.takes_wrap:
            from ..kernels.wrapped import wrapped   # noqa: PLC0415 (only wrapped phases)
            kernel = wrapped(kernel)   # its traits, the wrap's prepare and run
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
        self.busy = None
        spin = place.spin and self._spins(place, ctx)
        self.prepared = (kernel, state, SPIN_NS if spin else 0)
        self.sample_s = phase.sample if kernel.progress else 0.0
        return None

    def _spins(self, place: SlotPlace, ctx: SlotContext) -> bool:
        """Whether this slot, placed on cpus of its own, spins before T0 (spin_choice.py);
        the first phase it sleeps because they are busy is told, with the evidence."""
        was = self.choice.spin
        spin = self.choice.spins(place.affinity)
        self.busy = None if spin else self.choice.others
        if was and not spin and self.busy is not None:
            self.pending_warnings.append([
                WarningKind.BUSY_CPU, f"slot {place.slot} (cpus {cpulist(place.affinity)}) "
                f"sleeps until T0 instead of spinning from phase {ctx.phase}: "
                f"other work took {self.busy:.0%} of its cpus (/proc/stat, the "
                "run's own processes left out); a spin there would take the cpu "
                "from it and be preempted by it (expect wake-up lateness, tens "
                "of us, not a spin's few)"])
        return spin

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
            failed = _with(_error(str(e)), extra=dict(e.extra))
        except Exception as e:
            failed = _error(f"connect failed: {e!r}")
        self.cancel()
        return failed

    def go(self, t0_ns: int) -> Result:
        if self.prepared is None:
            return _error("go without a prepared phase")
        kernel, state, spin = self.prepared
        self.prepared = None
        # the slot's own cpu time says something only of in-process work (_readback)
        counts_cpu = not kernel.runs_child and not kernel.sync_only
        # how busy its cpus were, by anyone: read before the slot's cpu time and the go's
        # wait, after them at the end, so the reads cost neither the window nor the work
        stat0 = "" if kernel.sync_only else stat_text()
        cpu0 = self_cpu() if counts_cpu else 0.0
        sampler = Sampler(self.sample_s, t0_ns).start() if self.sample_s > 0 else None
        try:
            res = kernel.run(state, t0_ns, spin)
        except Exception as e:
            return _error(f"run failed: {e!r}")
        finally:
            self._cleanup(kernel, state)
            if kernel.runs_child:   # nothing the command started outlives its phase
                kill_descendants()
            _native.forget_children()   # their group ids may be reused from now on
            if sampler is not None:
                sampler.stop()
        if sampler is not None and res.status == Status.OK and res.end_ns:
            total = res.bytes if kernel.progress == "bytes" else res.ops
            res = replace(res, samples=sampler.stop(res.end_ns, total), sample_unit=kernel.progress)
        cpu_s = self_cpu() - cpu0 if counts_cpu else 0.0
        return self._readback(res, kernel, cpu_s, spin, (stat0, stat_text() if stat0 else ""))

    def _readback(self, res: Result, kernel: Kernel, cpu_s: float, spin: int,
                  stat: tuple[str, str] = ("", "")) -> Result:
        """What the work really ran with (kernels/binding.py). A child process (a command,
        a wrapped kernel) reports its own; the slot adds the memory policy it passed on,
        and how it waited for T0 (spun or slept, and the busy share that made it sleep)."""
        m = dict(res.metrics)
        m[SPUN.name] = 1 if spin else 0
        if not spin and self.busy is not None:
            m[CPU_BUSY.name] = round(self.busy, 3)
        if CPUS_ALLOWED.name not in m:
            binding, allowed = self._binding()
            m.update(binding)
            # the slot's own cpu time holds its last stretch of spinning before T0: only a
            # window long enough to dwarf it says anything about the work
            if not kernel.runs_child and not kernel.sync_only and res.elapsed_ns >= MIN_CPU_NS:
                m.update(cpu_figures(cpu_s, res.elapsed_ns / 1e9, allowed))
        if stat[1] and m.get(CPUS_ALLOWED.name) and res.status == Status.OK:
            m.update(busy_figure(*stat, str(m[CPUS_ALLOWED.name])))
            if not self.shared_told and cpu_shared(m):
                self.shared_told = True
                self._tell_shared(m)
        m.setdefault("mempolicy", mempolicy())
        return _with(res, metrics=m)

    def _tell_shared(self, m: dict) -> None:
        """Its cpus were others' as much as its own: what ran there, named (a shared-pin
        warning, carried by this result)."""
        allowed = str(m[CPUS_ALLOWED.name])
        names = running_on(set(parse_cpulist(allowed)), lineage(os.getpid()))
        self.pending_warnings.append([
            WarningKind.SHARED_PIN, f"cpus {allowed} were {m[CPUS_BUSY.name]:.0%} busy over "
            f"a phase's window while its work used {m[CPUS_USED.name]:.0%} of them: other "
            f"load took {others_took(m):.0%}; running there as the window ended: "
            + (named(names) or "nothing (that load had moved or ended)")])

    def _binding(self) -> tuple[dict[str, str], int]:
        """The slot's binding as /proc/self/status says, and how many cpus it allows: read
        once per set of cpus (a syscall tells whether they changed; parsing the file every
        phase cost more than a null phase's own work)."""
        cpus = os.sched_getaffinity(0)      # a set: compared as it is, kept as it is
        if self.binding is None or self.binding[0] != cpus:
            got = proc_binding("self")
            self.binding = (cpus, got, allowed_count(got))
        return self.binding[1], self.binding[2]

    def cancel(self) -> None:
        if self.prepared is not None:
            kernel, state = self.prepared[:2]
            self.prepared = None
            self._cleanup(kernel, state)
            if kernel.runs_child:
                kill_descendants()
            _native.forget_children()

    def _cleanup(self, kernel: Kernel, state: Any) -> None:
        """The kernel's cleanup. One that fails is told with the phase's result (a stored
        warning naming the kernel): files, a child or a connection may be left behind."""
        if kernel.cleanup is not None:
            try:
                kernel.cleanup(state)
            except Exception as e:   # kernel code, any bug: the slot and its result go on
                self.pending_warnings.append([
                    WarningKind.CLEANUP, f"kernel {kernel.name}: its cleanup after the phase "
                    f"failed ({e!r}): what it opened or started may remain"])

    def _done(self, res: Result) -> SlotDone:
        """The reply carrying a result, with the warnings pending (a failed cleanup, a busy
        cpu) as its warnings."""
        if self.pending_warnings:
            pending, self.pending_warnings = self.pending_warnings, []
            res = dataclasses.replace(res, extra={
                **res.extra, WARNINGS: [*res.extra.get(WARNINGS, ()), *pending]})
        return SlotDone(res)

    def _child(self) -> int:
        """The prepared kernel's child (its own process group), for the agent to kill
        should this slot die (reaper.py; where no cgroup holds the slot)."""
        state = self.prepared[1] if self.prepared else None
        pid = getattr(state, "pid", 0)
        return pid if isinstance(pid, int) else 0

    def _prepare_reply(self, msg: SlotPrepare) -> SlotReady | SlotDone:
        failed = self.prepare(msg.phase, msg.ctx, msg.place)
        if failed is not None:
            return self._done(failed)
        try:
            return SlotReady(self.publish(), self._child())
        except Exception as e:
            self.cancel()
            return self._done(_error(f"publish failed: {e!r}"))

    def serve(self) -> None:
        conn = _Pipe(self.conn)
        while True:
            try:
                msg = conn.recv()
            except (EOFError, OSError, ValueError):
                return
            match msg:
                case SlotGo(t0_ns, None):
                    conn.send(self._done(self.go(t0_ns)))
                case SlotGo(t0_ns, prep):     # prepare and go in one: one reply
                    failed = self.prepare(prep.phase, prep.ctx, prep.place)
                    conn.send(self._done(failed if failed is not None else self.go(t0_ns)))
                case SlotConnect(peers):
                    failed = self.connect(peers)
                    conn.send(SlotConnected() if failed is None else self._done(failed))
                case SlotPrepare():
                    conn.send(self._prepare_reply(msg))
                case SlotPing():
                    conn.send(SlotPong(os.getpid()))
                case SlotExit():
                    return


class _Pipe:
    """The slot's end of its pipe, speaking protocol.CODEC (the agent's _send, _recv)."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.fd = conn.fileno()

    def recv(self) -> object:
        return CODEC.unpack(pipe.recv(self.fd))

    def send(self, msg: object) -> None:
        pipe.send(self.fd, CODEC.pack(msg))


def arm_term_handler(cgroup: str | None) -> None:
    """SIGTERM (the agent's, or the parent-death signal when the agent dies, even by
    SIGKILL) kills the commands' groups and, where the slot has a cgroup, everything in it:
    a command's orphan outlives neither the phase nor the slot."""
    _native.install_term_handler()
    if cgroup is not None:
        try:
            _native.set_kill_file(os.path.join(cgroup, "cgroup.kill"))
        except OSError:
            pass    # a kernel before 5.14: the groups and the agent's sweep remain


def slot_main(conn: Any, cgroup: str | None = None) -> None:
    """Entry point in the forked child. Never returns: the process ends with os._exit."""
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)   # the coordinator handles Ctrl-C
        arm_term_handler(cgroup)   # before the parent-death signal can come
        die_with_parent()   # a slot must not outlive its agent, even one killed with SIGKILL
        become_subreaper()  # orphans of its commands come back to it (reaper.py)
        _native.set_timerslack(1)
        SlotLoop(conn).serve()
    except BaseException:
        code = 1
    finally:
        os._exit(code)
