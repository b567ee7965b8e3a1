"""Which pairs of a job's ranks each transport path carried, worked out per rank, never pair by
pair (a job of 4,096 ranks has 8 million pairs; mpi_transport.job_transport names a path's
first pairs and counts the rest).

Each rank that said (its parsed words, mpi_transport.parse) sees a few peers through a path it
names (the btl its bml chose for a peer; shared memory to its node's ranks, MPICH) and every
other peer through its default (none, as Open MPI's ob1 for the peers it did not name). A
pair a < b takes a's path to b when a has one, else b's to a. So most pairs take their lower
rank's default when it has one (the rank is *active*), else their upper rank's: those are
counted from how many ranks lie above or below each active rank (and, for the warnings, how
many of them on a known node other than its own). The few pairs a named path sends another
way (*special*) are found from each rank's names and counted one by one; a node's list of
ranks is kept once for the ranks that said it. A path's first pairs are found by walking ranks
in order from the first that has one, skipping special pairs and, for the warnings, a node's
run of ranks in one step.
"""
from __future__ import annotations

import functools
import heapq
from bisect import bisect_right
from collections import Counter
from dataclasses import dataclass, field
import itertools
from itertools import islice
from typing import Iterator

SHARED_BTLS = {"vader", "sm", "smcuda"}     # Open MPI's shared-memory btls
Path = tuple[str, bool]                     # what carried a pair, and whether shared memory
Pair = tuple[int, int]
# steps of classification done (ranks, named peers, pairs looked at): tests assert it grows
# with the ranks, not with their pairs; a count, where a timer would move with the machine
WORK: Counter[str] = Counter()


def _ucx_path(t: dict, via: str) -> Path:
    """Messages UCX carried, from the lanes of the rank's endpoints (the one to itself left
    out): through shared memory when every lane is on a memory device (sysv, posix, cma,
    xpmem); partly so when some are and every peer is on another node (the rank's node holds
    only itself), as UCX's rendezvous over cma between namespace nodes."""
    lanes = [x for x in t.get("ucx", []) if not x.startswith("self/")]
    memory = [x for x in lanes if x.partition("/")[2].startswith("memory")]
    if lanes and len(memory) == len(lanes):
        return f"{via}, UCX through shared memory", True
    if memory and t.get("node") == [t.get("rank")]:
        network = [x for x in lanes if x not in memory]
        return (f"{via}, UCX through {', '.join(network)} and shared memory "
                f"({', '.join(memory)})"), True
    return via, False


def default_path(t: dict) -> Path | None:
    """What carried messages to a peer the rank that said t did not name, or None when t
    does not say."""
    if "device" in t and "node" in t:
        return _ucx_path(t, f"{t['device']} network module")
    if t.get("pml") == "ucx":
        return _ucx_path(t, "pml ucx")
    if t.get("ofi") and (t.get("mtl") == "ofi" or "device" in t):
        # libfabric's shm provider is shared memory; others name their fabric
        via = ("mtl ofi" if t.get("mtl") == "ofi" else t.get("device", "")) + ", libfabric " \
            + ", ".join(t["ofi"])
        return via, all(p.split(";")[0] == "shm" for p in t["ofi"])
    return None


SHARED_MEMORY: Path = ("shared memory", True)


@dataclass
class Node:
    """A node's ranks as a library counted them (MPICH's shared memory reaches them): one per
    distinct list, shared by the ranks that said it (a node's 64 ranks say the same 64)."""
    members: frozenset[int]
    ordered: list[int]              # sorted
    quiet: list[int] = field(default_factory=list)   # those without a default (sorted)


@dataclass
class View:
    """A rank's paths to its peers: the btl its bml named per peer, else shared memory to its
    node's ranks (MPICH without MPIR_CVAR_NOLOCAL), else its default (or none)."""
    rank: int
    default: Path | None
    btl: dict[int, Path]
    node: Node | None

    def to(self, b: int) -> Path | None:
        if b in self.btl:
            return self.btl[b]
        if self.node is not None and b in self.node.members and b != self.rank:
            return SHARED_MEMORY
        return self.default


@functools.cache
def _btl(name: str) -> Path:
    return f"btl {name}", name in SHARED_BTLS


class Job:
    """A job's ranks, by their names ("7", never "007"), and the node lists its ranks said,
    each kept once."""

    def __init__(self, ranks: list[int]) -> None:
        self.names = {str(r): r for r in ranks}
        self.ranks = frozenset(ranks)
        self.nodes: dict[tuple, Node] = {}


def view(t: dict, rank: int, job: Job) -> View:
    """What the rank that said t says of its peers in the job."""
    items = (t.get("btl") or {}).items()
    names = job.names
    btl = {names[p]: _btl(name) for p, name in items if name and p in names and names[p] != rank}
    node = None
    if "device" in t and "node" in t and t.get("nolocal") != 1:
        key = tuple(t["node"])
        node = job.nodes.get(key)
        if node is None:
            members = frozenset(key) & job.ranks
            node = job.nodes[key] = Node(members, sorted(members))
            WORK["steps"] += len(key)
    WORK["steps"] += 1 + len(items)
    return View(rank, default_path(t), btl, node)


@dataclass
class Took:
    """The pairs one path carried: how many, and the first few in order."""
    count: int = 0
    first: list[Pair] = field(default_factory=list)


class Line:
    """Ranks in order with their nodes: those after a rank, or only those on a known node other
    than a given one (a run of one node's ranks skipped in a step)."""

    def __init__(self, ranks: list[int], nodes: dict[int, str]) -> None:
        self.ranks = ranks
        self.known = [r for r in ranks if nodes.get(r)]
        self.node = [nodes[r] for r in self.known]
        self.end = [0] * len(self.known)     # the index after the run of equal nodes at i
        for i in range(len(self.known) - 1, -1, -1):
            same = i + 1 < len(self.known) and self.node[i + 1] == self.node[i]
            self.end[i] = self.end[i + 1] if same else i + 1

    def after(self, x: int, other_than: str | None = None) -> Iterator[int]:
        if other_than is None:
            for i in range(bisect_right(self.ranks, x), len(self.ranks)):
                WORK["steps"] += 1
                yield self.ranks[i]
            return
        i = bisect_right(self.known, x)
        while i < len(self.known):
            WORK["steps"] += 1
            if self.node[i] == other_than:
                i = self.end[i]
                continue
            yield self.known[i]
            i += 1


class Pairs:
    """A job's pairs of ranks by the path that carried them (see the module's docstring)."""

    def __init__(self, said: dict[int, dict], ranks: list[int], nodes: dict[int, str]) -> None:
        job = Job(ranks)
        self.nodes, self.ranks, self.line = nodes, ranks, Line(ranks, nodes)
        self.views = {a: view(t, a, job) for a, t in sorted(said.items())}
        WORK["steps"] += len(ranks)
        self.active = {a: v.default for a, v in self.views.items() if v.default}
        self.own: dict[str, list[int]] = {}     # the active ranks by their default, in order
        for a, (text, _) in self.active.items():
            self.own.setdefault(text, []).append(a)
        for node in job.nodes.values():
            node.quiet = [b for b in node.ordered if b not in self.active]
        self.special = self._special()

    def _special(self) -> dict[Pair, Path]:
        """The pairs a named path sends another way than the defaults would, found from a
        pair's lower rank's names (its btl's, its node's ranks above it) and its upper rank's
        when the lower has no default (its btl's, its node's ranks without one)."""
        special: dict[Pair, Path] = {}
        active, views = self.active, self.views
        for a, v in views.items():
            above = v.node.ordered[bisect_right(v.node.ordered, a):] if v.node else []
            below = v.node.quiet[:bisect_right(v.node.quiet, a)] if v.node else []
            WORK["steps"] += len(v.btl) + len(above) + len(below)
            for b in itertools.chain(v.btl, above, below):
                if b > a:          # a names b: a's path decides
                    pair, plain = (a, b), active.get(a) or active.get(b)
                    if pair in special:
                        continue
                    path = v.to(b)
                elif b < a and b not in active:     # b's path to a when b has one, else a's
                    pair, plain = (b, a), active.get(a)
                    if pair in special:
                        continue
                    vb = views.get(b)
                    path = (vb and vb.to(a)) or v.to(b)
                else:
                    continue
                if path != plain:
                    special[pair] = path     # never None: a named path is one
        return special

    def carried(self, shown: int) -> tuple[dict[str, Took], dict[str, Took]]:
        """Each path's pairs, and each shared-memory path's pairs on different nodes (its first
        only), both in the order of their first pairs."""
        count, across = Counter[str](), Counter[str]()
        flag: dict[str, bool] = {}
        firsts: dict[str, list[Pair]] = {}
        firsts_across: dict[str, list[Pair]] = {}
        # special pairs, path by path; what they take out of their ranks' plain pairs
        low, low_x, up, up_x = Counter[int](), Counter[int](), Counter[int](), Counter[int]()
        nodes, active = self.nodes, self.active
        by_path: dict[Path, list[Pair]] = {}
        for pair, path in self.special.items():
            by_path.setdefault(path, []).append(pair)
        for (text, shared), pairs in by_path.items():
            far = [(x, y) for x, y in pairs
                   if (nx := nodes.get(x)) and (ny := nodes.get(y)) and nx != ny]
            low.update(x for x, _ in pairs)
            low_x.update(x for x, _ in far)
            up.update(y for x, y in pairs if x not in active)
            up_x.update(y for x, y in far if x not in active)
            count[text] += len(pairs)
            flag[text] = shared
            firsts.setdefault(text, []).extend(pairs)
            if shared and far:
                across[text] += len(far)
                firsts_across.setdefault(text, []).extend(far)
        above, above_x, below, below_x = self._plain_room()
        for x, (text, shared) in self.active.items():
            flag[text] = shared
            count[text] += above[x] - low[x] + below[x] - up[x]
            if shared:
                across[text] += above_x[x] - low_x[x] + below_x[x] - up_x[x]
        plain = (above, above_x, low, low_x)
        took = {p: Took(n, self._first(p, shown, False, firsts.get(p, []), plain))
                for p, n in count.items() if n > 0}
        took_x = {p: Took(n, self._first(p, 1, True, firsts_across.get(p, []), plain))
                  for p, n in across.items() if n > 0 and flag[p]}
        return (dict(sorted(took.items(), key=lambda kv: kv[1].first[0])),
                dict(sorted(took_x.items(), key=lambda kv: kv[1].first[0])))

    def _plain_room(self) -> tuple[dict[int, int], ...]:
        """For each active rank: the ranks above it, and those on a known node other than its
        own; the ranks below it that are not active, and those on another known node."""
        above, above_x, below, below_x = {}, {}, {}, {}
        known, on = 0, Counter[str]()
        for i in range(len(self.ranks) - 1, -1, -1):
            r = self.ranks[i]
            n = self.nodes.get(r)
            above[r], above_x[r] = len(self.ranks) - 1 - i, (known - on[n] if n else 0)
            if n:
                known, on[n] = known + 1, on[n] + 1
        quiet, known, on = 0, 0, Counter[str]()
        for r in self.ranks:
            n = self.nodes.get(r)
            if r in self.active:
                below[r], below_x[r] = quiet, (known - on[n] if n else 0)
                continue
            quiet += 1
            if n:
                known, on[n] = known + 1, on[n] + 1
        WORK["steps"] += 2 * len(self.ranks)
        return above, above_x, below, below_x

    def _first(self, text: str, k: int, across: bool, special: list[Pair],
               plain: tuple[dict[int, int], ...]) -> list[Pair]:
        """The first k pairs path `text` carried (on different nodes only, `across`): its special
        pairs, the plain ones of ranks whose default it is, and the plain ones of inactive
        ranks with such a rank above them, merged in order."""
        WORK["steps"] += len(special)
        above, above_x, low, low_x = plain
        own = self.own.get(text, [])

        def rows_of_own() -> Iterator[Pair]:
            for x in own:
                if (above_x[x] - low_x[x] if across else above[x] - low[x]) <= 0:
                    continue     # every pair of x's row is special: nothing to walk
                for y in self.line.after(x, self.nodes.get(x) if across else None):
                    if (x, y) not in self.special:
                        yield x, y

        def rows_below() -> Iterator[Pair]:
            line = Line(own, self.nodes)
            for x in self.ranks:
                if x >= own[-1]:
                    return
                WORK["steps"] += 1
                if x in self.active or (across and not self.nodes.get(x)):
                    continue
                for y in line.after(x, self.nodes.get(x) if across else None):
                    if (x, y) not in self.special:
                        yield x, y

        streams = [iter(heapq.nsmallest(k, special))]
        if own:
            streams += [rows_of_own(), rows_below()]
        return list(islice(heapq.merge(*streams), k))
