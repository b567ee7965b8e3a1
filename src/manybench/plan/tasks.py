"""One [[task]]: its checks (kernel parameters, command templates, metrics, dir, timeout) and
its TaskSpec; also the sweep points of its parameters, which expand.py expands the same way.
"""
from __future__ import annotations

import itertools
import os
import re
from typing import Any

from ..kernels import KERNELS, REQUIRED, Kernel
from ..kernels.command import BUILTIN_NAMES
from ..model import TaskSpec
from ..templates import fields as template_fields
from ..units import parse_duration
from .overrides import Loc
from .observe import observe_fields
from .schema import did_you_mean, known_names


TASK_FIELDS = ("name", "kernel", "command", "shell", "workers", "order", "dir", "timeout", "env",
               "metrics", "nodes", "parse", "warmup", "sample", "ranks", "launcher",
               "launcher_args", "startup_timeout")
PARALLEL_KERNEL = "mpi"   # kernels/mpi_job.py: what a command task with `ranks` runs as
# fields of a parallel task: `ranks` is a sweep axis (in the points' params), the others not
MPI_FIELDS = ("launcher", "launcher_args", "startup_timeout")


def as_workers(value: Any) -> list[int] | None:
    """Worker counts when the value is well formed (the schema reports it otherwise)."""
    vals = value if isinstance(value, list) else [value]
    ok = vals and all(isinstance(w, int) and not isinstance(w, bool) and w >= 1 for w in vals)
    return list(vals) if ok else None


def check_dir(loc: Loc, value: Any, check: bool, probs: list) -> str | None:
    """Expand $VARS and ~ (as in HPC job scripts) and, when asked, check it is writable."""
    if not isinstance(value, str) or not value:
        return None
    path = os.path.expanduser(os.path.expandvars(value))
    if check:
        unset = re.findall(r"\$\{?(\w+)", path)
        if unset:
            probs.append((loc, f"environment variable {unset[0]} is not set ({value!r})"))
        elif not os.path.exists(path):
            probs.append((loc, f"directory does not exist: {path}"))
        elif not os.path.isdir(path):
            probs.append((loc, f"not a directory: {path}"))
        elif not os.access(path, os.W_OK | os.X_OK):
            probs.append((loc, f"directory is not writable: {path}"))
    return path


def sweep_points(params: dict[str, Any]) -> list[dict[str, Any]]:
    """Cartesian product of the list values, first declared outermost; scalars ride along."""
    axes = [v if isinstance(v, list) else [v] for v in params.values()]
    return [dict(zip(params, combo)) for combo in itertools.product(*axes)]


def kernel_params(kernel: Kernel, values: dict[str, Any]) -> dict[str, Any]:
    """One point's values parsed (bytes, seconds) with defaults filled; unset optionals left out.

    Keys follow the kernel's declaration order, so every variant's phases list them alike.
    """
    out: dict[str, Any] = {}
    for name, p in kernel.params.items():
        if name in values:
            out[name] = p.parse(values[name])
        elif name != "dir" and p.default is not None and p.default is not REQUIRED:
            out[name] = p.parse(p.default)
    return out



def slot_check(loc: Loc, workers: list[int] | None, slots: int | None, probs: list) -> None:
    over = [w for w in workers or () if slots is not None and w > slots]
    if over:
        probs.append((loc, f"{', '.join(map(str, over))} workers but only {slots} slots"))


def env_of(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def _positive_duration(loc: Loc, t: dict, name: str, probs: list) -> float | None:
    """A task's duration field in seconds (None when absent or malformed: the schema's
    duration format reports that)."""
    if name not in t or isinstance(t[name], bool):
        return None
    try:
        value = parse_duration(t[name])
    except ValueError:
        return None
    if value <= 0:
        probs.append((loc + (name,), "must be greater than zero"))
    return value


def build_task(i: int, t: Any, ctx: dict, probs: list) -> TaskSpec | None:
    if not isinstance(t, dict):
        return None
    loc = ("task", i)
    kname, command = t.get("kernel"), t.get("command")
    if "kernel" in t and "command" in t:
        probs.append((loc + ("kernel",), "give either kernel or command, not both"))
    elif "kernel" not in t and "command" not in t:
        probs.append((loc, 'needs kernel = "..." (a built-in) or command = [...]'))
    workers = as_workers(t["workers"]) if "workers" in t else None
    slot_check(loc + ("workers",), workers, ctx["slots"], probs)
    tdir = check_dir(loc + ("dir",), t.get("dir"), ctx["check_dirs"], probs)
    timeout = _positive_duration(loc, t, "timeout", probs)
    params = {k: v for k, v in t.items() if k not in TASK_FIELDS}
    if "ranks" in t and "kernel" not in t and t["ranks"] != []:   # [] : the schema says
        params["ranks"] = t["ranks"]     # a sweep axis like a parameter; {ranks} in templates
    spec = TaskSpec(name=str(t.get("name", f"task{i}")), kernel="command", params=params,
                    timeout=timeout, env=env_of(t.get("env")), dir=tdir, workers=workers,
                    nodes=t.get("nodes"), parse=t.get("parse"),
                    order=None if t.get("order") is None else
                    list(t["order"]) if isinstance(t["order"], list) else [t["order"]])
    spec.warmup, spec.sample = observe_fields(t, loc, probs)
    if "kernel" in t:
        spec.kernel = str(kname)
        _kernel_task(loc, t, params, tdir or ctx["scratch"], probs)
    elif isinstance(command, list) and all(isinstance(c, str) for c in command):
        spec.command, spec.shell = command, t.get("shell") is True
        _parallel(loc, t, spec, probs)
        metrics = t.get("metrics") if isinstance(t.get("metrics"), dict) else {}  # else: schema
        spec.metrics = {k: v for k, v in metrics.items() if isinstance(v, str)}
        _command_task(loc, command, params, spec.metrics, probs, ctx.get("extra_names", ()))
    _check_parse(loc, t, probs)
    if "kernel" in t:
        for f in ("ranks",) + MPI_FIELDS:
            if f in t:
                probs.append((loc + (f,), "only a command task runs as MPI jobs (ranks = N)"))
    return spec


def _parallel(loc: Loc, t: dict, spec: TaskSpec, probs: list) -> None:
    """A command task with `ranks` is a parallel task (kernels/mpi_job.py)."""
    if "ranks" not in t:
        for f in MPI_FIELDS:
            if f in t:
                probs.append((loc + (f,), "only for a parallel task: give ranks = N too"))
        return
    spec.kernel = PARALLEL_KERNEL
    if isinstance(t.get("launcher"), str):
        spec.launcher = t["launcher"]
    else:
        spec.launcher = "auto"
    args = t.get("launcher_args")
    if isinstance(args, list) and all(isinstance(a, str) for a in args):
        spec.launcher_args = list(args)
    spec.startup_timeout = _positive_duration(loc, t, "startup_timeout", probs)


def _check_parse(loc: Loc, t: dict, probs: list) -> None:
    """`parse` names an output parser, and only a command has output to parse."""
    name = t.get("parse")
    if name is None or not isinstance(name, str):
        return
    from ..parsers import PARSERS
    if "kernel" in t:
        probs.append((loc + ("parse",), "only command tasks have output to parse"))
    elif name not in PARSERS:
        probs.append((loc + ("parse",), f"unknown parser {name!r} (known: "
                                        f"{', '.join(sorted(PARSERS)) or 'none'})"))


def _kernel_task(loc: Loc, t: dict, params: dict, tdir: str | None, probs: list) -> None:
    kernel = KERNELS.get(t["kernel"]) if isinstance(t["kernel"], str) else None
    if kernel is not None and kernel.from_command:
        probs.append((loc + ("kernel",), f"{kernel.name!r} is not named with kernel = ...; "
                                         "give the command as command = [\"prog\", \"arg\", ...]"))
        return
    if kernel is None:
        if isinstance(t["kernel"], str):
            named = [k for k, v in KERNELS.items() if not v.from_command]
            probs.append((loc + ("kernel",), f"unknown kernel {t['kernel']!r} "
                                             f"{known_names(named, t['kernel'])}"))
        return
    for f in ("shell", "metrics"):
        if f in t:
            probs.append((loc + (f,), f"only for command tasks, not for kernel {kernel.name}"))
    n_before = len(probs)
    for name, value in params.items():
        p = kernel.params.get(name)
        if p is None:
            known = known_names([k for k in kernel.params if k != "dir"], name)
            probs.append((loc + (name,),
                          f"unknown field {name!r} for kernel {kernel.name} {known}"))
            continue
        if isinstance(value, list) and not value:
            probs.append((loc + (name,), "empty sweep"))
        for v in value if isinstance(value, list) else [value]:
            try:
                p.parse(v)
            except ValueError as e:
                probs.append((loc + (name,), str(e)))
    for name, p in kernel.params.items():
        if p.default is REQUIRED and name not in params and name != "dir":
            probs.append((loc + (name,), f"required by kernel {kernel.name}, missing"))
    if len(probs) == n_before and kernel.check:
        seen: dict[tuple[str, str], None] = {}
        for point in sweep_points(params):
            vals = kernel_params(kernel, point)
            vals["dir"] = tdir
            for fld, msg in kernel.check(vals):
                seen.setdefault((fld, msg), None)
        probs.extend((loc + (fld,), msg) for fld, msg in seen)


def _command_task(loc: Loc, command: list[str], params: dict, metrics: dict,
                  probs: list, extra: tuple[str, ...] = ()) -> None:
    """extra: names a template may also use: resources ({gpu}) and variants' vars."""
    n_before = len(probs)
    for name, value in params.items():
        if name in BUILTIN_NAMES:
            probs.append((loc + (name,), f"{name!r} is a built-in template name; "
                                         "rename this parameter"))
        if isinstance(value, list) and not value:
            probs.append((loc + (name,), "empty sweep"))
        elif any(isinstance(v, (dict, list)) for v in (value if isinstance(value, list)
                                                       else [value])):
            probs.append((loc + (name,), "a template parameter is a value or a list of values"))
    unknown: dict[str, None] = {}
    used: set[str] = set()
    for arg in command:
        try:
            for n in template_fields(arg):
                used.add(n)
                if n not in params and n not in BUILTIN_NAMES and n not in extra:
                    unknown.setdefault(n, None)
        except ValueError as e:
            probs.append((loc + ("command",), str(e)))
    # A parameter the command never names is a typo of a task field (timout, parser) far
    # more often than a wish: refuse it rather than run without the timeout or parser.
    told = {p[0][-1] for p in probs[n_before:]}
    for name in params:
        if name not in used and name not in told and name != "ranks":
            probs.append((loc + (name,), f"unknown field {name!r} "
                                         f"{known_names(TASK_FIELDS, name)} (a template "
                                         f"parameter must appear in the command as {{{name}}})"))
    for n in unknown:
        probs.append((loc + ("command",), f"template names unknown parameter {n!r} "
                                          f"(define it in the task, or use one of "
                                          f"{', '.join(BUILTIN_NAMES)})"
                                          f"{did_you_mean([*params, *BUILTIN_NAMES, *extra], n)}"))
    for name, rx in metrics.items():
        try:
            if "value" not in re.compile(rx).groupindex:
                probs.append((loc + ("metrics", name), "needs a named group (?P<value>...)"))
        except re.error as e:
            probs.append((loc + ("metrics", name), f"invalid regular expression: {e}"))
