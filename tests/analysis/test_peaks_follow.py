"""Peaks follow what a slot holds: the cpus it was given (pin, cpus, bind, a rank's cpus) and
the precision its figure declares (SP or DP); the efficiency says which peak and why (the
node's stable clock: test_stable_clock.py)."""
from __future__ import annotations

import json
import os

import pytest

from manybench.analysis import summarize
from manybench.analysis.efficiency import evaluate
from manybench.inventory import cpu_peak as C
from manybench.inventory import peaks as P
from builders import S, T, pinfo, rec

# this machine: a Zen 5 VM of 2 cores at 4.3 GHz, 32 DP / 64 SP flops per cycle
ZEN5 = {"cores": 2, "base_ghz": 4.3, "dp_flops_per_cycle": 32, "sp_flops_per_cycle": 64}


def phase(i: int, point: str, kernel: str, metric: str, values: list[float | None],
          allowed: list[str | None], params: dict | None = None, node: str = "n",
          variant: str = ""):
    """One phase: slot s reports values[s] (None: no figure, as a rank past 0 of a job) and
    its cpus read back as allowed[s] (None: a record without the read-back)."""
    t0 = T + i * 10 * S
    recs = []
    for s, (v, cpus) in enumerate(zip(values, allowed)):
        metrics = {} if v is None else {metric: v}
        if cpus is not None:
            metrics["cpus_allowed"] = cpus
        r = rec(i, s, t0, t0, t0 + S, kernel=kernel, workers=len(values),
                params=dict(params or {}), metrics=metrics, variant=variant)
        r.node = node
        recs.append(r)
    return recs, pinfo(i, point, kernel=kernel, workers=len(values), params=params, t0=t0)


def efficiencies(peaks, *phases):
    records, infos = [], []
    for recs, info in phases:
        records += recs
        infos.append(info)
    return evaluate(summarize(records, infos), records, peaks)


# -- the cpus a slot holds ----------------------------------------------------------------------
def test_threads_and_ranks_on_the_same_cpus_get_the_same_peak():
    """examples/ranks-threads-004 at smoke size: one rank of 2 cpus (cpus_allowed 0-1, its
    OpenMP threads) against 2 ranks of 1 cpu; the job's figure is on rank 0's record."""
    pk = P.derive(ZEN5)
    eff = efficiencies(
        pk,
        phase(0, "threads", "mpi", "mflops", [10000.0], ["0-1"], {"ranks": 1, "cpus": 2}),
        phase(1, "ranks", "mpi", "mflops", [8000.0, None], ["0", "1"], {"ranks": 2, "cpus": 1}))
    threads, ranks = eff["threads"].efficiency, eff["ranks"].efficiency
    assert threads.peak == ranks.peak == pytest.approx(2 * 4.3 * 64 * 1000)
    assert threads.cores == ranks.cores == 2


def test_a_rank_of_64_cpus_is_set_against_64_cores():
    pk = P.derive(dict(ZEN5, cores=64))
    eff = efficiencies(pk, phase(0, "t", "mpi", "mflops", [1e6], ["0-63"],
                                 {"ranks": 1, "cpus": 64}))["t"].efficiency
    assert eff.peak == pytest.approx(64 * 4.3 * 64 * 1000) and eff.cores == 64
    # a record stored before the read-back: the plan's cpus
    eff = efficiencies(pk, phase(0, "t", "mpi", "mflops", [1e6], [None],
                                 {"ranks": 1, "cpus": 64}))["t"].efficiency
    assert eff.cores == 64


def test_smt_siblings_are_one_core_and_shared_cpus_are_counted_once():
    # 2 cores of 2 threads: cpus 0 and 2 are core 0, 1 and 3 core 1 (smt_siblings)
    env = {"physical_cores": 2, "smt_siblings": ["0,2", "1,3"],
           "peaks": P.derive(dict(ZEN5, cores=2)).as_dict()}
    pk = P.for_run(env)
    eff = efficiencies(
        pk,
        phase(0, "siblings", "command", "mflops", [1.0], ["0,2"]),        # one core
        phase(1, "two", "command", "mflops", [1.0], ["0-1"]),             # two cores
        phase(2, "floating", "command", "mflops", [1.0, 1.0, 1.0], ["0-3"] * 3))  # pin none
    core = 4.3 * 64 * 1000
    assert eff["siblings"].efficiency.peak == pytest.approx(core)
    assert eff["two"].efficiency.peak == pytest.approx(2 * core)
    assert eff["floating"].efficiency.peak == pytest.approx(2 * core)   # 3 slots, 2 cores


def test_declared_threads_decide_over_the_cpus_a_slot_may_use():
    """cpu.dgemm runs its `threads` (default 1) whatever its slot may use (pin = "none")."""
    pk = P.derive(dict(ZEN5, cores=8))
    eff = efficiencies(
        pk,
        phase(0, "one", "cpu.dgemm", "gflops", [30.0], ["0-7"]),
        phase(1, "four", "cpu.dgemm", "gflops", [100.0], ["0-7"], {"threads": 4}),
        phase(2, "cmd", "command", "gflops", [100.0], ["0-7"], {"threads": 3}),
        phase(3, "pinned", "cpu.dgemm", "gflops", [30.0, 30.0], ["0", "1"]))
    assert [eff[p].efficiency.peak / (4.3 * 32) for p in ("one", "four", "cmd", "pinned")] \
        == pytest.approx([1, 4, 3, 2])


# -- the precision the figure declares ----------------------------------------------------------
def test_himeno_is_set_against_the_single_precision_peak():
    pk = P.derive(ZEN5)
    eff = efficiencies(
        pk,
        phase(0, "himeno", "cpu.himeno", "mflops", [16500.0], ["0"]),
        phase(1, "hpl", "command", "gflops", [100.0], ["0"]))
    h = eff["himeno"].efficiency
    assert h.peak == pytest.approx(4.3 * 64 * 1000) and h.ratio == pytest.approx(0.06, abs=0.001)
    assert (h.precision, h.peak_name) == ("SP", "sp_gflops")
    assert "SP peak" in h.rule and "64 SP flops/cycle" in h.basis
    g = eff["hpl"].efficiency
    assert (g.precision, g.peak == pytest.approx(4.3 * 32)) == ("DP", True)


def test_single_precision_peaks_follow_the_core_and_the_overrides():
    # a core's SP flops: twice DP on any vector unit, the same for scalar code
    f = C.core_flops(C.parse_cpuinfo("vendor_id\t: AuthenticAMD\ncpu family\t: 26\n"
                                     "model\t\t: 2\nflags\t\t: sse2 avx fma avx2 avx512f\n\n"))
    assert (f.flops_per_cycle, f.sp_flops_per_cycle) == (32, 64)
    assert C.sp_per_dp(64) == 1 and C.sp_per_dp(128) == 2
    # [peaks] giving DP figures moves SP by the core's ratio; SP given wins
    assert P.derive(ZEN5, ("[peaks]", {"dp_gflops": 200})).get("sp_gflops") == 400
    assert P.derive(ZEN5, ("[peaks]", {"dp_flops_per_cycle": 16})).get("sp_gflops") == \
        pytest.approx(2 * 4.3 * 32)
    assert P.derive(ZEN5, ("[peaks]", {"dp_gflops": 200, "sp_gflops": 300})).get("sp_gflops") == 300
    # a run stored before SP peaks: its core's width says
    old = {"physical_cores": 2, "cpu": {"fma_width_bits": 512},
           "peaks": {"detected": {"cores": 2, "base_ghz": 4.3, "dp_flops_per_cycle": 32}}}
    assert P.for_run(old).get("sp_gflops") == pytest.approx(2 * 4.3 * 64)


# -- the efficiency says which peak and why ------------------------------------------------------
def test_the_efficiency_says_which_peak_and_why():
    env = {"physical_cores": 2,
           "cpu": {"fma_width_bits": 512, "base_source": "measured: one busy core's clock "
                   "(chains of dependent adds), the highest of 7 since boot, not the rated base"},
           "peaks": P.derive(ZEN5, measured={"base_ghz"}).as_dict()}
    e = efficiencies(P.for_run(env), phase(0, "p", "cpu.himeno", "mflops", [16500.0],
                                           ["0-1"], {"threads": 2}))["p"].efficiency
    assert e.basis.startswith("2 cores x 4.3 GHz x 64 SP flops/cycle = 275.2 GFLOPS per core")
    assert "the highest of 7 since boot" in e.basis
    assert "SP peak of the cores used" in e.rule and "cpus each slot was allowed" in e.rule


@pytest.mark.e2e
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 cpus")
def test_a_run_sets_one_slot_of_two_cpus_and_two_of_one_against_one_peak(tmp_path, plan_file):
    """On this machine: a command (it declares no threads) as one slot of 2 cpus and as 2
    slots of one cpu; the cpus its records read back make the peak, 2 cores' either way."""
    from conftest import run_cli
    plan = plan_file("""
        name = "peaks-follow"
        repeat = 1
        [placement]
        workers = 2
        pin = "core"
        [[task]]
        name = "h"
        command = ["echo", "MFLOPS measured : 1000"]
        metrics.mflops = 'MFLOPS measured : (?P<value>[0-9.]+)'
        [[variant]]
        name = "slots"
        [[variant]]
        name = "one"
        set = { "placement.workers" = 1, "placement.cpus" = 2 }
        """)
    out = tmp_path / "out"
    ran = run_cli("run", plan, "-o", str(out))
    assert ran.returncode == 0, ran.stderr
    rep = run_cli("report", str(out), "--json")
    assert rep.returncode == 0, rep.stderr
    [run] = json.loads(rep.stdout)["runs"]
    effs = {p["variant"]: p["efficiency"] for t in run["tasks"] for p in t["points"]}
    assert effs["slots"]["peak"] == effs["one"]["peak"], effs
    assert effs["slots"]["cores"] == effs["one"]["cores"] == 2
    assert effs["one"]["precision"] == "SP" and "SP flops/cycle" in effs["one"]["basis"]
