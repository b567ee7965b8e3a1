"""A phase's work inside a variant's `wrap` (ch-run, apptainer, podman ...): what the slot runs
instead of the kernel when its context has a launcher prefix.

Built-in kernels run as the standalone executable `mbkernel` (native/mbkernel.c, the same C
loops, waits and stamps): before T0 the slot copies it into its scratch directory (which the
wrap binds, so the container sees it), starts `wrap + [mbkernel, run, KERNEL, key=value...]`
in a process group of its own and waits for its `started` (the time from launch to it is
the wrap's start-up, `wrap_startup_s`, outside the timed window), then for its `ready` (the
kernel's own prepare: files opened, data laid out, as in a plain slot). At the go it sends
`go T0 SPIN SETTLE`; mbkernel waits for T0 as slots do and answers one `result` line,
which the kernel's own `standalone.finish` turns into the Result a plain run makes. The time
from that line to the launcher's exit is `wrap_exit_s`. A command task runs as `wrap + argv`
(kernels/command.py): its window holds the launcher's start-up.

The slot runs `wrapped(kernel)`: the phase's kernel with its traits, prepared and run as
here. Every wrap runs a child (the launcher, or the command), so the slot treats it as it
treats a command: what it leaves is killed after the phase, and its process group is the
one the agent kills should the slot die.
"""
from __future__ import annotations

import dataclasses
import os
import select
import shutil
import signal
import struct
import subprocess
import tempfile
import time
from dataclasses import dataclass, field, replace
from importlib import resources
from typing import IO, Any

from ..config import timing
from ..status import Status

from ..node.wire_types import Result, SlotContext
from .base import Kernel, KernelError
from .binding import MIN_CPU_NS, allowed_count, cpu_figures
from .figures import WRAP_EXIT, WRAP_STARTUP
from .hist import HIST_BUCKETS
from .native import native
from .scratchfs import install_copy, root_of

TAIL_BYTES = 2048         # of the launcher's stderr, in errors
MBKERNEL = "mbkernel"


def executable() -> str:
    """The installed mbkernel (package data beside this module)."""
    path = resources.files(__package__) / MBKERNEL
    if not path.is_file():
        raise KernelError("the standalone kernel executable mbkernel is not built: run `pip "
                          "install .` (or `python setup.py build_ext --inplace`) in the source "
                          "tree")
    return str(path)


def install(ctx: SlotContext) -> str:
    """mbkernel copied into the slot's scratch (the path the wrap binds); kept when current.
    Written by descriptor from the run's scratch root: never through a planted link."""
    return install_copy(root_of(ctx), ctx.scratch, executable(), MBKERNEL, "wrap")


class Lines:
    """Lines from a pipe, each with a deadline (None: wait as long as it takes)."""

    def __init__(self, fd: int) -> None:
        self.fd, self.buf, self.eof = fd, b"", False

    def readline(self, timeout: float | None) -> str | None:
        """The next line without its newline; "" at EOF; None when the timeout passed."""
        end = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self.buf and not self.eof:
            left = None if end is None else max(0.0, end - time.monotonic())
            if not select.select([self.fd], [], [], left)[0]:
                return None
            chunk = os.read(self.fd, 65536)
            self.buf += chunk
            self.eof = not chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return line.decode(errors="replace")


@dataclass
class State:
    kernel: Kernel
    args: dict
    argv: list[str]
    proc: subprocess.Popen
    lines: Lines
    err: IO[bytes]
    timeout: float | None
    startup_s: float = 0.0
    settle_ns: int = 0
    inner: Any = None   # a command task's own prepared state (run as wrap + argv)
    done: bool = False
    metrics: dict = field(default_factory=dict)

    @property
    def pid(self) -> int:
        """The child's process group (the command's, else the launcher's): what the agent
        kills should the slot die (node/slot.py reads `pid` of a prepared state)."""
        return self.inner.pid if self.inner is not None else self.proc.pid


def _kill(st: State) -> None:
    try:
        os.killpg(st.proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _stderr_tail(st: State) -> str:
    st.err.seek(0, os.SEEK_END)
    st.err.seek(max(0, st.err.tell() - TAIL_BYTES))
    text = st.err.read().decode(errors="replace").strip()
    return f": {text}" if text else ""


def _launch_failure(st: State, line: str | None) -> KernelError:
    """Why the wrap never got ready, in one message (mbkernel's own error, or the launcher's
    exit status and stderr)."""
    _kill(st)
    code = st.proc.wait()
    if line and line.startswith("error "):
        _, err, text = (line.split(" ", 2) + [""])[:3]
        from .native import user_message   # noqa: PLC0415
        return KernelError(user_message(f"{st.kernel.name} inside the wrap", int(err), text))
    what = (f"did not start within {timing('kernels.container_start'):g}s" if line is None
            else f"exited with status {code} before the kernel was ready")
    return KernelError(f"wrap {' '.join(st.argv[:3])} ...: {what}{_stderr_tail(st)}")


def _first_line(lines: Lines, deadline: float) -> str | None:
    """mbkernel's first line; a launcher's own chatter on stdout before it is skipped."""
    while True:
        line = lines.readline(max(0.0, deadline - time.monotonic()))
        if line is None or line in ("", "started", "ready") or line.startswith("error "):
            return line


def _prepare(ctx: SlotContext, params: dict) -> State:
    from . import KERNELS   # noqa: PLC0415 (the registry imports every kernel module)
    kernel = KERNELS[ctx.kernel]
    if kernel.runs_child:   # a command: the wrap is its argv's prefix (kernels/command.py)
        inner = kernel.prepare(ctx, params)
        return State(kernel, {}, [], None, None, None, None, inner=inner)  # type: ignore[arg-type]
    if kernel.standalone is None:
        raise KernelError(f"kernel {kernel.name} cannot run inside a wrap")
    args = kernel.standalone.args(ctx, params)
    argv = list(ctx.wrap or []) + [install(ctx), "run", kernel.name] + [
        f"{k}={v}" for k, v in args.items()]
    if "/" not in argv[0] and shutil.which(argv[0]) is None:
        raise KernelError(f"wrap: launcher not found: {argv[0]}")
    err = tempfile.TemporaryFile()
    t = time.monotonic()
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                cwd=ctx.scratch, env={**os.environ, **ctx.env},
                                start_new_session=True)   # its own group: a timeout kills all
    except OSError as e:
        err.close()
        raise KernelError(f"wrap: cannot start {argv[0]}: {e.strerror}") from None
    # the slot's SIGTERM handler (its agent stopping a stuck prepare, or dying) takes the
    # launcher's whole group, whatever it is doing
    native().track_child(proc.pid)
    timeout = ctx.spec.timeout if ctx.spec is not None else None
    st = State(kernel, args, argv, proc, Lines(proc.stdout.fileno()), err, timeout,
               settle_ns=ctx.settle_ns)
    line = _first_line(st.lines, t + timing("kernels.container_start"))  # else a hang
    st.startup_s = time.monotonic() - t
    if line == "started":   # the kernel's prepare has no time limit, as a plain slot's
        line = st.lines.readline(None)
    if line != "ready":
        failure = _launch_failure(st, line)
        _close(st)
        raise failure
    return st


def _number(v: str) -> int | float | str:
    for kind in (int, float):
        try:
            return kind(v)
        except ValueError:
            pass
    return v


def fields(line: str) -> dict:
    """mbkernel's `result k=v ... msg=TEXT` as the C call's dict (ints where they are)."""
    head, _, msg = line.partition(" msg=")
    d: dict[str, Any] = {"error": msg}
    for item in head.split()[1:]:
        k, _, v = item.partition("=")
        d[k] = _number(v)
    times = [d.pop(f"times{j}") for j in range(4) if f"times{j}" in d]
    if times:
        d["times_ns"] = tuple(tuple(int(x) for x in str(t).split(",") if x) for t in times)
    sparse = d.pop("hist", None)
    if sparse is not None:
        counts = [0] * HIST_BUCKETS
        for pair in str(sparse).split(","):
            if pair:
                b, _, c = pair.partition(":")
                counts[int(b)] = int(c)
        d["hist"] = struct.pack(f"<{HIST_BUCKETS}Q", *counts)
    return d


def _run(st: State, t0_ns: int, spin_ns: int) -> Result:
    if st.inner is not None:
        return st.kernel.run(st.inner, t0_ns, spin_ns)
    try:
        st.proc.stdin.write(f"go {t0_ns} {spin_ns} {st.settle_ns}\n".encode())
        st.proc.stdin.flush()
    except OSError as e:   # it died after ready
        code = st.proc.wait()
        return Result(start_ns=t0_ns, end_ns=time.time_ns(), status=Status.ERROR,
                      error=f"wrapped {st.kernel.name} gone before the go ({e.strerror}, "
                            f"status {code}){_stderr_tail(st)}")
    wait = None
    if st.timeout is not None:
        wait = max(0.0, st.timeout + (t0_ns - time.time_ns()) / 1e9)
    line = st.lines.readline(wait)
    t = time.monotonic()
    if line is None:
        _kill(st)
        st.proc.wait()
        return Result(start_ns=t0_ns, end_ns=time.time_ns(), status=Status.TIMEOUT,
                      error=f"killed after timeout {st.timeout:g}s")
    if not line.startswith("result "):
        _kill(st)
        code = st.proc.wait()
        return Result(start_ns=t0_ns, end_ns=time.time_ns(), status=Status.ERROR,
                      error=f"wrapped {st.kernel.name} ended without a result (status "
                            f"{code}){_stderr_tail(st)}")
    d = fields(line)
    res = st.kernel.standalone.finish(d, st.args)
    # mbkernel's own late error (closing the file)
    late = st.lines.readline(timing("kernels.container_exit"))
    try:
        code = st.proc.wait(timing("kernels.container_exit"))
    except subprocess.TimeoutExpired:
        _kill(st)
        code = st.proc.wait()
    st.done = True
    if late and late.startswith("error ") and res.status == Status.OK:
        res = replace(res, status=Status.ERROR, error=f"{st.kernel.name}: {late.split(' ', 2)[-1]}")
    elif code != 0 and res.status == Status.OK:
        res = replace(res, status=Status.ERROR,
                      error=f"wrap exited with status {code}{_stderr_tail(st)}")
    return replace(res, metrics=_metrics(st, d, res, time.monotonic() - t))


def _metrics(st: State, d: dict, res: Result, exit_s: float) -> dict:
    """The result's metrics with what the slot reads back for a plain run, as mbkernel read it
    inside the wrap, and the wrap's own costs."""
    m = dict(res.metrics)
    for k in ("cpus_allowed", "mems_allowed", "mempolicy"):
        if k in d:
            m[k] = str(d[k])
    if not st.kernel.sync_only and res.elapsed_ns >= MIN_CPU_NS:
        m.update(cpu_figures(d.get("cpu_ns", 0) / 1e9, res.elapsed_ns / 1e9,
                             allowed_count(m)))
    m[WRAP_STARTUP.name] = round(st.startup_s, 6)
    m[WRAP_EXIT.name] = round(exit_s, 6)
    return m


def _close(st: State) -> None:
    for f in (st.proc.stdin, st.proc.stdout, st.err):
        try:
            f.close()
        except OSError:
            pass


def _cleanup(st: State) -> None:
    if st.inner is not None:
        if st.kernel.cleanup is not None:
            st.kernel.cleanup(st.inner)
        return
    if not st.done and st.proc.poll() is None:
        # cancelled before the go: EOF on its stdin ends mbkernel; a launcher that does not
        # pass it on is killed
        try:
            st.proc.stdin.close()
            st.proc.wait(timing("kernels.container_exit"))
        except (OSError, subprocess.TimeoutExpired):
            _kill(st)
            st.proc.wait()
    _close(st)


WRAPPED = Kernel(
    name="wrapped",
    doc="A phase's kernel inside its variant's wrap (see the module docstring).",
    params={},
    prepare=_prepare, run=_run, cleanup=_cleanup, uses_dir=True, runs_child=True,
)


def wrapped(inner: Kernel) -> Kernel:
    """The kernel a slot runs for `inner` inside a wrap: inner's name and traits, this
    module's prepare, run and cleanup. It runs a child (runs_child); its slots publish and
    sample nothing (the work runs in mbkernel or the command, not in the slot)."""
    return dataclasses.replace(inner, prepare=_prepare, run=_run, cleanup=_cleanup,
                               uses_dir=True, runs_child=True, publish=None, connect=None,
                               progress="")
