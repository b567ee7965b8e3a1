"""`manybench diff RUN_A RUN_B`: what changed between two runs' environments.

Compared, each as a section: the run environment (the coordinator's inventory), what each
task ran with (the facts its records carry: the BLAS and its core, the MPI and what carried
its messages; kernels/facts.py), each node's
inventory with its slots and cpus, and each node's provenance snapshots (inventory/
provenance.py), "start" against "start" and each "before/after setup|teardown <variant>"
against the same label, when both runs have it. Nested data is flattened to key paths
(`tunables.thp.enabled`, `dirs[/scratch].fstype`); a section lists what changed (A -> B) and
what only one run has.

A change that shows in several sections (the kernel, seen by the coordinator, the node's
inventory and every snapshot of it) is listed once, where it first appears. Keys that differ
in every run (times, pids, boot ids, clock offsets, free memory) are noise, left out unless
`show_all`.

RUN is a results directory (its latest run) or DIR:RUN_ID.
"""
from __future__ import annotations

import json
import os
import re
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from .contract import START, RunInfo, StoredNode
from .schema import SchemaError
from .store import Store, db_problem

Path = tuple[str, ...]

# last key components that differ from run to run whatever the machine: never a finding
NOISE = re.compile(r"^(taken_ns|started_ns|ended_ns|offset_ns|error_ns|pid|ppid|boot_id|"
                   r"machine|uptime(_s)?|mem(ory)?_(free|available)|free|available|"
                   r"load(avg)?(_\w+)?)$")


# subtrees measured afresh by every run (a node's noise floor, its one-core probes): what they
# hold is shown by `report`, never a difference of the machine
MEASURED = {"noise", "probe"}


FACTS_TITLE = "what the tasks ran with"


class DiffError(Exception):
    """Bad input: the message names the argument and says what is wrong (exit status 2)."""


@dataclass
class Section:
    title: str
    changed: list[tuple[str, Any, Any]] = field(default_factory=list)
    only_a: list[tuple[str, Any]] = field(default_factory=list)
    only_b: list[tuple[str, Any]] = field(default_factory=list)
    repeated: int = 0          # differences left out as already shown in an earlier section

    def count(self) -> int:
        return len(self.changed) + len(self.only_a) + len(self.only_b)


@dataclass
class RunDiff:
    a: str                     # DIR:RUN_ID of each side
    b: str
    sections: list[Section]
    noise: int = 0             # noise keys left out

    @property
    def differs(self) -> bool:
        return any(s.count() or s.repeated for s in self.sections)


# -- opening RUN arguments ---------------------------------------------------------------------
def open_run(arg: str, name: str) -> tuple[Store, RunInfo]:
    """RUN (a results directory, or DIR:RUN_ID) read-only, with its run; DiffError naming
    `name` (RUN_A, RUN_B) when it is not one."""
    directory, run_id = arg, None
    if not os.path.isdir(arg) and ":" in arg:
        directory, run_id = arg.rsplit(":", 1)
    if not os.path.isdir(directory):
        raise DiffError(f"{name}: {directory!r} is not a directory (give a results directory, "
                        "or DIR:RUN_ID)")
    try:
        store = Store(directory, readonly=True)
    except FileNotFoundError:
        raise DiffError(f"{name}: no results.db in {directory}") from None
    except SchemaError as e:
        raise DiffError(f"{name}: {e}") from None
    except sqlite3.DatabaseError as e:
        raise DiffError(f"{name}: {directory}/results.db cannot be read: {db_problem(e)}") \
            from None
    try:
        runs = store.runs()
        if not runs:
            raise DiffError(f"{name}: no runs in {directory}")
        if not run_id:
            return store, runs[-1]
        for r in runs:
            if r.run_id == run_id:
                return store, r
        raise DiffError(f"{name}: no run {run_id!r} in {directory}; runs there: "
                        + ", ".join(r.run_id for r in runs))
    except BaseException:
        store.close()
        raise


# -- flattening and comparing -----------------------------------------------------------------
def flatten(value: Any, prefix: Path = ()) -> dict[Path, Any]:
    """Leaves by key path. A list of plain values is one leaf (cflags, a NUMA distance row:
    read as one value); a list holding objects is walked by index (numa.0.cpus)."""
    if isinstance(value, dict):
        if not value:
            return {prefix: {}} if prefix else {}
        out: dict[Path, Any] = {}
        for k, v in value.items():
            out.update(flatten(v, prefix + (str(k),)))
        return out
    if isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
        out = {}
        for i, v in enumerate(value):
            out.update(flatten(v, prefix + (str(i),)))
        return out
    return {prefix: value}


def key_text(path: Path) -> str:
    """`tunables.thp.enabled`; a key with dots, slashes or spaces in brackets:
    `sysctl[vm.swappiness]`, `dirs[/scratch].fstype`."""
    out = ""
    for part in path:
        if re.fullmatch(r"[\w-]+", part):
            out += ("." if out else "") + part
        else:
            out += f"[{part}]"
    return out


def compare(title: str, a: dict, b: dict, show_all: bool) -> tuple[Section, int]:
    """The section of a's and b's differences, and how many noise keys were left out."""
    fa, fb = flatten(a), flatten(b)
    sec, noise = Section(title), 0
    for path in sorted(set(fa) | set(fb)):
        in_a, in_b = path in fa, path in fb
        if in_a and in_b and fa[path] == fb[path]:
            continue
        if not show_all and path and (NOISE.match(path[-1]) or MEASURED & set(path)
                                      or _says_measured(path, fa, fb)):
            noise += 1
            continue
        key = key_text(path)
        if in_a and in_b:
            sec.changed.append((key, fa[path], fb[path]))
        elif in_a:
            sec.only_a.append((key, fa[path]))
        else:
            sec.only_b.append((key, fb[path]))
    return sec, noise


def _says_measured(path: Path, fa: dict, fb: dict) -> bool:
    """Whether either inventory says the value at path was measured, not read: a clock where
    cpufreq gives none (`cpu.base_mhz` beside `cpu.base_source` "measured: ..."), and the
    peaks computed from it (`peaks.*.base_ghz`, `peaks.*.dp_gflops`, whose `peaks.basis`
    says "measured"). Two runs on one machine measure it apart under load: not a change."""
    *head, last = path
    sources = [(*head, last.rsplit("_", 1)[0] + "_source")]
    if head and head[-1] in ("values", "detected", "basis"):
        sources.append((*head[:-1], "basis", last))
    return any(isinstance(f.get(s), str) and "measured" in f[s] for s in sources
               for f in (fa, fb))


def _fold_repeats(sections: list[Section]) -> None:
    """Leave out of later sections the differences an earlier one already shows (same key,
    same values): a changed kernel is one finding, not one per snapshot."""
    seen: set[str] = set()
    for sec in sections:
        def fresh(item: tuple, kind: str) -> bool:
            sig = json.dumps([kind, *item], default=str)
            if sig in seen:
                sec.repeated += 1
                return False
            seen.add(sig)
            return True
        sec.changed = [c for c in sec.changed if fresh(c, "changed")]
        sec.only_a = [c for c in sec.only_a if fresh(c, "only_a")]
        sec.only_b = [c for c in sec.only_b if fresh(c, "only_b")]


# -- the two runs -----------------------------------------------------------------------------
def _pair_nodes(a: list[str], b: list[str]) -> list[tuple[str | None, str | None]]:
    """Nodes by name; one node on each side is the same machine's role whatever its name
    (a run on node01 against one on node02)."""
    if len(a) == 1 and len(b) == 1:
        return [(a[0], b[0])]
    return [(n if n in a else None, n if n in b else None) for n in sorted(set(a) | set(b))]


def _node_title(na: str | None, nb: str | None) -> str:
    return f"node {na}" if na == nb else f"node {na or '-'} / {nb or '-'}"


def _node_data(n: StoredNode) -> dict:
    return {"slots": n.slots, "cpus": n.cpus, **(n.inventory or {})}


def _snapshots(store: Store, run: str, node: str) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for s in store.snapshots(run, node=node):
        out.setdefault(s.label, []).append(s.data)
    return out


def task_facts(store: Store, run_id: str) -> dict[str, dict[str, Any]]:
    """Per task, each fact its records carry (kernels/facts.py: the BLAS and its core, the
    MPI and what carried its messages ...) by its name: one value, or the list of values
    when its phases or nodes ran two ways."""
    out: dict[str, dict[str, list]] = {}
    for parts in store.aggregates(run_id).values():
        for part in parts:
            task = out.setdefault(part.info.task, {})
            for _kernel, _i, name, value, _n, _nodes in part.facts:
                seen = task.setdefault(name, [])
                if value not in seen:
                    seen.append(value)
    return {t: {k: v[0] if len(v) == 1 else v for k, v in f.items()} for t, f in out.items()}


def _label_order(label: str) -> tuple:
    return (label != START, label)


def diff_runs(arg_a: str, arg_b: str, show_all: bool = False) -> RunDiff:
    """The differences between the environments of RUN_A and RUN_B; DiffError for bad input."""
    sa, ra = open_run(arg_a, "RUN_A")
    try:
        sb, rb = open_run(arg_b, "RUN_B")
    except BaseException:
        sa.close()
        raise
    with sa, sb:
        pairs: list[tuple[str, dict, dict]] = [
            ("run environment", ra.environment, rb.environment),
            (FACTS_TITLE, task_facts(sa, ra.run_id), task_facts(sb, rb.run_id))]
        nodes_a = {n.name: n for n in sa.nodes(ra.run_id)}
        nodes_b = {n.name: n for n in sb.nodes(rb.run_id)}
        missing: list[Section] = []
        for na, nb in _pair_nodes(list(nodes_a), list(nodes_b)):
            title = _node_title(na, nb)
            if na is None or nb is None:
                sec = Section(title)
                (sec.only_a if nb is None else sec.only_b).append(("node", na or nb))
                missing.append(sec)
                continue
            pairs.append((title, _node_data(nodes_a[na]), _node_data(nodes_b[nb])))
            snaps_a, snaps_b = _snapshots(sa, ra.run_id, na), _snapshots(sb, rb.run_id, nb)
            for label in sorted(set(snaps_a) | set(snaps_b), key=_label_order):
                la, lb = snaps_a.get(label, []), snaps_b.get(label, [])
                for i in range(max(len(la), len(lb))):
                    t = f"{title}: {label}" + (f" (#{i + 1})" if i else "")
                    if i < len(la) and i < len(lb):
                        pairs.append((t, la[i], lb[i]))
                    else:
                        sec = Section(t)
                        (sec.only_a if i < len(la) else sec.only_b).append(("snapshot", label))
                        missing.append(sec)
        sections, noise = [], 0
        for title, a, b in pairs:   # a fact is what ran, never noise (a task named "probe")
            sec, n = compare(title, a, b, show_all or title == FACTS_TITLE)
            sections.append(sec)
            noise += n
        _fold_repeats(sections)
        return RunDiff(f"{sa.directory}:{ra.run_id}", f"{sb.directory}:{rb.run_id}",
                       sections + missing, noise)


# -- output -----------------------------------------------------------------------------------
def _fmt(v: Any) -> str:
    if isinstance(v, str) and v and v == v.strip():
        return v
    return json.dumps(v, default=str)


def render(d: RunDiff, show_all: bool = False) -> str:
    """The differences as text: per section, `~ key: A -> B`, `- key: A` (only in A),
    `+ key: B` (only in B)."""
    lines = [f"A: {d.a}", f"B: {d.b}"]
    for sec in d.sections:
        if not sec.count() and not sec.repeated:
            continue
        lines.append("")
        lines.append(sec.title)
        lines += [f"  ~ {k}: {_fmt(a)} -> {_fmt(b)}" for k, a, b in sec.changed]
        lines += [f"  - {k}: {_fmt(a)}" for k, a in sec.only_a]
        lines += [f"  + {k}: {_fmt(b)}" for k, b in sec.only_b]
        if sec.repeated:
            lines.append(f"  ({sec.repeated} more as above)")
    total = sum(s.count() for s in d.sections)
    lines.append("")
    if total:
        lines.append(f"{total} difference{'s' if total != 1 else ''} ('~' changed A -> B, "
                     "'-' only in A, '+' only in B)")
    else:
        lines.append("no differences in the environments")
    if d.noise and not show_all:
        lines.append(f"{d.noise} key{'s that differ' if d.noise != 1 else ' that differs'} "
                     "in every run (times, pids, boot ids, clock offsets) left out; --all "
                     "shows them")
    return "\n".join(lines) + "\n"


def as_json(d: RunDiff) -> dict:
    """The same as a JSON object (repeats already folded, as in the text)."""
    return {"a": d.a, "b": d.b, "differs": d.differs, "noise_left_out": d.noise,
            "sections": [{"title": s.title,
                          "changed": [{"key": k, "a": a, "b": b} for k, a, b in s.changed],
                          "only_a": [{"key": k, "a": a} for k, a in s.only_a],
                          "only_b": [{"key": k, "b": b} for k, b in s.only_b],
                          "repeated": s.repeated} for s in d.sections]}
