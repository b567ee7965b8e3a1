"""[[variant]]: the setups a comparison sets side by side, checked, and the plan each sees.

A variant applies to the tasks it names (`tasks`, default every task); a task no variant
applies to runs once, with no variant (a writer before read-cache variants, say). What a
variant may change:
  set        any task.*, placement.* or scratch field, as --set
  env        environment of its phases
  bind       cpu + memory binding of its slots (plan/binding.py)
  wrap       launcher prefix its tasks run under (ch-run, apptainer, podman ...), templated
  vars       template values for wrap, setup, teardown and command arguments ({image} ...)
  setup, teardown   commands run on every node before its phases and after them
  dir        the directory its tasks work under (mount point, file system and options are
             captured in the run's provenance)
"""
from __future__ import annotations

import copy
import re
from typing import Any, Callable

from ..kernels import KERNELS
from ..kernels.command import BUILTIN_NAMES
from ..model import Plan, Variant
from ..templates import fields as template_fields
from .binding import check_bind
from .overrides import Loc, assign, entry_names, field_name, flatten, resolve_key
from .schema import did_you_mean, known_names
from .tasks import TASK_FIELDS, check_dir, env_of

# What a variant may `set`: per-phase things. Run-wide fields (slots, repeat, ...) would make
# the variants' phases incomparable or cannot differ within one run.
VARIANT_SETTABLE = ("task", "placement", "scratch")
# names wrap, setup and teardown templates may use besides the variant's vars
WRAP_NAMES = BUILTIN_NAMES + ("mbkernel", "cpus")
NODE_NAMES = ("node", "run", "variant")

Builder = Callable[..., tuple[Plan | None, list]]


def applies(variant: Variant, task: str) -> bool:
    return variant.tasks is None or task in variant.tasks


def build_variants(raw: dict, path: str, slots: int | None, check_dirs: bool, probs: list,
                   build: Builder, resource_names: tuple[str, ...] = ()) -> list[Variant]:
    """Each variant checked; its `set` applied to a copy of the plan and validated as a
    whole: only the problems the variant adds are reported, on the key that caused them."""
    items = raw.get("variant") if isinstance(raw.get("variant"), list) else []
    base_probs = set(probs)
    names = entry_names(raw, "variant")
    tasks = [t for t in raw.get("task", []) if isinstance(t, dict)] \
        if isinstance(raw.get("task"), list) else []
    task_names = [str(t.get("name")) for t in tasks]
    out: list[Variant] = []
    for i, v in enumerate(items):
        if not isinstance(v, dict):
            continue
        loc = ("variant", i)
        if i not in names and isinstance(v.get("name"), str) and v["name"].isprintable() \
                and v["name"]:
            probs.append((loc + ("name",), f"duplicate variant name {v['name']!r}"))
        var = _variant(loc, v, task_names, check_dirs, probs)
        out.append(var)
        _check_templates(loc, v, var, tasks, resource_names, probs)
        vraw = variant_raw(raw, var)
        targets = _apply_sets(loc, var.set, vraw, probs)
        _, vprobs = build(vraw, path, slots, check_dirs, with_variants=False)
        for ploc, msg in vprobs:
            if (ploc, msg) in base_probs:
                continue
            key = next((k for t, k in targets.items() if ploc[:len(t)] == t), None)
            if key is not None:
                probs.append((loc + ("set", key), msg))
            else:
                probs.append((loc + ("set",), f"with this variant, {field_name(vraw, ploc)}: {msg}"))
    return out


def _variant(loc: Loc, v: dict, task_names: list[str], check_dirs: bool, probs: list) -> Variant:
    scope = v.get("tasks") if isinstance(v.get("tasks"), list) else None
    for j, name in enumerate(scope or []):
        if name not in task_names:
            probs.append((loc + ("tasks", j), f"unknown task {name!r} "
                                              f"{known_names(task_names, str(name))}"))
    if "bind" in v:
        check_bind(loc + ("bind",), v["bind"], probs)
    vdir = check_dir(loc + ("dir",), v.get("dir"), check_dirs, probs)
    argvs = {k: [list(c) for c in v.get(k, []) if isinstance(c, list)]
             for k in ("setup", "teardown")}
    return Variant(name=str(v.get("name", "")),
                   set=flatten(v["set"]) if isinstance(v.get("set"), dict) else {},
                   env=env_of(v.get("env")), tasks=scope, bind=v.get("bind"),
                   wrap=list(v["wrap"]) if isinstance(v.get("wrap"), list) else None,
                   vars=env_of(v.get("vars")), setup=argvs["setup"], teardown=argvs["teardown"],
                   dir=vdir)


def _check_templates(loc: Loc, v: dict, var: Variant, tasks: list[dict],
                     resource_names: tuple[str, ...], probs: list) -> None:
    """wrap/setup/teardown name only known values; a wrapped built-in kernel must be able to
    run as the standalone kernel executable."""
    known = set(var.vars)
    params = _common_params([t for t in tasks if applies(var, str(t.get("name")))])
    for key, allowed in (("wrap", set(WRAP_NAMES) | set(resource_names) | params),
                         ("setup", set(NODE_NAMES)), ("teardown", set(NODE_NAMES))):
        argvs = [var.wrap or []] if key == "wrap" else getattr(var, key)
        for argv in argvs:
            for arg in argv:
                try:
                    for n in template_fields(arg):
                        if n not in known and n not in allowed:
                            probs.append((loc + (key,), f"template names unknown value {n!r} "
                                          f"(give it in the variant's vars, or use one of "
                                          f"{', '.join(sorted(allowed))})"
                                          f"{did_you_mean([*known, *allowed], n)}"))
                except ValueError as e:
                    probs.append((loc + (key,), str(e)))
    if var.wrap is None:
        return
    for t in tasks:
        k = KERNELS.get(t.get("kernel")) if isinstance(t.get("kernel"), str) else None
        if k is None or not applies(var, str(t.get("name"))):
            continue
        if getattr(k, "standalone", None) is None:
            probs.append((loc + ("wrap",), f"task {t.get('name')!r}: kernel {k.name} cannot run "
                                           "inside a wrap (kernels that can: " + ", ".join(
                                               sorted(n for n, x in KERNELS.items()
                                                      if getattr(x, "standalone", None))) + ")"))


def _common_params(tasks: list[dict]) -> set[str]:
    """The parameters every one of these tasks has (a wrap is rendered with its task's):
    what is not a task field, and a parallel task's `ranks`."""
    out: set[str] | None = None
    for t in tasks:
        names = {k for k in t if k not in TASK_FIELDS or (k == "ranks" and "kernel" not in t)}
        out = names if out is None else out & names
    return out or set()


def variant_raw(raw: dict, var: Variant) -> dict:
    """The raw plan with the variant's `dir` given to the tasks it applies to (its `set` is
    applied by the caller)."""
    # the variants stay (their vars are names commands may use); with_variants=False builds
    # leave them out of the Plan
    vraw = copy.deepcopy(raw)
    if var.dir:
        for t in vraw.get("task", []):
            if isinstance(t, dict) and applies(var, str(t.get("name"))):
                t["dir"] = var.dir
    return vraw


def _apply_sets(loc: Loc, sets: dict[str, Any], vraw: dict, probs: list) -> dict[Loc, str]:
    targets: dict[Loc, str] = {}
    for key, value in sets.items():
        head = re.sub(r"\[\d+\]$", "", key.split(".")[0])
        try:
            if head not in VARIANT_SETTABLE:
                raise ValueError(f"a variant cannot set {head!r} "
                                 "(only task.*, placement.* and scratch)")
            target = resolve_key(vraw, key)
            if target[0] == "task" and target[2:] == ("name",):
                raise ValueError("a variant cannot rename a task")
            assign(vraw, target, value)
            targets[target] = key
        except ValueError as e:
            probs.append((loc + ("set", key), str(e)))
    return targets
