"""Plan files: TOML -> --set overrides -> validation with field paths -> Plan.

Every problem is collected (a user fixes a plan in one go, not one error per try) and told as
one line `PATH:LINE: FIELD: message`, FIELD in the dotted syntax --set takes. Validation works
on raw locations such as ("task", 0, "block"); only the final formatting turns them into task
names and source lines, so the checks themselves never care where a value came from.

This module builds the Plan and its Variants and formats the problems; the parts live in
schema.py (structure), tasks.py (one [[task]]), overrides.py (field paths, --set) and
lines.py (source lines).
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Iterable

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

from ..model import Plan, Variant
from ..units import parse_duration
from .lines import find_line, line_index
from .overrides import Loc, assign, entry_names, field_name, parse_value, resolve_key
from .binding import check_bind, resources
from .groups import build_groups
from .limits import MAX_DEPTH, check_phase_count, name_problems, too_deep
from .reference import check_reference
from .observe import plan_observe
from .schema import ORDERS, PINS, known_names, schema_problems
from .tasks import (BUILTIN_NAMES, TASK_FIELDS, as_workers, build_task, check_dir,
                    kernel_params, slot_check, sweep_points)
from .variants import applies, build_variants, variant_raw
from .wire_values import wire_problems

__all__ = ["BUILTIN_NAMES", "ORDERS", "PINS", "TASK_FIELDS", "PlanError", "applies", "assign",
           "field_name", "kernel_params", "load_plan", "parse_plan", "parse_value",
           "resolve_key", "sweep_points", "variant_plan"]


class PlanError(Exception):
    """An invalid plan; `problems` holds one line per problem."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


def _choices(value: Any, default: Any) -> list:
    """Plan.order/pin/cpus: the value as a list (one choice, or a sweep of them)."""
    if value is None:
        return [default]
    return list(value) if isinstance(value, list) else [value]


def _vars_names(raw: dict) -> tuple[str, ...]:
    """Template names the variants' vars define (a command may use them)."""
    items = raw.get("variant") if isinstance(raw.get("variant"), list) else []
    return tuple(dict.fromkeys(k for v in items if isinstance(v, dict)
                               and isinstance(v.get("vars"), dict) for k in v["vars"]))


def _sweep(bind: Any) -> list:
    """Plan.bind: None (pin alone) unless given; a list sweeps."""
    if bind is None:
        return [None]
    return list(bind) if isinstance(bind, list) else [bind]


def _build(raw: dict, path: str, slots: int | None, check_dirs: bool,
           with_variants: bool = True) -> tuple[Plan | None, list[tuple[Loc, str]]]:
    probs = schema_problems(raw) + name_problems(raw)
    if not check_phase_count(raw, probs, with_variants):
        return None, probs     # too many to even check point by point
    if slots is None and isinstance(raw.get("slots"), int) and not isinstance(raw["slots"], bool):
        slots = raw["slots"]
    place = raw.get("placement") if isinstance(raw.get("placement"), dict) else {}
    workers = as_workers(place["workers"]) if "workers" in place else [slots or 1]
    slot_check(("placement", "workers"), workers, slots, probs)
    scratch = check_dir(("scratch",), raw.get("scratch"), check_dirs, probs)
    res = resources(("placement", "resources"), place.get("resources"), probs)
    ctx = {"slots": slots, "scratch": scratch, "check_dirs": check_dirs,
           "extra_names": tuple(n for n in res if n != "scratch") + _vars_names(raw)}
    tasks_raw = raw.get("task") if isinstance(raw.get("task"), list) else []
    tasks = [s for i, t in enumerate(tasks_raw) if (s := build_task(i, t, ctx, probs))]
    names = entry_names(raw, "task")
    for i, t in enumerate(tasks_raw):
        if i not in names and isinstance(t, dict) and isinstance(t.get("name"), str) \
                and t["name"].isprintable() and t["name"]:
            probs.append((("task", i, "name"), f"duplicate task name {t['name']!r}"))
    if "bind" in place:
        check_bind(("placement", "bind"), place["bind"], probs)
    reference = check_reference(raw.get("reference"), tasks, probs,
                                list(entry_names(raw, "variant").values()))
    # values no node can be sent, unless a check above told that field's problem already
    told = [loc for loc, _ in probs if loc and isinstance(loc[-1], str)]
    probs += [(loc, msg) for loc, msg in wire_problems(raw)
              if not any(loc[:len(t)] == t for t in told)]
    variants = build_variants(raw, path, slots, check_dirs, probs, _build,
                              tuple(n for n in res if n != "scratch")) if with_variants else []
    groups = build_groups(raw, tasks, workers or [1], variants, probs) if with_variants else []
    baseline = raw.get("baseline")
    if isinstance(baseline, str) and with_variants and baseline not in [v.name for v in variants]:
        probs.append((("baseline",), f"no variant named {baseline!r} "
                                     f"{known_names([v.name for v in variants], baseline)}"))
    plan_observe(raw, probs)    # intervals too short to sample
    if probs:
        return None, probs
    name = raw.get("name") or ("plan" if path.startswith("<") else Path(path).stem)
    return Plan(name=name, tasks=tasks, repeat=raw.get("repeat", 1), workers=workers or [1],
                order=_choices(place.get("order"), "spread"),
                pin=_choices(place.get("pin"), "core"),
                cpus=_choices(place.get("cpus"), 1), bind=_sweep(place.get("bind")),
                resources=res, baseline=baseline, reference=reference, groups=groups,
                slots=slots, scratch=scratch, keep=raw.get("keep", False), variants=variants,
                on_node_loss=raw.get("on_node_loss", "abort"),
                clock_tolerance=(parse_duration(raw["clock_tolerance"])
                                 if "clock_tolerance" in raw else None),
                cluster=raw.get("cluster", {}), peaks=raw.get("peaks", {}), path=path,
                raw=raw, **plan_observe(raw)), probs


def load_plan(path: str | os.PathLike, overrides: Iterable[str] = (), slots: int | None = None,
              check_dirs: bool = True) -> Plan:
    """Read, override, validate; PlanError lists every problem found."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise PlanError([f"{path}: cannot read the plan: {getattr(e, 'strerror', None) or e}"])
    return parse_plan(text, str(path), overrides, slots, check_dirs)


def parse_plan(text: str, path: str = "<plan>", overrides: Iterable[str] = (),
               slots: int | None = None, check_dirs: bool = True) -> Plan:
    """Validate a plan's TOML text (path is only used in messages and for the default name)."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"\(at line (\d+), column (\d+)\)", str(e))
        where = f"{path}:{m.group(1)}:{m.group(2)}" if m else path
        raise PlanError([f"{where}: TOML syntax: {re.sub(r' *[(]at line.*', '', str(e))}"])
    except RecursionError:   # the parser recurses once per level of nesting
        raise PlanError([f"{path}: tables or lists nested too deeply (at most {MAX_DEPTH})"])
    deep = too_deep(raw)
    if deep is not None:
        raise PlanError([f"{path}: {field_name(raw, deep[:2])}: tables or lists nested "
                         f"more than {MAX_DEPTH} deep"])
    problems: list[str] = []
    if slots is not None and (isinstance(slots, bool) or not isinstance(slots, int) or slots < 1):
        problems.append(f"--slots: must be a positive integer, got {slots!r}")
        slots = None
    overridden: list[Loc] = []
    for item in overrides:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            problems.append(f"--set {item!r}: expected KEY=VALUE (e.g. --set repeat=3)")
            continue
        try:
            loc = resolve_key(raw, key)
            assign(raw, loc, parse_value(value))
            overridden.append(loc)
        except (ValueError, IndexError) as e:
            problems.append(f"--set: {key}: {e}")
    plan, probs = _build(raw, path, slots, check_dirs)
    index = line_index(text)
    found: list[tuple[float, str]] = []
    for loc, msg in probs:
        field = field_name(raw, loc)
        if any(loc[:len(o)] == o for o in overridden):
            found.append((float("inf"), f"{path}: {field}: {msg} (from --set)"))
            continue
        line = find_line(index, loc)
        where = f"{path}:{line}" if line else path
        found.append((line or float("inf"), f"{where}: {field}: {msg}" if field
                      else f"{where}: {msg}"))
    found.sort(key=lambda x: x[0])  # stable: same-line problems keep the order found
    problems += list(dict.fromkeys(s for _, s in found))
    if problems or plan is None:
        raise PlanError(problems)
    plan.source = text
    for i, t in enumerate(plan.tasks):
        t.line = find_line(index, ("task", i))
    return plan


def variant_plan(plan: Plan, variant: Variant) -> Plan:
    """The plan as one variant's phases see it: its `set` and `dir` applied (validated at
    load time)."""
    raw = variant_raw(plan.raw, variant)
    for key, value in variant.set.items():
        assign(raw, resolve_key(raw, key), value)
    vplan, probs = _build(raw, plan.path, plan.slots, check_dirs=False, with_variants=False)
    if vplan is None:  # only when the plan was built without parse_plan
        raise PlanError([f"{plan.path}: {field_name(raw, loc)}: {msg}" for loc, msg in probs])
    vplan.source = plan.source
    for t, base in zip(vplan.tasks, plan.tasks):
        t.line = base.line
    return vplan
