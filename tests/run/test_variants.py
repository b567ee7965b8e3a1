"""Variants as comparisons need them: scoped to tasks, binding cpus and memory (read back from
/proc, agreeing with numactl's own view), cpus per slot, cpu use against the pin, swept
placement axes as columns, per-slot resources; and plans that get these wrong refused."""
from __future__ import annotations

import json
import os
import shutil

import pytest

from conftest import export_json, run_cli
from report_text import table_text
from manybench.inventory.topology import Cpu
from manybench.kernels.binding import (CPU_BOUND_SHARE, OTHERS_SHARE, cpu_bound, cpu_shared,
                                       others_took)
from manybench.plan import PlanError, parse_plan
from manybench.plan.expand import expand
from manybench.run.placement import cpu_groups, place

NUMACTL = shutil.which("numactl")
needs_numactl = pytest.mark.skipif(NUMACTL is None, reason="numactl is not installed")


def _plan(text: str):
    return parse_plan(text, check_dirs=False)


def test_a_variant_scoped_to_a_task_leaves_the_others_run_once():
    phases = expand(_plan("""
        repeat = 2
        [[task]]
        name = "write"
        kernel = "io.write"
        size = "1MiB"
        [[task]]
        name = "read"
        kernel = "io.read"
        size = "1MiB"
        [[variant]]
        name = "keep"
        tasks = ["read"]
        set = { "task.read.cache" = "keep" }
        [[variant]]
        name = "drop"
        tasks = ["read"]
        """))
    writes = [p for p in phases if p.task.name == "write"]
    reads = [p for p in phases if p.task.name == "read"]
    assert [p.variant for p in writes] == ["", ""]            # not re-run per variant
    assert [p.variant for p in reads] == ["keep", "drop", "keep", "drop"]   # A B A B
    assert [p.params["cache"] for p in reads] == ["keep", "drop"] * 2
    # the phases a comparison sets side by side share their position in the task
    assert len({json.loads(p.point)["pair"] for p in reads}) == 1


def test_variants_with_setup_run_one_after_the_other():
    phases = expand(_plan("""
        repeat = 2
        [[task]]
        name = "n"
        kernel = "null"
        [[variant]]
        name = "a"
        setup = [["true"]]
        [[variant]]
        name = "b"
        """))
    assert [p.variant for p in phases] == ["a", "a", "b", "b"]


def test_swept_placement_axes_travel_with_the_records_params():
    plan = _plan("""
        [placement]
        pin = ["core", "none"]
        [[task]]
        name = "n"
        kernel = "null"
        [[task]]
        name = "m"
        kernel = "null"
        [[variant]]
        name = "numa"
        tasks = ["m"]
        bind = "numa"
        [[variant]]
        name = "plain"
        tasks = ["m"]
        """)
    phases = expand(plan)
    n = [p for p in phases if p.task.name == "n"]
    assert [p.record_params() for p in n] == [{"pin": "core"}, {"pin": "none"}]
    m = [p for p in phases if p.task.name == "m"]
    assert {(p.variant, p.record_params()["bind"]) for p in m} == {("numa", "numa"),
                                                                    ("plain", "")}


def test_cpus_per_slot_take_whole_cores_of_one_numa_node():
    # 2 NUMA nodes x 4 cores x 2 threads: siblings are cpu + 8
    cpus = tuple(Cpu(c, c % 8, 0, (c % 8) // 4) for c in range(16))
    assert [tuple(c.id for c in g) for g in cpu_groups("pack", 2, cpus)][:2] == [(0, 1), (2, 3)]
    # spread: node 0's first pair, then node 1's
    spread = [tuple(c.id for c in g) for g in cpu_groups("spread", 2, cpus)]
    assert spread[:2] == [(0, 1), (4, 5)]
    slots = place(2, "spread", "core", cpus, per_slot=2)
    assert [s.affinity for s in slots] == [(0, 1), (4, 5)] and all(s.spin for s in slots)
    assert all(s.cpu == -1 for s in slots)                 # more than one cpu: no single cpu
    whole = place(2, "spread", "core", cpus, per_slot="numa")
    assert [len(s.affinity) for s in whole] == [8, 8]
    assert {c for s in whole for c in s.affinity} == set(range(16))


def test_bind_sets_cpus_and_memory_nodes_as_numactl_would():
    cpus = tuple(Cpu(c, c, 0, c // 2) for c in range(4))    # 2 NUMA nodes of 2 cpus
    core = place(2, "spread", "core", cpus, bind="core")
    assert [(s.affinity, s.mems) for s in core] == [((0,), (0,)), ((2,), (1,))]
    numa = place(2, "spread", "core", cpus, bind="numa")
    assert [(s.affinity, s.mems) for s in numa] == [((0, 1), (0,)), ((2, 3), (1,))]
    free = place(2, "spread", "core", cpus, bind="none")
    assert all(s.affinity == (0, 1, 2, 3) and s.mems is None and not s.spin for s in free)
    per_slot = place(2, "spread", "core", cpus, bind={"cpus": ["0-1", "3"], "mems": "1"})
    assert [(s.affinity, s.mems) for s in per_slot] == [((0, 1), (1,)), ((3,), (1,))]
    assert all(s.mems is None for s in place(2, "spread", "core", cpus))   # pin alone


@pytest.mark.e2e
@needs_numactl
def test_a_bound_slot_runs_with_what_it_asked_read_back_and_seen_by_numactl(plan_file,
                                                                            tmp_path):
    """numactl --show, run as the task, sees the binding the record reports."""
    plan = plan_file("""
        [[task]]
        name = "show"
        command = ["numactl", "--show"]
        metrics.physcpubind = 'physcpubind: (?P<value>[\\d ]+?)\\s*$'
        metrics.policy = 'policy: (?P<value>\\w+)'
        metrics.membind = 'membind: (?P<value>[\\d ]+?)\\s*$'
        [[variant]]
        name = "numa"
        bind = "numa"
        [[variant]]
        name = "none"
        bind = "none"
        [[variant]]
        name = "pinned"
        """)
    out = str(tmp_path / "res")
    res = run_cli("run", plan, "-o", out, "-q")
    assert res.returncode == 0, res.stderr
    rows = {r["variant"]: r for r in export_json(out)}
    numa, free, pinned = rows["numa"]["metrics"], rows["none"]["metrics"], rows["pinned"]["metrics"]
    assert numa["policy"] == "bind"
    assert numa["mempolicy"] == "bind:" + ",".join(map(str, _nodes(numa["membind"])))
    assert free["policy"] == "default" and free["mempolicy"] == "default"
    allowed = sorted(os.sched_getaffinity(0))
    assert _ids(free["cpus_allowed"]) == allowed              # unbound: every cpu
    assert _nodes(free["physcpubind"]) == allowed
    assert len(_ids(pinned["cpus_allowed"])) == 1             # pin = core: one cpu
    assert _nodes(pinned["physcpubind"]) == _ids(pinned["cpus_allowed"])


def _nodes(value) -> list[int]:
    """numactl's "membind: 0 1" as extracted (one number arrives as a float)."""
    if isinstance(value, (int, float)):
        return [int(value)]
    return [int(x) for x in str(value).split()]


def _ids(text: str) -> list[int]:
    from manybench.kernels.binding import parse_cpulist
    return parse_cpulist(str(text))


@pytest.mark.alone     # cpu use of a pinned task: other tests' load takes its cpu
@pytest.mark.e2e
def test_a_multithreaded_task_held_to_one_cpu_is_flagged_cpu_bound(plan_file, tmp_path):
    """Two busy processes on a slot pinned to one cpu cannot use more than that cpu; the
    report says the pin is what holds the task back (the bwa -t 2 story), or, where other
    load shared that cpu (a busy machine), that others took part of it
    (tests/run/test_shared_pin.py makes that case on purpose)."""
    plan = plan_file("""
        [[task]]
        name = "two"
        command = ["sh", "-c", "b() {{ i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; }}; b & b; wait"]
        """)
    out = str(tmp_path / "res")
    res = run_cli("run", plan, "-o", out, "-q")
    assert res.returncode == 0, res.stderr
    (row,) = export_json(out)
    m = row["metrics"]
    assert m["cpus_allowed"] and len(_ids(m["cpus_allowed"])) == 1
    assert 0 < m["cpu_util"] <= 1.05                          # one cpu's worth, at most
    assert m["cpus_busy_share"] >= CPU_BOUND_SHARE, m        # its two processes fill it
    rep = run_cli("report", out, "--all").stdout     # the cpu use column and its note
    cell = table_text(rep)
    if others_took(m) < OTHERS_SHARE:          # alone at its pin: it used it all
        assert cpu_bound(m) and not cpu_shared(m), m
        assert "CPU-BOUND AT ITS PIN" in cell and "SHARED PIN: others" not in cell, rep
    else:                                      # others took their share of its cpu
        assert cpu_shared(m) and not cpu_bound(m), m
        assert "CPU-BOUND AT A SHARED PIN: others took" in cell, rep


@pytest.mark.e2e
def test_each_concurrent_slot_gets_its_own_resource_id_and_nearest_scratch(plan_file,
                                                                           tmp_path):
    near = tmp_path / "near"
    near.mkdir()
    numa = sorted({c.numa for c in __import__("manybench.inventory.topology",
                                               fromlist=["topology"]).topology()})
    dirs = ", ".join(f'numa{n} = "{near}"' for n in numa)
    plan = plan_file(f"""
        keep = true
        [placement]
        workers = 2
        resources = {{ gpu = ["g0", "g1"], nic = {{ ids = ["m0", "m1"], env = "UCX_NET_DEVICES" }}, scratch = {{ {dirs} }} }}
        [[task]]
        name = "c"
        command = ["sh", "-c", "echo dev=$CUDA_VISIBLE_DEVICES arg={{gpu}} nic=$UCX_NET_DEVICES; pwd"]
        metrics.dev = 'dev=(?P<value>\\S+)'
        metrics.arg = 'arg=(?P<value>\\S+)'
        metrics.nic = 'nic=(?P<value>\\S+)'
        metrics.cwd = '^(?P<value>/\\S+)$'
        """)
    out = str(tmp_path / "res")
    res = run_cli("run", plan, "-o", out, "-q")
    assert res.returncode == 0, res.stderr
    rows = sorted(export_json(out), key=lambda r: r["slot"])
    assert [(r["metrics"]["dev"], r["metrics"]["arg"], r["metrics"]["nic"]) for r in rows] == \
        [("g0", "g0", "m0"), ("g1", "g1", "m1")]
    assert all(r["metrics"]["cwd"].startswith(str(near)) for r in rows)


@pytest.mark.e2e
def test_more_concurrent_slots_than_resource_ids_is_refused_before_running(plan_file,
                                                                          tmp_path):
    plan = plan_file("""
        slots = 3
        [placement]
        workers = 3
        resources = { gpu = [0, 1] }
        [[task]]
        name = "n"
        kernel = "null"
        """)
    res = run_cli("run", plan, "-o", str(tmp_path / "res"), "-q")
    assert res.returncode == 2
    assert "placement.resources.gpu: 2 ids" in res.stderr and "Traceback" not in res.stderr


@pytest.mark.parametrize("text, expected", [
    ('[[variant]]\nname = "a"\ntasks = ["nope"]', "variant.a.tasks: unknown task 'nope'"),
    ('[[variant]]\nname = "a"\nwrap = ["ch-run", "{image}", "--"]',
     "variant.a.wrap: template names unknown value 'image'"),
    ('[[variant]]\nname = "a"\nbind = { cpus = "3-1" }', "variant.a.bind.cpus: not a cpu list"),
    ('[[variant]]\nname = "a"\nbind = "socket"', "variant.a.bind: expected one of none, core, "
                                                 "numa"),
    ('[[variant]]\nname = "a"\nsetup = ["tuned-adm profile x"]',
     "variant.a.setup: expected a list of commands"),
    ('baseline = "b"\n[[variant]]\nname = "a"', "baseline: no variant named 'b'"),
    ('[placement]\ncpus = 0', "placement.cpus: expected a cpu count per slot"),
    ('[placement]\nresources = { gpu = [0, 0] }', "placement.resources.gpu: ids must be distinct"),
    ('[placement]\nresources = { scratch = { socket0 = "/x" } }',
     "placement.resources.scratch.socket0: expected numaN"),
    ('[reference]\n"nope.mb_s" = { value = 1 }', "reference.nope.mb_s: unknown task 'nope'"),
    ('[reference]\n"n.mb_s" = { value = 1, lower = 0.1 }', "reference.n.mb_s"),
])
def test_plans_that_get_variants_and_placement_wrong_are_refused(text, expected):
    head = '[[task]]\nname = "n"\nkernel = "null"\n'
    with pytest.raises(PlanError) as e:
        _plan(text + "\n" + head)
    assert expected in str(e.value), str(e.value)


def test_a_wrapped_variant_of_a_kernel_that_cannot_run_wrapped_is_refused():
    with pytest.raises(PlanError) as e:
        _plan("""
            [[task]]
            name = "mk"
            kernel = "meta.mkdir"
            total = 10
            [[variant]]
            name = "ch"
            wrap = ["ch-run", "/img", "--"]
            """)
    assert "variant.ch.wrap: task 'mk': kernel meta.mkdir cannot run inside a wrap" in \
        str(e.value)


def test_a_wrap_may_name_a_parameter_every_task_it_wraps_has():
    """docs/plan.md: a wrap is templated with the task's parameters ({ranks} of a parallel
    task: ch-run --join-ct={ranks}); a name one of its tasks lacks is refused."""
    tasks = ('[[task]]\nname = "p"\ncommand = ["prog", "{size}"]\nranks = 2\nsize = "1"\n'
             '[[task]]\nname = "q"\ncommand = ["prog"]\nranks = 1\n')
    plan = _plan('[[variant]]\nname = "a"\nwrap = ["w", "--ct={ranks}", "--"]\n' + tasks)
    assert plan.variants[0].wrap == ["w", "--ct={ranks}", "--"]
    with pytest.raises(PlanError) as e:
        _plan('[[variant]]\nname = "a"\nwrap = ["w", "{size}", "--"]\n' + tasks)
    assert "variant.a.wrap: template names unknown value 'size'" in str(e.value)
    _plan('[[variant]]\nname = "a"\ntasks = ["p"]\nwrap = ["w", "{size}", "--"]\n' + tasks)
