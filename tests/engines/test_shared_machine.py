"""Two nodes on one machine (network namespaces, containers, two Dask workers on one box)
share its cpus: the header counts the machine's cpus once and says which nodes share them,
and the run stores a warning naming the cpus (issue 17, item 5: "4 slots on 4 cpus; 2 nodes"
on a 2-cpu machine)."""
from __future__ import annotations

from manybench.engines.base import Node
from manybench.inventory.topology import Cpu
from manybench.report.header import notes
from manybench.results.contract import WARNING_KINDS, RunInfo, RunNotes, StoredNode
from manybench.run.warnings import start_warnings

CPUS = (Cpu(0, 0, 0, 0), Cpu(1, 1, 0, 0))


def test_nodes_on_one_machine_are_a_warning_naming_the_cpus_they_share():
    nodes = [Node("n1", 2, CPUS, machine="boot-a"), Node("n2", 2, CPUS, machine="boot-a"),
             Node("n3", 1, CPUS[:1], machine="boot-b")]
    found = [w for w in start_warnings([], nodes) if w[0] == "shared-machine"]
    assert "shared-machine" in WARNING_KINDS
    assert len(found) == 1, found
    text = found[0][2]
    assert "n1, n2" in text and "n3" not in text and "cpus 0-1" in text
    # nodes on machines of their own: nothing to say
    alone = [Node("n1", 2, CPUS, machine="a"), Node("n2", 2, CPUS, machine="b")]
    assert [w for w in start_warnings([], alone) if w[0] == "shared-machine"] == []


def test_the_header_counts_a_shared_machines_cpus_once_and_names_its_nodes():
    run = RunInfo(run_id="r", name="r", status="finished", started_ns=1, ended_ns=2,
                  plan_source="", plan_raw={}, argv=[], environment={},
                  notes=RunNotes(slots=4, cpus=4))
    nodes = [StoredNode("r", n, "127.0.0.1", 2, 2, machine="boot-a") for n in ("n1", "n2")]
    lines = notes(run, nodes)
    assert lines[0].startswith("placement: 4 slots on 2 cpus"), lines
    assert any("n1, n2 run on one machine" in ln and "share its 2 cpus" in ln for ln in lines)


def test_a_job_across_nodes_of_one_machine_is_told(plan_file):
    """Its ranks on two nodes of one machine may talk through shared memory (issue 31, item
    5: MPICH's "cross-node" 0.13 us between namespace nodes): said for that task only."""
    from manybench.plan import load_plan
    from manybench.plan.expand import expand
    plan = load_plan(plan_file("""
        name = "jobs"
        [placement]
        workers = 2
        [[task]]
        name = "across"
        command = ["true"]
        ranks = 2
        [[task]]
        name = "packed"
        command = ["true"]
        ranks = 2
        order = "pack"
        [[task]]
        name = "solo"
        command = ["true"]
        """), check_dirs=False)
    same = [Node("n1", 2, CPUS, machine="boot-a"), Node("n2", 2, CPUS, machine="boot-a")]
    found = [w for w in start_warnings(expand(plan), same) if w[0] == "job-one-machine"]
    assert "job-one-machine" in WARNING_KINDS
    assert len(found) == 1 and "task across" in found[0][2] and "n1, n2" in found[0][2], found
    apart = [Node("n1", 2, CPUS, machine="boot-a"), Node("n2", 2, CPUS, machine="boot-b")]
    assert [w for w in start_warnings(expand(plan), apart) if w[0] == "job-one-machine"] == []
