"""What carried a parallel job's messages, as its MPI library said (issue 31, item 4): read
in each rank by libmbrank (native/mbtransport.c), kept on the records, one line on the
job's first record (shown by report and diff), and a warning when ranks on different nodes
talked through shared memory."""
from __future__ import annotations

import pytest

from conftest import run_cli
from mpi_helpers import FAMILIES, build_probe, run_plan
from manybench.kernels.mpi_transport import job_transport, parse


def test_a_ranks_words_are_read_and_unknown_ones_left_out():
    t = parse(["pml:ob1", "node:0,1,+", "btl:1:vader", "btl:1:tcp", "btl:0:self",
               "ucx:posix/memory", "ucx:posix/memory", "nolocal:yes", "what:ever", "bare",
               "ucx:\x1b[2Jtcp/eth0", "device:=cmd|' /C calc'!A0", "mtl:" + "x" * 300])
    assert t == {"pml": "ob1", "node": [0, 1], "node_cut": True,
                 "btl": {"1": "vader", "0": "self"}, "ucx": ["posix/memory"]}



def test_a_nodes_ranks_are_read_as_long_as_libmbrank_writes_them():
    # the last node of 4,096 ranks, 64 to a node (324 characters), and as many ranks as
    # mbtransport.c has room for, cut with "+": both read; a word longer than that room is not
    node = "node:" + ",".join(str(r) for r in range(4032, 4096))
    assert parse([node])["node"] == list(range(4032, 4096))
    full = "node:" + ",".join(str(r) for r in range(600)) + ",+"
    assert len(full) < 3000 and parse([full]) == {"node": list(range(600)), "node_cut": True}
    assert parse(["node:" + "1," * 1500 + "2"]) == {}
    assert parse(["ucx:" + "x" * 200]) == {}

def test_the_jobs_line_names_each_pairs_path_and_warns_of_shared_memory_across_nodes():
    ranks = {0: parse(["pml:ob1", "btl:1:vader", "btl:2:tcp", "btl:0:self"]),
             1: parse(["pml:ob1", "btl:0:vader", "btl:2:tcp"]),
             2: {}}       # a rank that said nothing (killed before MPI_Finalize)
    text, warns = job_transport(ranks, {0: "n1", 1: "n2", 2: "n2"})
    assert text == ("Open MPI pml ob1; btl vader between ranks 0-1; btl tcp between ranks "
                    "0-2, 1-2; 2 of 3 ranks said"), text
    assert [k for k, _ in warns] == ["job-shared-memory"]
    assert "ranks 0 (node n1) and 1 (node n2) talked through btl vader" in warns[0][1]
    # one warning per path, however many pairs took it
    many = {r: parse(["pml:ob1", *(f"btl:{p}:vader" for p in range(6) if p != r)])
            for r in range(6)}
    warns = job_transport(many, {r: f"n{r % 2}" for r in range(6)})[1]
    assert len(warns) == 1 and "and 8 more pairs on different nodes" in warns[0][1], warns
    # the same on one node: nothing to warn of
    assert job_transport(ranks, {0: "n1", 1: "n1", 2: "n2"})[1] == []
    # MPICH's netmod over UCX whose lanes are all memory devices is shared memory too
    m = {r: parse(["device:ch4:ucx", "nolocal:1", f"node:{r}", "ucx:self/memory0",
                   "ucx:posix/memory", "ucx:cma/memory"]) for r in (0, 1)}
    text, warns = job_transport(m, {0: "n1", 1: "n2"})
    assert "ch4:ucx network module, UCX through shared memory between ranks 0-1" in text
    assert len(warns) == 1
    m[0]["ucx"].append("tcp/eth0")      # rank 0's peer is off its node: cma went there
    text, warns = job_transport(m, {0: "n1", 1: "n2"})
    assert "UCX through tcp/eth0 and shared memory (posix/memory, cma/memory)" in text, text
    assert len(warns) == 1
    m[0]["node"] = [0, 2]       # a peer on its node: the memory lanes may be that one's
    m[1]["ucx"].append("tcp/eth0")
    assert job_transport(m, {0: "n1", 1: "n2"})[1] == []
    # Open MPI's pml ucx between namespace nodes: tcp for eager, cma for rendezvous (seen
    # in examples/interconnects-001's ucx variant)
    u = {r: parse(["pml:ucx", f"node:{r}", "ucx:self/memory0", "ucx:cma/memory",
                   "ucx:tcp/eth0"]) for r in (0, 1)}
    assert job_transport(u, {0: "n1", 1: "n2"})[0] == (
        "Open MPI pml ucx; pml ucx, UCX through tcp/eth0 and shared memory (cma/memory) "
        "between ranks 0-1; UCX lanes self/memory0, cma/memory, tcp/eth0")
    assert job_transport({0: {}, 1: {}}, {}) == ("", [])
    # Open MPI's mtl ofi: the provider its fabric was opened with (the core one under it
    # left out); libfabric's shm provider between nodes is shared memory
    o = {r: parse(["pml:cm", "mtl:ofi", "ofi:tcp", "ofi:tcp;ofi_rxm"]) for r in (0, 1)}
    assert o[0]["ofi"] == ["tcp;ofi_rxm"]
    assert job_transport(o, {0: "n1", 1: "n2"}) == (
        "Open MPI pml cm, mtl ofi; mtl ofi, libfabric tcp;ofi_rxm between ranks 0-1", [])
    o = {r: parse(["pml:cm", "mtl:ofi", "ofi:shm"]) for r in (0, 1)}
    assert len(job_transport(o, {0: "n1", 1: "n2"})[1]) == 1


@pytest.fixture(scope="module", params=list(FAMILIES))
def mpi(request, tmp_path_factory):
    return build_probe(request.param, tmp_path_factory)


def _plan(probe: str, launcher: str, extra: str = "") -> str:
    return f"""
        name = "transport"
        [placement]
        workers = 2
        [[task]]
        name = "probe"
        command = ["{probe}"]
        ranks = 2
        launcher = "{launcher}"
        {extra}
        """


@pytest.mark.e2e
def test_each_rank_says_what_its_mpi_chose_and_the_job_says_it_once(mpi, plan_file, tmp_path):
    fam, launcher, probe = mpi
    recs = run_plan(plan_file, _plan(probe, launcher), tmp_path)
    by = {r["metrics"]["job_rank"]: r for r in recs}
    assert all(r["status"] == "ok" for r in recs), recs
    for rank, r in by.items():
        t = r["extra"]["transport"]
        assert t["node"] == [0, 1]      # both ranks on this node, as the library counts
        if fam == "openmpi":            # the bml's own choice, to the peer and to itself
            assert t["pml"] == "ob1" and t["btl"] == {str(1 - rank): "vader",
                                                      str(rank): "self"}, t
        else:                           # MPICH's device; its UCX endpoints' lanes
            assert t["device"] == "ch4:ucx" and t["nolocal"] == 0, t
            assert "posix/memory" in t["ucx"], t
    line = by[0]["extra"]["mpi_transport"]
    assert "mpi_transport" not in by[1]["extra"]
    want = ("Open MPI pml ob1; btl vader between ranks 0-1" if fam == "openmpi"
            else "MPICH ch4:ucx; shared memory between ranks 0-1")
    assert line.startswith(want), line
    report = run_cli("report", str(tmp_path / "res"), timeout=120)
    assert "MPI transport " + want in " ".join(report.stdout.split()), report.stdout[-3000:]


@pytest.mark.e2e
def test_open_mpis_mtl_ofi_names_its_libfabric_provider(plan_file, tmp_path, tmp_path_factory):
    _, launcher, probe = build_probe("openmpi", tmp_path_factory)
    recs = run_plan(plan_file, _plan(probe, launcher, 'env = { OMPI_MCA_pml = "cm", '
                                     'OMPI_MCA_mtl = "ofi", OMPI_MCA_mtl_ofi_provider_include '
                                     '= "tcp" }'), tmp_path)
    first = next(r for r in recs if r["metrics"]["job_rank"] == 0)
    assert first["extra"]["transport"]["ofi"] == ["tcp;ofi_rxm"], first["extra"]
    assert first["extra"]["mpi_transport"] == ("Open MPI pml cm, mtl ofi; mtl ofi, libfabric "
                                               "tcp;ofi_rxm between ranks 0-1")


@pytest.mark.e2e
def test_what_a_plan_asks_of_the_mpi_shows_in_what_is_recorded(mpi, plan_file, tmp_path):
    """Open MPI told to use tcp, MPICH told not to use its shared memory (MPIR_CVAR_NOLOCAL):
    each record says what the library then did, so `diff` shows the change."""
    fam, launcher, probe = mpi
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = run_plan(plan_file, _plan(probe, launcher), tmp_path / "a")
    line_a = next(r for r in first if r["metrics"]["job_rank"] == 0)["extra"]["mpi_transport"]
    ask = ('launcher_args = ["--mca", "btl", "self,tcp"]' if fam == "openmpi"
           else 'env = { MPIR_CVAR_NOLOCAL = "1" }')
    recs = run_plan(plan_file, _plan(probe, launcher, ask), tmp_path / "b")
    by = {r["metrics"]["job_rank"]: r for r in recs}
    if fam == "openmpi":
        assert by[0]["extra"]["transport"]["btl"]["1"] == "tcp"
        assert by[0]["extra"]["mpi_transport"] == "Open MPI pml ob1; btl tcp between ranks 0-1"
    else:
        assert by[0]["extra"]["transport"]["nolocal"] == 1
        assert by[0]["extra"]["transport"]["node"] == [0]
        assert "ch4:ucx network module" in by[0]["extra"]["mpi_transport"]
    diff = run_cli("diff", str(tmp_path / "a" / "res"), str(tmp_path / "b" / "res"),
                   timeout=120)
    assert "what the tasks ran with" in diff.stdout, diff.stdout
    assert "~ probe.mpi_transport: " + line_a + " -> " + by[0]["extra"]["mpi_transport"] \
        in diff.stdout, diff.stdout
