"""Placement fields beyond order and pin: cpus per slot, bind, and [placement.resources].

bind (a placement sweep axis, or a variant's field) is the cpu AND memory binding of a
slot, as numactl gives it:
  "none"   every cpu of the node, the default memory policy: a bare, unbound process
  "core"   the slot's own cpus (its `cpus` cores), memory bound to their NUMA node(s)
           (numactl --physcpubind=... --membind=...)
  "numa"   every cpu of the slot's NUMA node(s), memory bound to them
           (numactl --cpunodebind=N --membind=N)
  { cpus = "0-3", mems = "0" }   explicit; a list of cpu lists gives one per slot
Without bind, `pin` alone decides the cpus and the memory policy is left alone.

[placement.resources] hands each concurrent slot of a node something of its own, as Grid
Engine's RSMAP complexes do:
  gpu = [0, 1, 2, 3]                         slot i gets id i: CUDA_VISIBLE_DEVICES and {gpu}
  nic = { ids = ["mlx5_0", "mlx5_1"], env = "UCX_NET_DEVICES" }   any name, its own variable
  scratch = { numa0 = "/nvme0", numa1 = "/nvme1" }   the directory nearest the slot's cpus
"""
from __future__ import annotations

from typing import Any

from ..kernels.binding import MAX_CPU_ID, parse_cpulist
from .overrides import Loc

# the variable a resource's id goes into when the plan names none
DEFAULT_ENV = {"gpu": "CUDA_VISIBLE_DEVICES"}


def env_name(resource: str) -> str:
    return DEFAULT_ENV.get(resource, f"MANYBENCH_{resource.upper()}")


def explicit_sets(value: Any) -> list[list[int]] | None:
    """An explicit bind's cpus or mems: one list per slot, or [one list] shared by every slot.
    None when absent; ValueError says what is wrong."""
    if value is None:
        return None
    if isinstance(value, str):
        return [parse_cpulist(value)]
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return [parse_cpulist(v) for v in value]
    if isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool)
                                       and 0 <= v <= MAX_CPU_ID for v in value):
        return [sorted(set(value))]
    raise ValueError('expected a cpu list such as "0-3,8", ids such as [0, 1], or one cpu '
                     'list per slot such as ["0-1", "2-3"]')


def check_bind(loc: Loc, value: Any, probs: list) -> None:
    """An explicit bind's lists must parse (the schema checked the shape)."""
    for one, at in ((value, loc),) if not isinstance(value, list) else \
            ((v, loc + (i,)) for i, v in enumerate(value)):
        if isinstance(one, dict):
            for key in ("cpus", "mems"):
                try:
                    explicit_sets(one.get(key))
                except ValueError as e:
                    probs.append((at + (key,), str(e)))


def resources(loc: Loc, raw: Any, probs: list) -> dict[str, Any]:
    """[placement.resources] checked: {name: {"ids": [...], "env": VAR}} and
    {"scratch": {numa: dir}}."""
    out: dict[str, Any] = {}
    if not isinstance(raw, dict):
        return out
    for name, value in raw.items():
        at = loc + (name,)
        if name == "scratch":
            if not isinstance(value, dict) or not value:
                probs.append((at, 'expected a table of NUMA node -> directory, e.g. '
                                  '{ numa0 = "/nvme0", numa1 = "/nvme1" }'))
                continue
            dirs: dict[int, str] = {}
            for key, d in value.items():
                k = str(key).removeprefix("numa")
                if not k.isdigit() or not isinstance(d, str) or not d:
                    probs.append((at + (key,), 'expected numaN = "/directory"'))
                    continue
                dirs[int(k)] = d
            out["scratch"] = dirs
            continue
        if not name.isidentifier():
            probs.append((at, "a resource name is a plain name (it is also a template name)"))
            continue
        ids, env = value, env_name(name)
        if isinstance(value, dict):
            ids, env = value.get("ids"), value.get("env", env)
            extra = set(value) - {"ids", "env"}
            if extra:
                probs.append((at + (sorted(extra)[0],), "unknown field (known: ids, env)"))
            if not isinstance(env, str) or not env.isidentifier():
                probs.append((at + ("env",), "expected an environment variable name"))
                continue
        if not isinstance(ids, list) or not ids or not all(
                isinstance(i, (str, int)) and not isinstance(i, bool) for i in ids):
            probs.append((at, f'expected a list of ids, e.g. {name} = [0, 1, 2, 3], or '
                              '{ ids = [...], env = "VARIABLE" }'))
            continue
        if len(set(map(str, ids))) != len(ids):
            probs.append((at, "ids must be distinct: each concurrent slot gets its own"))
            continue
        out[name] = {"ids": [str(i) for i in ids], "env": env}
    return out
