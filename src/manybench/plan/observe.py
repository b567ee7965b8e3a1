"""The plan's observation fields (issue 10): `warmup`, `sample` and `telemetry`.

  warmup     repetitions of each point run first and left out of every figure (top level:
             the default; a task's own overrides it)
  sample     seconds between a slot's progress samples inside a phase (default 0.1, 0 = off)
  telemetry  seconds between readings of each node's cpu, memory, disk and network
             (default 1, 0 = off; top level only)
  noise      seconds each node spends measuring its noise floor at the start of a run
             (inventory/noise.py; default 0.4, 0 = off; top level only)
  late_target  the share of phases allowed a late start: the lead grows to keep late phases
             under it (run/schedule.py; default 0.01; top level only)

Shapes (an integer >= 0, a duration) are checked by schema.py; this turns them into values.
"""
from __future__ import annotations

from typing import Any

from ..units import parse_duration
from ..analysis.late import DEFAULT_TARGET as DEFAULT_LATE_TARGET
from .overrides import Loc

DEFAULT_SAMPLE_S = 0.1
DEFAULT_TELEMETRY_S = 1.0
DEFAULT_NOISE_S = 0.4
MIN_INTERVAL_S = 0.01    # a shorter interval would cost more than it tells


def _duration(d: dict, name: str, loc: Loc, probs: list | None) -> float | None:
    if name not in d or isinstance(d[name], bool):
        return None
    try:
        v = parse_duration(d[name])
    except (ValueError, TypeError):
        return None     # the schema's duration format reports it
    if 0 < v < MIN_INTERVAL_S and probs is not None:
        probs.append((loc + (name,), f"must be 0 (off) or at least {MIN_INTERVAL_S:g}s, "
                                     f"got {d[name]!r}"))
    return v


def _count(d: dict, name: str) -> int | None:
    v = d.get(name)
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None


def observe_fields(t: dict, loc: Loc, probs: list) -> tuple[int | None, float | None]:
    """A task's own (warmup, sample), None where it gives none."""
    return _count(t, "warmup"), _duration(t, "sample", loc, probs)


def plan_observe(raw: dict, probs: list | None = None) -> dict[str, Any]:
    """The plan's defaults as Plan keyword arguments."""
    sample = _duration(raw, "sample", (), probs)
    telemetry = _duration(raw, "telemetry", (), probs)
    noise = _duration(raw, "noise", (), probs)
    late = raw.get("late_target")
    return {"warmup": _count(raw, "warmup") or 0,
            "sample": DEFAULT_SAMPLE_S if sample is None else sample,
            "telemetry": DEFAULT_TELEMETRY_S if telemetry is None else telemetry,
            "noise": DEFAULT_NOISE_S if noise is None else noise,
            "late_target": (float(late) if isinstance(late, (int, float))
                            and not isinstance(late, bool) else DEFAULT_LATE_TARGET)}


def task_warmup(plan_warmup: int, task_warmup: int | None) -> int:
    return plan_warmup if task_warmup is None else task_warmup


def task_sample(plan_sample: float, task_sample: float | None) -> float:
    return plan_sample if task_sample is None else task_sample
