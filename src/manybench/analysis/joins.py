"""How views join points of different runs: what makes two runs' points the same measurement,
and, for points that found no partner, which of the other run's is nearest and what differs.

A point's fields (plan/expand.point_key): its variant, workers, placement (order, pin, cpus,
bind) and every parameter, defaults included; its task, and for a member of a [[concurrent]]
group the member task, name where it belongs. Its `pair` (its position in the task) is left
out across runs: a plan that adds a point shifts the positions of the others. `compare` and
`history` match points whose task and fields are all equal (`compare --ignore NAME` leaves a
field out); `history` also keeps points of different kernels and of different hosts apart.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

# top-level key entries that are fields of the point; everything else but task and pair too
_TOP = ("variant", "workers", "order", "pin", "cpus", "bind")


def split_key(point: str) -> tuple[dict, str]:
    """A point key as a dict, and the task suffix of a [[concurrent]] member ("...}#write")."""
    try:
        key = json.loads(point)
        return (key, "") if isinstance(key, dict) else ({"key": point}, "")
    except ValueError:
        i = point.rfind("}#")
        try:
            return json.loads(point[:i + 1]), point[i + 2:]
        except ValueError:
            return {"key": point}, ""


@dataclass(frozen=True)
class Identity:
    """A point as runs are joined on it: its task (a group member's as "group#member") and its
    fields by name (a parameter under its own name; one that shares a name with a top-level
    field as "params.NAME")."""
    task: str
    fields: dict[str, Any]

    def id(self, leave_out: Iterable[str] = ()) -> str:
        """A string equal for points that are the same measurement, `leave_out` aside."""
        out = set(leave_out)
        kept = {k: v for k, v in self.fields.items() if k not in out}
        return json.dumps([self.task, kept], sort_keys=True, default=str)


def identity(point: str, task: str = "") -> Identity:
    """The Identity of a stored point key (`task`: the summary's, for keys without one)."""
    key, suffix = split_key(point)
    fields = {k: key[k] for k in _TOP if k in key}
    params = key.get("params") if isinstance(key.get("params"), dict) else {}
    for name, v in params.items():
        fields[f"params.{name}" if name in fields else name] = v
    for k, v in key.items():       # a key of another version: whatever else it holds
        if k not in _TOP and k not in ("task", "params", "pair"):
            fields.setdefault(k, v)
    name = str(key.get("task", task))
    return Identity(f"{name}#{suffix}" if suffix else name, fields)


Difference = tuple[str, Any, Any]     # field, its value on one side, on the other (None: none)


def differences(a: Identity, b: Identity) -> list[Difference]:
    """The fields in which two points differ, in a's order then b's."""
    names = list(a.fields) + [k for k in b.fields if k not in a.fields]
    dump = lambda v: json.dumps(v, sort_keys=True, default=str)   # noqa: E731
    return [(k, a.fields.get(k), b.fields.get(k)) for k in names
            if dump(a.fields.get(k)) != dump(b.fields.get(k))]


@dataclass
class Unpaired:
    """A point of one run that no point of the other run matched, and the other run's point of
    the same task that differs from it in the fewest fields (None: that run has no point of
    the task)."""
    point: Identity
    nearest: Identity | None
    differ: list[Difference]        # point's value first, the nearest's second

    @property
    def one(self) -> str | None:
        """The field, when it is the only one that differs."""
        return self.differ[0][0] if len(self.differ) == 1 else None


def unpaired(mine: Sequence[Identity], others: Sequence[Identity],
             leave_out: Iterable[str] = ()) -> list[Unpaired]:
    """The points of `mine` that match none of `others` (fields in `leave_out` aside), each
    with its nearest in `others`."""
    out = tuple(leave_out)
    theirs = {o.id(out) for o in others}
    ours = {p.id(out) for p in mine}
    found = []
    for p in mine:
        if p.id(out) in theirs:
            continue
        best: tuple[Identity | None, list[Difference]] = (None, [])
        rank: tuple[int, bool] | None = None
        for o in others:
            if o.task != p.task:
                continue
            d = [x for x in differences(p, o) if x[0] not in out]
            # as near, a point without a partner of its own is the likelier counterpart
            mine_rank = (len(d), o.id(out) in ours)
            if rank is None or mine_rank < rank:
                best, rank = (o, d), mine_rank
        found.append(Unpaired(p, *best))
    return found


def field_names(points: Iterable[Identity]) -> list[str]:
    """Every field the points have, in order of first appearance."""
    return list(dict.fromkeys(k for p in points for k in p.fields))
