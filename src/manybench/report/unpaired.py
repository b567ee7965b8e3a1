"""The points `manybench compare` could not pair, in words: each named as a person reads it
(its task, workers and the fields in which the task's points differ, as plans write them),
with the other run's nearest point and what differs, values baseline first:

  write workers=2 fsync=end (A) and write workers=2 fsync=never (B): only fsync differs
  (end in A, never in B); --ignore fsync pairs them
"""
from __future__ import annotations

import json
from typing import Any, Callable

from ..analysis.compare import RunData, Unmatched, unmatched
from ..analysis.joins import Identity, Unpaired, identity
from .formats import param_formatter, plural

MAX_UNPAIRED = 10     # points listed per run that could not be paired; the rest counted


class PointWords:
    """Points of the runs compared, named as a person reads them: task, workers and the
    fields in which the task's points differ (over every run), as plans write them."""

    def __init__(self, runs: list[RunData]) -> None:
        self.kernel: dict[str, str] = {}
        seen: dict[str, list[Identity]] = {}
        for r in runs:
            for s in r.summaries:
                i = identity(s.point, s.task)
                self.kernel.setdefault(i.task, s.kernel)
                seen.setdefault(i.task, []).append(i)
        self.swept = {task: _swept(ids) for task, ids in seen.items()}

    def value(self, task: str, name: str, v: Any) -> str:
        return param_formatter(self.kernel.get(task, ""), name.removeprefix("params."))(v)

    def point(self, p: Identity) -> str:
        shown = [k for k in self.swept.get(p.task, []) if k in p.fields]
        return " ".join([p.task] + [f"{k}={self.value(p.task, k, p.fields[k])}" for k in shown])

    def differ(self, task: str, diffs: list[tuple[str, Any, Any]], a: str, b: str,
               verb: bool = False) -> str:
        """"fsync (end in A, never in B)"; `verb`: "fsync differs (end in A, never in B)"."""
        return ", ".join(f"{k}{' differs' if verb else ''} ({self.value(task, k, x)} in {a}, "
                         f"{self.value(task, k, y)} in {b})" for k, x, y in diffs)

    def unmatched(self, a: str, u: Unmatched) -> list[str]:
        """A note per run: how many points were not paired, then a line for each (a point of
        one run and the other's nearest together, when each is the other's)."""
        b = u.label
        if not u.lack and not u.extra:
            return []
        head = ", ".join(x for x in (
            f"{plural(len(u.lack), 'point')} of {a} that {b} does not have" if u.lack else "",
            f"{plural(len(u.extra), 'point')} of {b} that {a} does not have" if u.extra else "")
            if x)
        lines = []
        named: set[str] = set()
        for side, other, items in ((a, b, u.lack), (b, a, u.extra)):
            for x in items:
                if x.point.id() not in named:
                    lines.append(self._line(x, side, other, side == a, named))
        more = len(lines) - MAX_UNPAIRED
        lines = lines[:MAX_UNPAIRED] + ([f"... and {more} more"] if more > 0 else [])
        return [f"not compared: {head}:"] + [f"  {line}" for line in lines]

    def _line(self, x: Unpaired, side: str, other: str, baseline: bool, named: set[str]
              ) -> str:
        """One unpaired point of `side` (the baseline run or not) and its nearest in
        `other`; values of the differing fields are given baseline first."""
        named.add(x.point.id())
        me = f"{self.point(x.point)} ({side})"
        if x.nearest is None:
            return f"{me}: {other} has no point of task {x.point.task}"
        first, second = (side, other) if baseline else (other, side)
        diffs = x.differ if baseline else [(k, q, p) for k, p, q in x.differ]
        them = f"{self.point(x.nearest)} ({other})"
        if x.one is not None:
            named.add(x.nearest.id())
            return (f"{me} and {them}: only {self.differ(x.point.task, diffs, first, second, True)}"
                    f"; --ignore {x.one} pairs them")
        return (f"{me}: the nearest of {other}, {them}, differs in "
                f"{self.differ(x.point.task, diffs, first, second)}")

    def why(self, runs: list[RunData], ignore: tuple[str, ...]) -> Callable[[RunData], str]:
        """For compare's exit 2: what differs between a run and the first, in a few words
        (analysis/compare.check_common adds them to its message)."""
        by_label = {u.label: u for u in unmatched(runs, ignore)}
        a = runs[0].label

        def text(run: RunData) -> str:
            u = by_label[run.label]
            ones = {x.one for x in u.lack}
            if u.lack and None not in ones and len(ones) == 1:
                name = ones.pop()
                pairs = list(dict.fromkeys(self.differ(x.point.task, x.differ, a, run.label)
                                           for x in u.lack))
                return f"; they differ in {'; '.join(pairs)}: --ignore {name} pairs them"
            lines = self.unmatched(a, u)
            return "; " + " ".join(line.strip() for line in lines[1:4]) if lines else ""
        return text


def _swept(points: list[Identity]) -> list[str]:
    """workers first, then the fields whose values differ between the points."""
    names = list(dict.fromkeys(k for p in points for k in p.fields))
    dump = lambda v: json.dumps(v, sort_keys=True, default=str)   # noqa: E731
    varying = [k for k in names if len({dump(p.fields.get(k)) for p in points}) > 1]
    return ["workers"] + [k for k in varying if k != "workers"]
