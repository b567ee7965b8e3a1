"""External command tasks: templated argv, forked before T0, exec at T0, metrics from output.

The child is forked in prepare (so fork cost is outside the window) and blocks in C until
the slot releases it with T0; it waits for T0, stamps and execs. The end stamp is taken when
the child is reaped. A timeout kills the child's whole process group.
"""
from __future__ import annotations

import os
import re
import select
import shutil
import signal
import tempfile
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

from ..extra_keys import ARGV, MISSING_METRICS, STDERR, STDOUT
from .. import this_program
from ..status import Status
from ..node.wire_types import Result, SlotContext
from ..templates import render
from ..units import parse_unit, printed_unit
from .base import Kernel, KernelError
from .binding import allowed_count, cpu_figures, proc_binding, rusage_cpu
from .figures import COUNT, UNIT_SUFFIX, Figure
from .native import native
from .scratchfs import make_dir, root_of

if TYPE_CHECKING:
    from ..model import TaskSpec

TAIL_BYTES = 4096              # stdout/stderr kept with the record
SCAN_BYTES = 4 * 2**20         # metric regexes read at most this much of each stream's end
# Names every command template may use besides the task's own parameters: SlotContext fields,
# then the running manybench's program (this_program.py: a plan's calls reach the same one)
SLOT_NAMES = ("node", "slot", "rank", "scratch", "run", "workers", "rep", "phase", "variant",
              "task")
BUILTIN_NAMES = SLOT_NAMES + ("manybench",)

# a command's figure of its own; what it extracts from its output is named by the plan
EXIT_STATUS = Figure("exit_status", "", "exit statuses", "", role=COUNT,
                     note="exit statuses: status x records, failed records too")


@dataclass
class Prepared:
    lib: ModuleType
    spec: TaskSpec
    pid: int
    ctl_fd: int
    stamp_fd: int
    out: object     # temporary files holding the child's stdout and stderr
    err: object
    argv: list[str]
    reaped: bool = False


def builtin_values(ctx: SlotContext) -> dict:
    """What BUILTIN_NAMES stand for in this slot."""
    return {**{name: getattr(ctx, name) for name in SLOT_NAMES}, "manybench": this_program.path()}


def template_values(ctx: SlotContext, params: dict) -> dict:
    """The task's params, the slot's builtins, then the slot's resources and the variant's
    vars ({gpu}, {image} ...)."""
    return {**params, **builtin_values(ctx), **ctx.vars}


def build_argv(spec: TaskSpec, values: dict) -> list[str]:
    argv = [render(a, values) for a in spec.command or []]
    return ["/bin/sh", "-c", " ".join(argv)] if spec.shell else argv


def _prepare(ctx: SlotContext, params: dict) -> Prepared:
    lib = native()
    spec: TaskSpec = ctx.spec
    make_dir(root_of(ctx), ctx.scratch, "command")   # made fresh by the agent, or here
    # under a variant's wrap the launcher execs at T0 with the command: its start-up is in
    # the window (kernels/wrapped.py runs built-in kernels with theirs outside it)
    argv = list(ctx.wrap or []) + build_argv(spec, template_values(ctx, params))
    path = shutil.which(argv[0]) if "/" not in argv[0] else argv[0]
    if not path or not os.path.isfile(path) or not os.access(path, os.X_OK):
        raise KernelError(f"command not found or not executable: {argv[0]}")
    env = {**os.environ, **spec.env, **ctx.env}
    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    envp = [f"{k}={v}".encode() for k, v in env.items()]
    pid, ctl, stamp = lib.spawn(path.encode(), [a.encode() for a in argv], envp,
                                    ctx.scratch.encode(), out.fileno(), err.fileno())
    return Prepared(lib, spec, pid, ctl, stamp, out, err, argv)


@dataclass
class Exit:
    """How the child ended: wait status, timed out, its binding read back from /proc before
    it was reaped, and its cpu seconds (with its waited-for children's)."""
    status: int
    timed_out: bool
    binding: dict
    cpu_s: float


def _wait(pid: int, timeout: float | None) -> Exit:
    """Wait for the child; on timeout its group is killed."""
    fd = os.pidfd_open(pid)
    try:
        ready, _, _ = select.select([fd], [], [], timeout)
        timed_out = not ready
        if timed_out:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        # still a zombie: /proc keeps what it last ran with (a command may rebind itself)
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
        binding = proc_binding(pid)
        _, status, ru = os.wait4(pid, 0)
        return Exit(status, timed_out, binding, rusage_cpu(ru))
    finally:
        os.close(fd)


def _read_tail(f, limit: int) -> str:
    f.seek(0, os.SEEK_END)
    size = f.tell()
    f.seek(max(0, size - limit))
    return f.read().decode(errors="replace")


def extract_metrics(patterns: dict[str, str], texts: list[str]) -> tuple[dict, list[str]]:
    """Named figures from output: each regex's `value` group, first from stdout then stderr.
    With a `unit` group the value is converted to its unit's base (MB/s and GB/s both to
    B/s, ms to s: units.parse_unit) and `<name>.unit` says which; without one, the value is
    kept as printed and `<name>.unit` notes any unit printed right after it, so a mix of
    units is seen (run/quality.py `units` warns of it)."""
    found, missing = {}, []
    for name, pattern in patterns.items():
        rx = re.compile(pattern, re.MULTILINE)
        for text in texts:
            m = None
            for m in rx.finditer(text):
                pass          # the last match: tools print their summary at the end
            if m is not None:
                found.update(_value(name, m, text))
                break
        else:
            missing.append(name)
    return found, missing


def _value(name: str, m: re.Match, text: str) -> dict:
    raw = m.group("value")
    try:
        value: float | str = float(raw)
    except ValueError:
        return {name: raw}
    if "unit" not in m.re.groupindex:
        printed = printed_unit(text[m.end("value"):])
        return {name: value, **({f"{name}{UNIT_SUFFIX}": printed} if printed else {})}
    unit = (m.group("unit") or "").strip()
    known = parse_unit(unit) if unit else None
    if known is None:      # missing or unknown: kept as printed, the unit as captured
        return {name: value, f"{name}{UNIT_SUFFIX}": unit}
    base, factor = known
    return {name: value * factor, f"{name}{UNIT_SUFFIX}": base}


def _run(p: Prepared, t0_ns: int, spin_ns: int) -> Result:
    lib = p.lib
    # armed: when the go reached this slot (the scheduler's dispatch sample: its margin
    # before T0); the child itself waits for T0
    armed_ns = lib.now_ns()
    lib.release(p.ctl_fd, t0_ns, spin_ns)
    start_ns, start_mono, err = lib.read_stamp(p.stamp_fd)
    _close_fds(p)
    timeout = None
    if p.spec.timeout is not None:
        timeout = max(0.0, p.spec.timeout - (lib.now_ns() - t0_ns) / 1e9)
    ended = _wait(p.pid, timeout)
    status, timed_out = ended.status, ended.timed_out
    _reaped(p)
    end_ns, end_mono = lib.now_ns(), lib.mono_ns()
    elapsed = end_mono - start_mono if start_mono else 0
    # one quantity, as the C kernels' (timing.c nb_end): end = start + the monotonic elapsed
    timing = dict(start_ns=start_ns or t0_ns, armed_ns=armed_ns, elapsed_ns=elapsed,
                  end_ns=start_ns + elapsed if start_mono else end_ns)
    if err:
        return Result(**timing, status=Status.ERROR, error=f"exec {p.argv[0]}: {os.strerror(err)}")
    stdout, stderr = _read_tail(p.out, SCAN_BYTES), _read_tail(p.err, SCAN_BYTES)
    extra = {STDOUT: stdout[-TAIL_BYTES:], STDERR: stderr[-TAIL_BYTES:], ARGV: p.argv}
    code = os.waitstatus_to_exitcode(status)
    metrics = {EXIT_STATUS.name: code, **ended.binding,
               **cpu_figures(ended.cpu_s, elapsed / 1e9, allowed_count(ended.binding)),
               **extract_metrics(p.spec.metrics, [stdout, stderr])[0]}
    if p.spec.parse and code == 0 and not timed_out:
        from ..parsers import PARSERS, ParseError
        try:
            metrics.update(PARSERS[p.spec.parse](stdout, stderr))
        except ParseError as e:
            return Result(**timing, status=Status.ERROR, metrics=metrics, extra=extra,
                          error=f"{p.spec.parse} output not understood: {e}")
    missing = [n for n in p.spec.metrics if n not in metrics]
    if missing:
        extra[MISSING_METRICS] = missing
    if timed_out:
        verdict, error = Status.TIMEOUT, f"killed after timeout {p.spec.timeout:g}s"
    elif code != 0:
        verdict = Status.ERROR
        error = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
    else:
        verdict, error = Status.OK, ""
    return Result(**timing, ops=int(verdict == Status.OK), status=verdict, error=error,
                  metrics=metrics, extra=extra)


def _reaped(p: Prepared) -> None:
    # its group stays listed for the slot's SIGTERM handler until the slot has killed the
    # command's orphans (slot.py: forget_children after kill_descendants)
    p.reaped = True


def _close_fds(p: Prepared) -> None:
    for fd in (p.ctl_fd, p.stamp_fd):
        if fd >= 0:
            os.close(fd)
    p.ctl_fd = p.stamp_fd = -1


def _cleanup(p: Prepared) -> None:
    # a cancelled phase: closing ctl makes the child, blocked on it, exit at once; reap it
    _close_fds(p)
    if not p.reaped:
        try:
            os.waitpid(p.pid, 0)
        except ChildProcessError:
            pass
        _reaped(p)
    p.out.close()
    p.err.close()


COMMAND = Kernel(
    name="command",
    doc="An external command: argv templated with the task's parameters and {node}, {slot}, "
        "{rank}, {scratch}, {run}, {workers}, {rep}, {phase}, {variant}, {task}; forked before "
        "T0, exec at T0; exit status, elapsed and output tails stored; metrics.NAME regexes "
        "with a (?P<value>...) group extract figures; `timeout` kills the process group.",
    params={},
    prepare=_prepare, run=_run, cleanup=_cleanup,
    uses_dir=True, runs_child=True, from_command=True, figures=(EXIT_STATUS,),
)

KERNELS = [COMMAND]
