"""Parallel tasks: a command task with `ranks = N` runs its phase's workers as workers / N
jobs of N ranks, every rank of every job starting its work at T0.

Each slot of the phase is one rank: phase rank r is rank r % N of job r // N, and the rank
runs on the slot's node and cpus. The steps (kernels/rank_link.py is the slot's channel to
its rank, native/mbrank.c the rank's side):
  prepare  every slot listens for its rank (at the job's secret name, rank_keys.py; taking
           only a peer of its user that proves it belongs to the job, rank_link.py) and
           publishes its node, cpus and abort port
  connect  (every rank's node known) the job's first slot writes the launcher's command line
           (launchers/: the family's host list) and starts it; every slot waits until its
           rank is held: in MPI_Init after the real one returned, or before main() for a
           program that is not MPI-linked. Launcher start-up, wire-up and MPI_Init happen
           here, outside the window, bounded by the task's startup_timeout (else
           mpi.startup_timeout, config/), not its timeout: a launcher that hangs on a bad
           host is ended soon, and its output and status are kept on the job's first record.
  run      every slot sends its rank T0 in its node's clock; the rank waits for T0, stamps
           its start and returns from MPI_Init; its MPI_Finalize (or exit) stamps its end.
           The job's first slot also waits for the launcher: its exit status and output are
           the job's, parsed onto that slot's record.
The ranks bind themselves to their slots' cpus and memory nodes (the launcher's binding is
turned off) and start in their slots' {scratch}.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from importlib import resources
from typing import IO

from ..launchers import Job, Launcher, LauncherError, resolve
from ..launchers.base import how_ended
from ..node.wire_types import Result, SlotContext
from .base import Kernel, KernelError, Param
from .binding import cpulist
from ..config import timing
from . import job_leftovers
from .figures import JOB
from .mpi_phase import finish_jobs
from .mpi_record import FACTS, FIGURES, job_result
from .command import SCAN_BYTES, TAIL_BYTES, build_argv, template_values
from .scratchfs import install_copy, make_dir, root_of
from .rank_keys import JobKeys
from .rank_link import (AbortChannel, RankGone, RankLink, socket_name, tell_abort,
                        tell_abort_remote)

LIBRARY = "libmbrank.so"
# programs that exec or start the real program: let through, so that one is the rank
PASS = ("env", "numactl", "taskset", "nice", "chrt", "time", "sh", "bash", "dash", "ch-run",
        "apptainer", "singularity", "podman", "docker", "srun")
MPOL_BIND = 2


def library() -> str:
    """The installed libmbrank.so (package data beside this module)."""
    path = resources.files(__package__) / LIBRARY
    if not path.is_file():
        raise KernelError(f"the rank synchronizer {LIBRARY} is not built: run `pip install .` "
                          "(or `python setup.py build_ext --inplace`) in the source tree")
    return str(path)


@dataclass
class Launch:
    """The job's launcher, started by its first slot."""
    launcher: Launcher
    argv: list[str]
    proc: subprocess.Popen
    out: IO[bytes]
    err: IO[bytes]
    status: int | None = None
    exited_mono: int = 0
    timed_out: bool = False     # ended by the task's timeout ...
    killed: bool = False        # ... by this slot (else it ended once a rank was killed)
    leftovers: list[str] = field(default_factory=list)   # killed for holding its output

    def poll(self) -> int | None:
        if self.status is None:
            self.status = self.proc.poll()
            if self.status is not None:
                self.exited_mono = time.monotonic_ns()
        return self.status

    def kill(self) -> None:
        self.killed = True
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def text(self) -> tuple[str, str]:
        return _tail(self.out, SCAN_BYTES), _tail(self.err, SCAN_BYTES)


def _tail(f: IO[bytes], limit: int) -> str:
    f.seek(0, os.SEEK_END)
    f.seek(max(0, f.tell() - limit))
    return f.read().decode(errors="replace")


@dataclass
class JobSlot:
    ctx: SlotContext
    params: dict
    ranks: int
    job: int
    jrank: int
    keys: JobKeys                    # the job's socket name, token and abort key
    link: RankLink
    place: str                       # "CPUS MEMS CWD" for the rank
    cpus: tuple[int, ...]
    launcher: Launcher | None = None    # the job's first slot: resolved at prepare
    launch: Launch | None = None        # ... started at connect
    connect_mono: int = 0
    abort: AbortChannel | None = None   # the other slots: told when the job will not start
    preload: str = ""                   # libmbrank.so where the ranks load it (under a wrap:
                                        # the copy in the run's directory, which it binds)

    @property
    def pid(self) -> int:
        """The launcher's process group, for the agent to kill should this slot die."""
        return self.launch.proc.pid if self.launch is not None else 0


def _memory_nodes() -> str:
    from .. import _native   # noqa: PLC0415
    try:
        mode, nodes = _native.get_mempolicy()
    except OSError:
        return "-"
    return cpulist(nodes) if (mode & 0xFF) == MPOL_BIND and nodes else "-"


def _prepare(ctx: SlotContext, params: dict) -> JobSlot:
    n = int(params["ranks"])
    job, jrank = divmod(ctx.rank, n)
    if " " in ctx.scratch or "\n" in ctx.scratch:
        raise KernelError(f"scratch directory {ctx.scratch!r}: a parallel task's directory "
                          "may not hold spaces")
    make_dir(root_of(ctx), ctx.scratch, "parallel task")   # by descriptor, as command's
    cpus = tuple(sorted(os.sched_getaffinity(0)))
    try:
        keys = JobKeys.of(ctx.job_key, ctx.run, ctx.phase, job)
    except ValueError as e:
        raise KernelError(str(e)) from None
    st = JobSlot(ctx, params, n, job, jrank, keys, RankLink(socket_name(keys.name, jrank), keys),
                 f"{cpulist(cpus)} {_memory_nodes()} {ctx.scratch}", cpus)
    try:
        if ctx.wrap:     # every node of the job has it where the ranks' wrap binds
            st.preload = install_copy(root_of(ctx), root_of(ctx), library(), LIBRARY,
                                      "parallel task under a wrap")
        if jrank == 0:
            st.launcher = resolve(ctx.spec.launcher or "auto", {**os.environ, **ctx.env})
            library()
        else:
            st.abort = AbortChannel(ctx.host, keys)
    except (LauncherError, KernelError, OSError) as e:
        _cleanup(st)
        raise KernelError(f"launcher: {e}" if isinstance(e, LauncherError) else str(e)) \
            from None
    return st


def _publish(st: JobSlot) -> dict:
    return {"node": st.ctx.node, "cpus": cpulist(st.cpus),
            "abort_port": st.abort.port if st.abort is not None else 0}


def _job_env(st: JobSlot) -> dict[str, str]:
    """What every rank of the job gets through the launcher (remote ranks do not inherit the
    launcher's environment): the phase's variables, OMP_NUM_THREADS for ranks of several
    cpus, and the synchronizer."""
    ctx = st.ctx
    env = dict(ctx.env)
    if len(st.cpus) > 1 and "OMP_NUM_THREADS" not in env:
        env["OMP_NUM_THREADS"] = str(len(st.cpus))
    pre = os.environ.get("LD_PRELOAD", "") if "LD_PRELOAD" not in env else env["LD_PRELOAD"]
    env["LD_PRELOAD"] = (st.preload or library()) + (f":{pre}" if pre else "")
    passed = list(PASS) + ([os.path.basename(ctx.wrap[0])] if ctx.wrap else [])
    env["MANYBENCH_MPI_PASS"] = ":".join(passed)    # no comma: srun --export splits on them
    return env


def _job_private(st: JobSlot) -> dict[str, str]:
    """What every rank gets through the launcher's environment, by name only (Job.private):
    where its slot listens and the token it proves its job with."""
    return {"MANYBENCH_MPI_SOCK": st.keys.name, "MANYBENCH_MPI_TOKEN": st.keys.token}


def _start(st: JobSlot, peers: dict[int, dict]) -> None:
    """The job's first slot: the launcher, started with the job's ranks' hosts."""
    ctx, n = st.ctx, st.ranks
    mine = [peers.get(st.job * n + r) for r in range(n)]
    if any(p is None for p in mine):
        missing = [st.job * n + r for r, p in enumerate(mine) if p is None]
        raise KernelError(f"ranks {missing} of job {st.job} failed before the launch")
    program = list(ctx.wrap or []) + build_argv(ctx.spec, template_values(ctx, st.params))
    path = shutil.which(program[0]) if "/" not in program[0] else program[0]
    if not path or not os.access(path, os.X_OK):
        raise KernelError(f"command not found or not executable: {program[0]}")
    if statically_linked(path):
        raise KernelError(f"{path} is statically linked: {LIBRARY} cannot be preloaded "
                          "into it, so its ranks cannot be held until T0 (a parallel task "
                          "needs a dynamically linked program or script)")
    nodes = [p["node"] for p in mine]
    why = st.launcher.family.check(nodes)
    if why:
        raise KernelError(f"launcher: {why}")
    job = Job(program=program, hosts=[p["host"] for p in mine],
              local=all(nd == ctx.node for nd in nodes), env=_job_env(st),
              private=_job_private(st),
              args=list(ctx.spec.launcher_args or []), workdir=ctx.scratch,
              here=tuple(nd == ctx.node for nd in nodes), nodes=tuple(nodes))
    try:
        argv, extra = st.launcher.family.argv(st.launcher.path, job)
    except LauncherError as e:
        raise KernelError(f"launcher: {e}") from None
    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    env = {**os.environ, **ctx.env, **extra}
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                cwd=ctx.scratch, env=env, start_new_session=True)
    except OSError as e:
        out.close()
        err.close()
        raise KernelError(f"cannot start {argv[0]}: {e.strerror}") from None
    st.launch = Launch(st.launcher, argv, proc, out, err)
    _kill_on_term(proc.pid)


def _kill_on_term(pgid: int) -> None:
    """The slot's SIGTERM handler (the agent stopping it: Ctrl-C, a lost coordinator's lease)
    kills this process group too: neither the launcher (a session of its own) nor a rank (the
    launcher's child, not ours) is in the slot's group, and a node may have no cgroup to hold
    them. Forgotten after the phase, with the slot's other children."""
    if pgid > 1 and pgid != os.getpgrp():
        from .. import _native   # noqa: PLC0415
        _native.track_child(pgid)


def _launcher_gone(st: JobSlot) -> str | None:
    """Why the job cannot start any more: its launcher exited (its output's tail)."""
    if st.launch is None or st.launch.poll() is None:
        return None
    out, err = st.launch.text()
    tail = _tail_of(out, err)
    hint = ""
    if LIBRARY in out + err and "cannot be preloaded" in out + err:
        hint = (f" ({LIBRARY} was not found where the ranks run" +
                (": a wrap must bind {scratch}, the run's directory, at the same path"
                 if st.ctx.wrap else ": is manybench installed at the same path on every "
                 "node?") + ")")
    name = os.path.basename(st.launch.argv[0])
    code = st.launch.status
    if code == 0 and not hint:
        # the job ran to its end and no rank was ever held: a wrapper (sh -c ...) whose
        # programs are all helpers (not MPI-linked), or a program that exits before
        # MPI_Init. Say so: "exited before ready" alone reads as a launcher failure.
        return (f"job {st.job} ran to its end before its ranks were held: its start was not "
                f"synchronized (the launcher {name} exited with status 0 before rank "
                f"{st.jrank} was ready). Behind a wrapper ({', '.join(PASS[:4])} ...) only "
                "an MPI-linked program is held; a program that is not MPI-linked is held "
                "before main() when it is the command itself or what the wrapper execs: "
                "`exec` it as the shell's last command, or drop the shell"
                + (f": {tail}" if tail else ""))
    return (f"the launcher {name} {_ended(st)} before rank {st.jrank} of job {st.job} was "
            f"ready{hint}" + (f": {tail}" if tail else ""))


def _ended(st: JobSlot) -> str:
    """How the launcher ended (launchers/base.how_ended)."""
    return how_ended(st.launch.launcher.family, st.launch.status, "\n".join(st.launch.text()))


def _tail_of(out: str, err: str) -> str:
    """What a launcher said last: its stderr's tail, else its stdout's."""
    return (err.strip() or out.strip())[-TAIL_BYTES:]


def _launcher_said(st: JobSlot, wait_s: float) -> str:
    """What the job's launcher said once the job did not start (the first slot's record):
    its exit status and the tail of its output, waited for `wait_s` (0: killed now, at the
    start-up bound). The record said only that the rank had ended, or that it was not ready
    in time, which hid why (ssh's "Could not resolve hostname" under a Hydra that hangs)."""
    if st.launch is None:
        return ""
    name = os.path.basename(st.launch.argv[0])
    try:
        st.launch.proc.wait(wait_s)
        st.launch.poll()
        how = _ended(st)
    except subprocess.TimeoutExpired:
        st.launch.kill()
        st.launch.proc.wait()
        st.launch.poll()
        how = "still ran" + (f" {wait_s:g} s later" if wait_s else "") + ": killed"
    tail = _tail_of(*st.launch.text())
    return f"; the launcher {name} {how}" + (f": {tail}" if tail else "")


def _launcher_output(st: JobSlot) -> dict:
    """The launcher's output tails and command line, for the record of a job that did not
    start (as a finished job's first record holds them)."""
    if st.launch is None:
        return {}
    out, err = st.launch.text()
    return {"stdout": out[-TAIL_BYTES:], "stderr": err[-TAIL_BYTES:], "argv": st.launch.argv}


def _told(st: JobSlot) -> str | None:
    """Why the job cannot start: its launcher exited (the first slot), or the first slot
    said so (the others)."""
    if st.abort is not None:
        return st.abort.abort_reason()
    return _launcher_gone(st)


def _connect(st: JobSlot, peers: dict[int, dict]) -> None:
    st.connect_mono = time.monotonic_ns()
    # mpi.startup_timeout: thousands of ranks over ssh take minutes
    bound = st.ctx.spec.startup_timeout or timing("mpi.startup_timeout")
    said_s = timing("mpi.launcher_exit")   # a rank gone: how long its launcher may take to exit
    # the job's other slots wait a little longer: its first slot, which holds the launcher's
    # account of why, ends the start-up at the bound and tells them
    deadline = time.monotonic() + bound + (0 if st.jrank == 0 else said_s)
    try:
        if st.jrank == 0:
            _start(st, peers)
        st.link.wait_ready(st.place, deadline, lambda: _told(st), lambda: st.pid)
        try:   # the rank's group: its launcher's local daemon's, or its own
            _kill_on_term(os.getpgid(st.link.st.pid))
        except OSError:
            pass
    except (KernelError, RankGone, TimeoutError) as e:
        if isinstance(e, TimeoutError):
            given = "" if st.ctx.spec.startup_timeout else ", its default"
            msg = (f"rank {st.jrank} of job {st.job} was not ready within {bound:g}s of the "
                   f"launch (launcher start-up, wire-up and MPI_Init: the task's "
                   f"startup_timeout{given})" + _launcher_said(st, 0))
        elif isinstance(e, RankGone):
            msg = f"rank {st.jrank} of job {st.job} {e}" + _launcher_said(st, said_s)
        else:
            msg = str(e)
        if st.jrank == 0:   # the job's other slots stop waiting
            why = f"job {st.job} did not start: see the record of its rank 0 ({msg[:200]})"
            tell_abort(st.keys, range(1, st.ranks), why)
            tell_abort_remote(st.keys, [p for r in range(1, st.ranks)
                               if (p := peers.get(st.job * st.ranks + r)) is not None
                               and p.get("node") != st.ctx.node], why)
        raise KernelError(msg, _launcher_output(st)) from None


def statically_linked(path: str) -> bool:
    """An ELF executable without an interpreter (PT_INTERP): LD_PRELOAD cannot reach it."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if head[:4] != b"\x7fELF" or head[4] != 2:    # not a 64-bit ELF: a script
                return False
            order = "little" if head[5] == 1 else "big"
            phoff = int.from_bytes(head[32:40], order)
            phentsize = int.from_bytes(head[54:56], order)
            phnum = int.from_bytes(head[56:58], order)
            f.seek(phoff)
            table = f.read(phentsize * phnum)
    except OSError:
        return False
    types = [int.from_bytes(table[i:i + 4], order) for i in range(0, len(table), phentsize)]
    return 3 not in types


def _run(st: JobSlot, t0_ns: int, spin_ns: int) -> Result:
    armed_ns = time.time_ns()
    spec = st.ctx.spec
    deadline = None if spec.timeout is None else job_deadline(t0_ns, spec.timeout)
    how = st.link.wait_end(deadline) if st.link.go(t0_ns, spin_ns) else "exited"
    gone_ns = time.time_ns()
    # The job's slots share one deadline (T0 + timeout): the first to reach it kills its
    # rank, and the launcher then stops the others, whose slots see them gone a moment after
    # the deadline, before their own wait ran out. Whatever ends after the deadline was
    # ended by the timeout.
    if how in ("exited", "unfinalized") and _past(deadline):
        how = "stopped"
    if st.launch is not None:
        _wait_launcher(st.launch, deadline)
        if st.launch.poll() != 0 and _past(deadline):
            st.launch.timed_out = True
    return job_result(st, t0_ns, armed_ns, how, gone_ns)


def _wait_launcher(launch: Launch, deadline: float | None) -> None:
    """Wait for the job's launcher until the deadline (then kill it). Still running
    mpi.leftover after this slot's rank ended, and no rank left in its tree here: what a rank
    left holding its output (job_leftovers.py) is killed and named on the record, so the job
    ends when its ranks did rather than at the timeout. Looked for less often as it goes on
    (ranks on other nodes may still run)."""
    step = timing("mpi.leftover")
    while True:
        until = time.monotonic() + step
        if deadline is not None:
            until = min(until, deadline)
        try:
            launch.proc.wait(max(0.0, until - time.monotonic()))
            return
        except subprocess.TimeoutExpired:
            pass
        if _past(deadline):
            launch.timed_out = True
            launch.kill()
            launch.proc.wait()
            return
        found = job_leftovers.holders(launch.proc.pid, LIBRARY)
        if found:
            launch.leftovers += [job_leftovers.describe(p) for p in found]
            job_leftovers.kill(found)
            step = timing("mpi.leftover_poll")    # looked for again soon after a kill
        else:
            step = min(step * 2, timing("mpi.leftover_max"))


PAIR_NS = 50_000     # two clock reads this close are one instant, for a deadline


def monotonic_at(wall_ns: int) -> float:
    """The CLOCK_MONOTONIC instant (s) of a wall-clock instant, from a close pair of reads.
    A job's slots must agree on their deadline, T0 + timeout: read one clock, then the
    other, and a preemption between them (tens of ms under load) moved one slot's deadline
    that far from the others'; its rank, stopped by the launcher after another slot's
    timeout, then ended "before" its own deadline and was told as an error."""
    for _ in range(8):
        before = time.monotonic_ns()
        wall = time.time_ns()
        after = time.monotonic_ns()
        if after - before <= PAIR_NS:
            break
    return ((before + after) // 2 + wall_ns - wall) / 1e9


def job_deadline(t0_ns: int, timeout_s: float) -> float:
    """The job's one deadline, T0 + timeout, on this slot's monotonic clock: the same for
    every slot of the job whenever it is read. (It was the later of T0 and the moment the
    slot read it: a slot armed after T0 under load had a later deadline than the others,
    and its rank, stopped by the launcher at theirs, read as an error.)"""
    return monotonic_at(t0_ns) + timeout_s


def _past(deadline: float | None) -> bool:
    return deadline is not None and time.monotonic() >= deadline


def _cleanup(st: JobSlot) -> None:
    if st.link.alive():      # nothing of the phase outlives it: the rank too
        st.link.kill()
    st.link.close()
    if st.abort is not None:
        st.abort.close()
    if st.launch is not None:
        if st.launch.poll() is None:
            st.launch.kill()
            st.launch.proc.wait()
        st.launch.out.close()
        st.launch.err.close()


MPI_JOB = Kernel(
    name="mpi",
    doc="A parallel task: a command task with `ranks = N` runs its workers as workers / N "
        "jobs of N ranks, started by an MPI launcher (`launcher`), every rank starting at "
        "T0 with the launcher's start-up and MPI_Init behind it; one record per rank.",
    params={"ranks": Param("int", "ranks per job", minimum=1)},
    prepare=_prepare, run=_run, cleanup=_cleanup, publish=_publish, connect=_connect,
    uses_dir=True, runs_child=True, from_command=True, takes_wrap=True, job_wrap=True,
    figures=FIGURES, facts=FACTS, finish_phase=finish_jobs, output_scope=JOB,
)

KERNELS = [MPI_JOB]
