"""`manybench info`: this node's inventory and theoretical peaks, as text and JSON; [peaks] wins."""
from __future__ import annotations

import json
import os
import sqlite3

import pytest

from conftest import run_cli
from manybench.inventory import environment, peaks
from manybench.inventory.info import info_text

SECTIONS = ("node", "os", "kernel", "cpu", "cores", "threads", "numa", "node distances",
            "memory", "simd", "fma", "DP flops/cycle/core", "frequency", "theoretical peaks",
            "dp_gflops", "dp_gflops_max", "mem_bw_mb_s")


@pytest.mark.e2e
def test_info_prints_sections_and_peaks():
    out = run_cli("info")
    assert out.returncode == 0, out.stderr
    for word in SECTIONS:
        assert word in out.stdout, word
    env = environment.collect()
    assert env["kernel"] in out.stdout
    # the peak shown is the formula's: cores x base GHz x flops/cycle, or "unknown"
    p = env["peaks"]["values"]
    line = next(l for l in out.stdout.splitlines() if l.strip().startswith("dp_gflops "))
    if p["dp_gflops"] is None:
        assert "unknown" in line
    else:
        assert p["dp_gflops"] == p["cores"] * p["base_ghz"] * p["dp_flops_per_cycle"]
        assert "cores x" in line and "flops/cycle" in line


@pytest.mark.e2e
def test_info_json_parses():
    out = run_cli("info", "--json")
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    for key in ("hostname", "cpu_model", "physical_cores", "logical_cpus", "sockets", "numa",
                "memory_total", "kernel", "cpu", "peaks"):
        assert key in d, key
    assert set(peaks.FIGURES) <= set(d["peaks"]["values"])
    assert d["cpu"]["simd_bits"] in (64, 128, 256, 512) or d["cpu"]["simd"] == "sve"
    assert d["cpu"]["dp_flops_per_cycle"] > 0
    for node in d["numa"] or []:
        assert len(node["distances"]) == len(d["numa"])     # a square matrix, as numactl -H
        assert node["distances"][d["numa"].index(node)] == 10


@pytest.mark.e2e
def test_plan_peaks_win(plan_file):
    plan = plan_file("""
        [peaks]
        dp_gflops = 2150.4
        mem_bw_mb_s = 128000
        mb_s = 750
        [[task]]
        name = "s"
        kernel = "null"
    """)
    out = run_cli("info", "--plan", plan)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "2,150.4 GFLOPS" in text and "128,000 MB/s" in text and "750" in text
    assert text.count("[peaks]") >= 3
    d = json.loads(run_cli("info", "--plan", plan, "--json").stdout)
    v = d["peaks"]["values"]
    assert (v["dp_gflops"], v["mem_bw_mb_s"], v["mb_s"]) == (2150.4, 128000, 750)
    assert d["peaks"]["basis"]["dp_gflops"] == "[peaks]"


@pytest.mark.e2e
def test_env_override_and_inputs_feed_formulas(plan_file):
    plan = plan_file("""
        [peaks]
        cores = 10
        base_ghz = 2.0
        dp_flops_per_cycle = 16
        [[task]]
        name = "s"
        kernel = "null"
    """)
    env = {**os.environ, "MANYBENCH_PEAKS": "mem_channels=8 mem_mt_s=3200"}
    d = json.loads(run_cli("info", "--plan", plan, "--json", env=env).stdout)
    v = d["peaks"]["values"]
    assert v["dp_gflops"] == 320.0                       # 10 x 2.0 x 16
    assert v["mem_bw_mb_s"] == 8 * 3200 * 8              # channels x MT/s x 8 bytes
    assert d["peaks"]["basis"]["mem_bw_mb_s"] == "8 channels x 3200 MT/s x 8 bytes"


@pytest.mark.e2e
def test_bad_plan_is_a_usage_error(plan_file):
    plan = plan_file("""
        [peaks]
        dp_gflops = -1
        [[task]]
        name = "s"
        kernel = "null"
    """)
    out = run_cli("info", "--plan", plan)
    assert out.returncode == 2 and "peaks" in out.stderr and "Traceback" not in out.stderr
    assert run_cli("info", "--plan", "/nonexistent.toml").returncode == 2


def test_info_text_of_a_two_node_machine():
    env = {"hostname": "epyc", "kernel": "5.4.0", "cpu_model": "AMD EPYC 7351", "sockets": 2,
           "physical_cores": 32, "logical_cpus": 64, "memory_total": 512 << 30,
           "numa": [{"node": 0, "cpus": "0-15", "memory_total": 256 << 30, "distances": [10, 32]},
                    {"node": 1, "cpus": "16-31", "memory_total": 256 << 30, "distances": [32, 10]}],
           "cpu": {"microarch": "Zen/Zen+", "simd": "avx2", "simd_bits": 256, "fma": True,
                   "fma_units": 2, "fma_width_bits": 128, "dp_flops_per_cycle": 8.0,
                   "base_mhz": 2400.0, "base_source": "cpufreq base_frequency",
                   "max_mhz": 2900.0, "max_source": "cpufreq cpuinfo_max_freq"},
           "peaks": peaks.derive({"cores": 32, "base_ghz": 2.4, "max_ghz": 2.9,
                                  "dp_flops_per_cycle": 8}).as_dict()}
    text = info_text(env)
    assert "2 sockets, 32 cores, 64 threads" in text
    assert "node 1 cpus: 16-31, memory 256.0 GiB" in text
    assert "  0:   10  32" in text and "  1:   32  10" in text
    assert "2 x 128-bit FMA pipes per core -> 8 DP flops/cycle/core" in text
    assert "614.4 GFLOPS" in text and "742.4 GFLOPS" in text     # 32 x 2.4 x 8, 32 x 2.9 x 8
    assert "channels unknown" in text and "unknown" in text.split("mem_bw_mb_s")[1]


@pytest.mark.e2e
def test_runs_store_the_peaks_of_their_machine(plan_file, tmp_path):
    plan = plan_file("""
        [[task]]
        name = "s"
        kernel = "null"
    """)
    out = run_cli("run", plan, "-o", str(tmp_path / "res"), "-q")
    assert out.returncode == 0, out.stderr
    db = sqlite3.connect(tmp_path / "res" / "results.db")
    env = json.loads(db.execute("SELECT environment FROM runs").fetchone()[0])
    assert set(peaks.FIGURES) <= set(env["peaks"]["values"])
    assert env["peaks"]["detected"]["cores"] == env["physical_cores"]
    assert env["cpu"]["dp_flops_per_cycle"] > 0


@pytest.mark.e2e
def test_the_kernels_build_is_recorded_and_shown():
    """How the C kernels were compiled (setup.py's flags: portable x86-64-v2 with cloned hot
    loops, unless MANYBENCH_MARCH asked for one processor), the cpu flags the build requires
    and the clone this cpu runs are in every environment and in `manybench info`."""
    from manybench import _native, build_isa
    build = environment.collect()["build"]
    assert build == {**_native.build_info(), "requires": build_isa.build_isa()["flags"]}
    assert "-O3" in build["cflags"] and build["compiler"] and build["compiler_version"]
    assert f"-march={build['march']}" in build["cflags"] or "-march=native" in build["cflags"]
    assert ("-DNB_NO_CLONES" in build["cflags"]) != bool(build["clones"])
    assert "sse4_2" in build["requires"]
    out = run_cli("info").stdout
    flags = " ".join(build["cflags"])
    assert f"built by {build['compiler']} {build['compiler_version']} with {flags}" in out
    assert f"for {build['march']}" in out
    if build["clones"]:
        assert f"hot loops cloned for {', '.join(build['clones'])}: {build['clone']} here" in out
