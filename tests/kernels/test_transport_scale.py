"""A job's transport line at scale: job_transport works its pairs out per rank
(kernels/transport_pairs.py), says what the pairwise code did (kept here as the oracle) and
does work that grows with the ranks, not with their pairs (8 million at 4,096 ranks)."""
from __future__ import annotations

import random

import pytest

from manybench.kernels import mpi_transport
from manybench.kernels.mpi_transport import job_transport, parse
from manybench.kernels.transport_pairs import SHARED_BTLS, WORK, Took, default_path

# libmbrank's limits (native/mbtransport.c, mbrank.c): btl choices kept, room for the node's
# and the btl's words, the line sent to the slot
MAX_PEERS, WORDS, LINE = 256, 3000, 4096


# -- the pairwise code job_transport ran before (int33's mpi_transport._path and _paths) --
def _path(t: dict, b: int) -> tuple[str, bool] | None:
    btl = (t.get("btl") or {}).get(str(b))
    if btl:
        return f"btl {btl}", btl in SHARED_BTLS
    if "device" in t and "node" in t and b in t["node"] and t.get("nolocal") != 1:
        return "shared memory", True
    return default_path(t)       # the rest of int33's _path, as it was


class Pairwise:
    """Every pair's path, one by one: the oracle job_transport is run with in place of Pairs."""

    def __init__(self, said: dict[int, dict], ranks: list[int], nodes: dict[int, str]) -> None:
        self.paths: dict[tuple[int, int], tuple[str, bool]] = {}
        for a, t in sorted(said.items()):
            for b in ranks:
                path = _path(t, b) if b != a else None
                if path is not None:
                    self.paths.setdefault((min(a, b), max(a, b)), path)
        self.nodes = nodes

    def carried(self, shown: int) -> tuple[dict[str, Took], dict[str, Took]]:
        by: dict[str, Took] = {}
        across: dict[str, Took] = {}
        for (a, b), (path, shared) in sorted(self.paths.items()):
            groups = [by]
            if shared and self.nodes.get(a) and self.nodes.get(b) \
                    and self.nodes[a] != self.nodes[b]:
                groups.append(across)
            for group in groups:
                took = group.setdefault(path, Took())
                took.count += 1
                took.first += [(a, b)] if len(took.first) < shown else []
        return by, across


def pairwise(monkeypatch, ranks: dict[int, dict], nodes: dict[int, str]):
    with monkeypatch.context() as m:
        m.setattr(mpi_transport, "Pairs", Pairwise)
        return job_transport(ranks, nodes)


# -- jobs whose words are written as libmbrank writes them -----------------------------------
def words(rank: int, n: int, per_node: int, family: str, one_machine: bool) -> list[str]:
    """Rank `rank`'s words in a job of n ranks, per_node to a node (in blocks), as
    nb_transport_line writes them: Open MPI's ob1 choosing a btl per peer for its first peers,
    MPICH's ch4:ucx; `one_machine`, the nodes are namespaces of one machine (the library's
    node holds every rank: shared memory between them)."""
    first = rank // per_node * per_node
    local = range(n) if one_machine else range(first, first + per_node)
    line = "transport" + (" pml:ob1" if family == "openmpi" else " device:ch4:ucx nolocal:0")
    node = " node:"
    for i, r in enumerate(local):
        if len(node) + 16 >= WORDS:
            node += ",+"
            break
        node += f"{',' if i else ''}{r}"
    btl = ""
    for peer in range(min(n, MAX_PEERS)) if family == "openmpi" else ():
        name = "self" if peer == rank else "vader" if peer in local else "tcp"
        if len(btl) + len(f" btl:{peer}:{name}") >= WORDS:
            break
        btl += f" btl:{peer}:{name}"
    line += node + btl
    if family == "mpich":
        lanes = ["self/memory0", "posix/memory", "cma/memory"]
        lanes += [] if one_machine else ["rc_mlx5/mlx5_0:1"]
        for lane in lanes:
            if len(line) + len(f" ucx:{lane}") < LINE - 1:
                line += f" ucx:{lane}"
    return line.split()[1:]


def job(n: int, nodes: int, family: str, one_machine: bool
        ) -> tuple[dict[int, dict], dict[int, str]]:
    per = n // nodes
    return ({r: parse(words(r, n, per, family, one_machine)) for r in range(n)},
            {r: f"n{r // per:02d}" for r in range(n)})


KINDS = [(f, m) for f in ("openmpi", "mpich") for m in (False, True)]


@pytest.mark.parametrize("nodes", [4, 64])
@pytest.mark.parametrize("family,one_machine", KINDS)
def test_a_jobs_line_and_warnings_are_the_pairwise_codes(monkeypatch, family, one_machine,
                                                         nodes):
    ranks, nodes = job(256, nodes, family, one_machine)
    got = job_transport(ranks, nodes)
    assert got == pairwise(monkeypatch, ranks, nodes)
    assert bool(got[1]) == one_machine, got       # shared memory across nodes: warned of
    # ranks that said nothing (killed before MPI_Finalize) and ranks on no known node
    for r in range(0, 256, 7):
        ranks[r] = {}
    for r in range(0, 256, 11):
        nodes.pop(r)
    assert job_transport(ranks, nodes) == pairwise(monkeypatch, ranks, nodes)


def _random_words(rng: random.Random, rank: int, n: int) -> list[str]:
    """A rank's words drawn from what either family says, mixed as no library would."""
    peers = [str(p) for p in range(n + 2)] + ["007"]
    out = [rng.choice(["pml:ob1", "pml:ucx", "pml:cm", "device:ch4:ucx", "device:ch4:ofi"])]
    out += rng.sample(["mtl:ofi", "nolocal:0", "nolocal:1"], rng.randint(0, 2))
    if rng.random() < 0.7:
        local = rng.sample(range(n + 1), rng.randint(0, n))
        out.append("node:" + ",".join(map(str, local or [rank])) + (",+" if rng.random() < 0.2
                                                                      else ""))
    elif rng.random() < 0.3:
        out.append("node:+")        # no room for even one rank: an empty list
    out += [f"btl:{rng.choice(peers)}:{rng.choice(['vader', 'tcp', 'sm', 'self', 'openib'])}"
            for _ in range(rng.randint(0, n))]
    out += [f"ucx:{x}" for x in rng.sample(["self/memory0", "posix/memory", "cma/memory",
                                            "tcp/eth0", "rc_mlx5/mlx5_0:1"], rng.randint(0, 4))]
    out += [f"ofi:{x}" for x in rng.sample(["shm", "tcp", "tcp;ofi_rxm", "verbs"],
                                           rng.randint(0, 2))]
    return out


def test_random_small_jobs_say_what_the_pairwise_code_said(monkeypatch):
    rng = random.Random(31)
    for _ in range(3000):
        n = rng.randint(1, 9)
        ids = sorted(rng.sample(range(n + 3), n))       # job ranks need not be 0..n-1
        ranks = {r: parse(_random_words(rng, r, n)) if rng.random() < 0.85 else {}
                 for r in ids}
        nodes = {r: rng.choice(["n1", "n2", "n3", ""]) for r in ids if rng.random() < 0.9}
        assert job_transport(ranks, nodes) == pairwise(monkeypatch, ranks, nodes), \
            (ranks, nodes)


def steps(n: int, family: str, one_machine: bool) -> int:
    ranks, nodes = job(n, n // 64, family, one_machine)     # 64 ranks a node
    WORK.clear()
    job_transport(ranks, nodes)
    return WORK["steps"]


@pytest.mark.parametrize("family,one_machine", KINDS)
def test_the_work_grows_with_the_ranks_not_their_pairs(family, one_machine):
    # 16 times the ranks (4,096 on 64 nodes against 256 on 4): ~16 times the steps or fewer
    # (pair by pair it was 256 times); fewer on one machine, where each rank names the first
    # ranks of the machine (as many as libmbrank has room for) and those pairs stop growing
    ratio = steps(4096, family, one_machine) / steps(256, family, one_machine)
    assert (4 if one_machine else 12) <= ratio <= 24, ratio

