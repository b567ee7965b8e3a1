"""Output parsers (parse = "fio", ...): each on its tool's real or sample output, each
refusing the others' output with ParseError, and fio and GNU time end to end through the CLI.

The expected numbers are read off the fixture files under fixtures/parsers/.
"""
from __future__ import annotations

import json
import os
import re
import shutil

import pytest

from conftest import export_json, run_cli
from suite_paths import FIXTURES
from manybench.parsers import MODULES, PARSERS, ParseError

FIX = FIXTURES / "parsers"


def text(name: str) -> str:
    return (FIX / name).read_text()


def run(parser: str, name: str, stream: str = "stdout") -> dict:
    out = text(name)
    return PARSERS[parser]("", out) if stream == "stderr" else PARSERS[parser](out, "")


# which parsers each fixture belongs to (hpcc's report holds both STREAM and HPL)
OWNERS = {
    "fio_randrw_2jobs.json": {"fio"}, "fio_write_jsonplus.json": {"fio"},
    "fio_read_json_normal.txt": {"fio"},
    **{p.name: {"ior"} for p in FIX.glob("ior_*.txt")},
    **{p.name: {"mdtest"} for p in FIX.glob("mdtest_*.txt")},
    "stream_5.10_omp2.txt": {"stream"}, "hpcc_hpccoutf.txt": {"stream", "hpl"},
    "himeno_xs.txt": {"himeno"}, "himeno_mpi_sample.txt": {"himeno"},
    "hpl_2.3_np2.txt": {"hpl"},
    "gnutime_dd.stderr": {"gnutime"}, "gnutime_exit3.stderr": {"gnutime"},
}


def test_registry_lists_every_parser():
    assert set(PARSERS) == {"fio", "ior", "mdtest", "stream", "himeno", "hpl", "gnutime",
                            "osu", "imb"}
    assert len(MODULES) == len(PARSERS)
    assert sorted(p.name for p in FIX.iterdir() if p.suffix != ".md") == sorted(OWNERS)


@pytest.mark.parametrize("parser", sorted(PARSERS))
def test_parse_error_on_other_tools_output_and_on_nothing(parser):
    for name, owners in OWNERS.items():
        if parser in owners:
            continue
        out = text(name)
        with pytest.raises(ParseError):
            PARSERS[parser](out, out)
    for junk in ("", "Segmentation fault (core dumped)\n", "{not json", "{}\n"):
        with pytest.raises(ParseError) as e:
            PARSERS[parser](junk, junk)
        assert str(e.value)                     # a short reason, not an empty message


# ---------------------------------------------------------------------------------- fio

def test_fio_mixed_two_jobs_summed_and_per_job():
    m = run("fio", "fio_randrw_2jobs.json")
    assert m["jobs"] == 2 and m["job_errors"] == 0
    assert m["read_mib_s"] == (47473311 + 48742400) / 2**20
    assert m["write_mib_s"] == (21285770 + 21162666) / 2**20
    assert m["read_iops"] == 11590.163934 + 11900.0
    assert m["write_iops"] == 5196.721311 + 5166.666667
    assert m["read_bytes"] == 2895872 + 2924544 and m["read_ios"] == 707 + 714
    assert m["read_clat_mean_us"] == pytest.approx(
        (80688.862801 * 707 + 78625.704482 * 714) / (707 + 714) / 1000)
    assert m["read_clat_max_us"] == 1344.031
    # plain json holds no histograms: percentiles over jobs are the worst job's
    assert m["read_clat_p99_us"] == 528.384 and m["read_clat_p50_us"] == 66.048
    assert m["write_clat_p99_us"] == 85.504
    assert m["runtime_s"] == 0.06
    assert m["job0_read_mib_s"] == 47473311 / 2**20 and m["job1_read_iops"] == 11900.0
    assert m["job0_read_clat_p99_us"] == 448.512 and m["job1_read_clat_p99_us"] == 528.384
    assert m["job0_write_clat_p50_us"] == 5.088 and m["job1_runtime_s"] == 0.059
    assert not any(k.startswith("trim_") for k in m)


def test_fio_json_plus_percentiles_from_bins_match_fios_own():
    m = run("fio", "fio_write_jsonplus.json")
    assert m["write_mib_s"] == 1000.0 and m["write_iops"] == 16000.0
    assert m["write_bytes"] == 2097152 and m["write_ios"] == 32
    assert m["write_clat_p50_us"] == 16.192
    assert m["write_clat_p90_us"] == 62.72
    assert m["write_clat_p95_us"] == 119.296
    assert m["write_clat_p99_us"] == 150.528 and m["write_clat_p99_9_us"] == 150.528
    assert m["write_clat_max_us"] == 151.382 and m["runtime_s"] == 0.001
    assert "jobs" in m and not any(k.startswith(("read_", "job0_")) for k in m)


def test_fio_json_plus_bins_merged_over_jobs():
    job = {"jobname": "j", "error": 0, "job_runtime": 1000,
           "read": {"io_bytes": 4096, "bw_bytes": 4096, "iops": 1.0, "total_ios": 2,
                    "clat_ns": {"min": 1000, "max": 2000, "mean": 1500.0, "N": 2,
                                "percentile": {"50.000000": 1000, "99.000000": 2000},
                                "bins": {"1000": 1, "2000": 1}}}}
    other = json.loads(json.dumps(job))
    other["read"]["clat_ns"].update(min=3000, max=3000, mean=3000.0,
                                    bins={"3000": 2},
                                    percentile={"50.000000": 3000, "99.000000": 3000})
    m = PARSERS["fio"](json.dumps({"fio version": "fio-3.33", "jobs": [job, other]}), "")
    assert m["read_clat_p50_us"] == 2.0          # 4 samples: 1000, 2000, 3000, 3000 ns
    assert m["read_clat_p99_us"] == 3.0
    assert m["read_clat_mean_us"] == 2.25 and m["read_clat_max_us"] == 3.0


def test_fio_text_before_and_after_the_json():
    out = text("fio_read_json_normal.txt")
    assert not out.startswith("{") and "Run status group" in out
    m = PARSERS["fio"](out, "")
    assert m["read_mib_s"] == 466033777 / 2**20 and m["read_iops"] == 444.444444
    assert m["read_bytes"] == 4194304 and m["read_clat_p50_us"] == 946.176
    assert m["runtime_s"] == 0.008 and m["jobs"] == 1
    assert not any(k.startswith("write_") for k in m)
    # fio's text report alone is not its JSON
    with pytest.raises(ParseError, match="output-format=json"):
        PARSERS["fio"](out[out.index("\n}\n") + 3:], "")


# ---------------------------------------------------------------------------------- IOR

# Real outputs of IOR 2.10.3, 3.3.0, 4.0.0 and 4.1.0+dev (hpc/ior), run here:
# fixtures/parsers/README.md
IOR = sorted(p.name for p in FIX.glob("ior_[34]*.txt"))     # 3.x and 4.x summaries
_IOR_TEXT = {"Max(MiB)": "max_mib_s", "Min(MiB)": "min_mib_s", "Mean(MiB)": "mean_mib_s",
             "Max(OPs)": "ops_max", "Min(OPs)": "ops_min", "Mean(OPs)": "ops_mean",
             "Mean(s)": "mean_s", "Stonewall(s)": "stonewall_s",
             "Stonewall(MiB)": "stonewall_mib_s"}
_IOR_JSON = {"bwMaxMIB": "max_mib_s", "bwMinMIB": "min_mib_s", "bwMeanMIB": "mean_mib_s",
             "bwStdMIB": "stddev_mib_s", "OPsMax": "ops_max", "OPsMin": "ops_min",
             "OPsMean": "ops_mean", "OPsSD": "ops_stddev", "MeanTime": "mean_s"}


def ior_printed(out: str) -> dict[str, float]:
    """What IOR printed in its summary, named as the parser names it, read naively."""
    want: dict[str, float] = {}
    if "Summary of all tests:" in out:
        lines = out[out.index("Summary of all tests:"):].splitlines()
        header = lines[1].split()
        for line in lines[2:]:
            cells = line.split()
            if not cells or cells[0] not in ("write", "read"):
                break
            stddev = 0
            for name, cell in zip(header[1:], cells[1:]):
                key = _IOR_TEXT.get(name)
                if name == "StdDev":
                    key = ("stddev_mib_s", "ops_stddev")[stddev]
                    stddev += 1
                if key and cell != "NA":
                    want[f"{cells[0]}_{key}"] = float(cell)
    else:
        doc = json.loads(out[out.index("{"):])
        for s in doc["summary"]:
            for key, name in _IOR_JSON.items():
                want[f"{s['operation']}_{name}"] = float(s[key])
    return want


@pytest.mark.parametrize("name", IOR)
def test_ior_metrics_are_what_ior_printed_field_by_field(name):
    out = text(name)
    m = run("ior", name)
    want = ior_printed(out)
    assert want and {k: m[k] for k in want} == want
    for op, mib, mb in re.findall(r"^Max (Write|Read):\s+([\d.]+) MiB/sec \(([\d.]+) MB/sec\)",
                                  out, re.MULTILINE):
        assert (m[f"{op.lower()}_max_mib_s"], m[f"{op.lower()}_max_mb_s"]) == (float(mib),
                                                                              float(mb))
    assert m["tasks"] == 2 and m["transfer_size_bytes"] == 1048576


@pytest.mark.parametrize("version", ["3.3.0", "4.0.0", "4.1.0+dev"])
def test_ior_stonewall_with_wear_out(version):
    out = text(f"ior_{version}_np2_stonewall_wearout.txt")
    m = run("ior", f"ior_{version}_np2_stonewall_wearout.txt")
    lo, hi, min_gib, mean_gib, secs = re.search(
        r"stonewalling pairs accessed min: (\d+) max: (\d+) -- min data: ([\d.]+) GiB mean "
        r"data: ([\d.]+) GiB time: ([\d.]+)s", out).groups()
    assert (m["write_stonewall_pairs_min"], m["write_stonewall_pairs_max"]) == (int(lo), int(hi))
    assert (m["write_stonewall_min_gib"], m["write_stonewall_mean_gib"],
            m["write_stonewall_time_s"]) == (float(min_gib), float(mean_gib), float(secs))
    assert m["write_stonewall_s"] > 0 and m["write_stonewall_mib_s"] > 0


def test_ior_2_10_tables_after_each_test():
    """IOR 2.10.3 (a real run of a -f script with two tests): a table after each test."""
    out = text("ior_2.10.3_np2_two_tests.txt")
    m = run("ior", "ior_2.10.3_np2_two_tests.txt")
    assert m["tests"] == 2
    tables = re.findall(r"^(write|read)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+"
                        r"([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+EXCEL",
                        out, re.MULTILINE)
    assert len(tables) == 4
    names = ("max_mib_s", "min_mib_s", "mean_mib_s", "stddev_mib_s", "ops_max", "ops_min",
             "ops_mean", "ops_stddev", "mean_s")
    for i, (op, *nums) in enumerate(tables):
        prefix = "" if i < 2 else "test1_"
        assert [m[f"{prefix}{op}_{n}"] for n in names] == [float(x) for x in nums]
    first = re.search(r"Max Write: ([\d.]+) MiB/sec \(([\d.]+) MB/sec\)", out).groups()
    assert (m["write_max_mib_s"], m["write_max_mb_s"]) == tuple(map(float, first))


def test_ior_json_that_a_strict_reader_refuses():
    good = text("ior_3.3.0_np2_json.txt")
    bad = good.replace('"Machine": "Linux ', '"Machine": "Linux "', 1)
    with pytest.raises(ValueError):
        json.loads(bad[bad.index("{"):])
    assert PARSERS["ior"](bad, "") == PARSERS["ior"](good, "")


# ------------------------------------------------------------------------------- mdtest
# Real outputs of mdtest 3.3.0, 4.0.0 and 4.1.0+dev (hpc/ior), run here: fixtures/parsers/README.md

MDTEST = sorted(p.name for p in FIX.glob("mdtest_*.txt"))
_OPS = {"creation": "create", "stat": "stat", "read": "read", "rename": "rename",
        "removal": "remove"}


def printed_rows(out: str) -> dict[tuple[str, str], list[float]]:
    """(table kind, row) -> the numbers the tool printed, read naively line by line."""
    rows, kind = {}, None
    for line in out.splitlines():
        if line.startswith("SUMMARY"):
            kind = "time" if line.startswith("SUMMARY time") else "rate"
        elif kind and line.strip().split()[:1] and line.split()[0] in ("Directory", "File",
                                                                       "Tree"):
            words = line.replace(":", " ").split()
            rows[(kind, f"{words[0]} {words[1]}")] = [float(w) for w in words[2:]]
    return rows


@pytest.mark.parametrize("name", MDTEST)
def test_mdtest_metrics_are_what_mdtest_printed_field_by_field(name):
    out = text(name)
    m = run("mdtest", name)
    rows = printed_rows(out)
    assert rows, name
    for (kind, row), nums in rows.items():
        what, op = row.split()
        base = {"Directory": "dir", "File": "file", "Tree": "tree"}[what] + "_" + _OPS[op] + \
            ("_time_s" if kind == "time" else "_ops_s")
        if all(v == 0 for v in nums):
            assert base not in m                  # a phase this run did not do
            continue
        if len(nums) == 7:
            rank = base.replace("_ops_s", "_rank_ops_s").replace("_time_s", "_rank_time_s")
            assert [m[rank + s] for s in ("_max", "_min", "_mean")] == nums[:3]
            nums = nums[3:]
        assert [m[base + s] for s in ("_max", "_min", "", "_stddev")] == nums, row
    version = re.search(r"mdtest-(\d+\.\d+)", out).group(1)
    assert m["version"] == version and name.startswith(f"mdtest_{version}")


def test_mdtest_versions_and_setups():
    m = run("mdtest", "mdtest_4.1.0+dev_np2_i2_u.txt")    # 4.1's "(in ops/sec)" header
    assert (m["tasks"], m["items"], m["iterations"]) == (2, 400, 2)
    m = run("mdtest", "mdtest_3.3.0_np2_i2_u.txt")        # 3.3's colons, no rename row
    assert (m["tasks"], m["iterations"]) == (2, 2) and "dir_rename_ops_s" not in m
    m = run("mdtest", "mdtest_4.1.0+dev_np1_F_C.txt")     # files only, create only
    assert "file_create_ops_s" in m and "file_stat_ops_s" not in m
    assert not any(k.startswith("dir_") for k in m)
    m = run("mdtest", "mdtest_4.1.0+dev_np2_Z.txt")       # -Z: "time (in ms/op)" only
    assert "dir_create_time_s" in m and not any(k.endswith("_ops_s") for k in m)
    m = run("mdtest", "mdtest_4.0.0_np2_P.txt")           # -P: both tables
    assert "dir_create_time_s" in m and "dir_create_ops_s" in m
    m = run("mdtest", "mdtest_4.1.0+dev_np2_i3_rankstats.txt")
    assert m["iterations"] == 3 and m["dir_create_rank_ops_s_max"] > 0


def test_mdtest_1_9_summary():
    old = ("SUMMARY: (of 3 iterations)\n"
           "   Operation                  Max        Min       Mean    Std Dev\n"
           "   Directory creation:   1042.125    998.401   1020.263     17.850\n")
    m = PARSERS["mdtest"](old, "")
    assert m["dir_create_ops_s"] == 1020.263 and m["iterations"] == 3


# ------------------------------------------------------------------------------- STREAM

def test_stream_mccalpin():
    """Upstream stream.c 5.10 built -O3 -march=native -fopenmp, 2 threads, run here."""
    out = text("stream_5.10_omp2.txt")
    m = run("stream", "stream_5.10_omp2.txt")
    for name, rate, avg, lo, hi in re.findall(
            r"^(Copy|Scale|Add|Triad):\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)",
            out, re.MULTILINE):
        k = name.lower()
        assert (m[f"{k}_mb_s"], m[f"{k}_avg_s"], m[f"{k}_min_s"], m[f"{k}_max_s"]) == (
            float(rate), float(avg), float(lo), float(hi))
    assert m["array_size"] == 10000000 and m["threads"] == 2 and m["validated"] == 1


def test_stream_section_of_hpcc_in_mb_s():
    m = run("stream", "hpcc_hpccoutf.txt")
    assert (m["copy_mb_s"], m["scale_mb_s"], m["add_mb_s"], m["triad_mb_s"]) == (
        49900.0, 42710.2, 45384.7, 45519.5)
    assert m["triad_min_s"] == 0.0001 and m["array_size"] == 166666 and m["validated"] == 1
    assert m["single_copy_mb_s"] == 50534.518 and m["single_triad_mb_s"] == 46527.131


def test_stream_failed_validation():
    out = text("stream_5.10_omp2.txt").replace(
        "Solution Validates: avg error less than 1.000000e-13 on all three arrays",
        "Failed Validation on array c[], AvgRelAbsErr > epsilon (1.000000e-13)")
    assert PARSERS["stream"](out, "")["validated"] == 0


# ------------------------------------------------------------------------------- Himeno

def test_himeno_c_version():
    m = run("himeno", "himeno_xs.txt")
    assert m == {"mflops": 956.624579, "cpu_s": 59.978155, "score": 11.547858, "gosa": 0.0,
                 "loops": 32895, "mimax": 32, "mjmax": 32, "mkmax": 64}


def test_himeno_mpi_version():
    m = run("himeno", "himeno_mpi_sample.txt")
    assert m["mflops"] == 5868.944306 and m["cpu_s"] == 60.021377
    assert m["score"] == 70.846744 and m["gosa"] == 8.568004e-04 and m["loops"] == 2399
    assert (m["mimax"], m["mjmax"], m["mkmax"]) == (129, 129, 257)   # the whole grid
    assert (m["decomp_i"], m["decomp_j"], m["decomp_k"]) == (2, 2, 1)


def test_himeno_fortran_and_unfinished():
    out = (" MFLOPS:   1497.2   time(s):  0.0412  1.6e-3\n"
           " Loop executed for         4368  times\n Gosa :   8.4E-04\n"
           " MFLOPS:   1510.33   time(s):   59.8712\n"
           " Score based on Pentium III 600MHz :   18.2318\n")
    m = PARSERS["himeno"](out, "")
    assert (m["mflops"], m["cpu_s"], m["score"], m["gosa"]) == (1510.33, 59.8712, 18.2318, 8.4e-4)
    unfinished = text("himeno_xs.txt").split(" Loop executed")[0]
    with pytest.raises(ParseError, match="Score"):
        PARSERS["himeno"](unfinished, "")


# ---------------------------------------------------------------------------------- HPL

def test_hpl_section_of_hpcc():
    m = run("hpl", "hpcc_hpccoutf.txt")
    assert m["gflops"] == 4.006 and m["gflops_runs"] == 2
    assert (m["n"], m["nb"], m["p"], m["q"], m["time_s"]) == (1000, 80, 1, 2, 0.17)
    assert m["gflops_min"] == 3.262 and m["residual"] == 0.0072510
    assert m["residual_passed"] == 1


def test_hpl_2_3_two_runs_and_a_failed_residual_check():
    """HPL 2.3 (icl-utk-edu/hpl, OpenBLAS, 2 ranks), N = 1000 and 2000, run here."""
    out = text("hpl_2.3_np2.txt")
    runs = [(int(n), int(nb), int(p), int(q), float(t), float(g)) for n, nb, p, q, t, g in
            re.findall(r"^WR\S+\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.e+-]+)",
                       out, re.MULTILINE)]
    residuals = [float(x) for x in re.findall(r"\)\*N\)=\s+([\d.e+-]+) \.+ PASSED", out)]
    assert len(runs) == 2 == len(residuals)
    m = run("hpl", "hpl_2.3_np2.txt")
    best = max(range(2), key=lambda i: runs[i][5])
    assert (m["n"], m["nb"], m["p"], m["q"], m["time_s"], m["gflops"]) == runs[best]
    assert m["gflops_min"] == min(r[5] for r in runs) and m["gflops_runs"] == 2
    assert m["gflops_mean"] == pytest.approx(sum(r[5] for r in runs) / 2)
    assert m["residual"] == residuals[best] and m["residual_passed"] == 1
    failed = out.replace("PASSED", "FAILED", 1)       # the same report, one check failed
    assert PARSERS["hpl"](failed, "")["residual_passed"] == 0


# ----------------------------------------------------------------------------- GNU time

def test_gnu_time_verbose_after_the_commands_own_stderr():
    m = run("gnutime", "gnutime_dd.stderr", "stderr")
    assert m == {"user_s": 0.0, "system_s": 0.74, "cpu_percent": 31, "elapsed_s": 2.34,
                 "max_rss_kb": 2720, "major_faults": 0, "minor_faults": 357,
                 "voluntary_cs": 1, "involuntary_cs": 348, "swaps": 0, "fs_inputs": 0,
                 "fs_outputs": 8, "exit_status": 0}


def test_gnu_time_exit_status_hours_and_unknown_cpu():
    m = run("gnutime", "gnutime_exit3.stderr", "stderr")
    assert m["exit_status"] == 3 and m["max_rss_kb"] == 1508 and m["elapsed_s"] == 0.0
    out = text("gnutime_dd.stderr").replace("0:02.34", "1:02:03.50").replace("31%", "?%")
    m = PARSERS["gnutime"]("", out)
    assert m["elapsed_s"] == 3723.5 and "cpu_percent" not in m


# ------------------------------------------------------------------- through the CLI

@pytest.mark.e2e
def test_unknown_parser_is_a_plan_error(plan_file):
    plan = plan_file("""
        [[task]]
        name = "x"
        command = ["true"]
        parse = "fioo"
    """)
    res = run_cli("run", plan, "--dry-run")
    assert res.returncode == 2
    assert "parse" in res.stderr and "fioo" in res.stderr and "fio" in res.stderr


@pytest.mark.e2e
@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")
def test_fio_command_task_end_to_end(plan_file, tmp_path):
    plan = plan_file("""
        [placement]
        workers = 2
        [[task]]
        name = "fio"
        command = ["fio", "--name=w", "--filename={scratch}/fio.dat", "--size=1M",
                   "--bs=64k", "--rw=randrw", "--ioengine=psync", "--output-format=json"]
        parse = "fio"
        [[task]]
        name = "notfio"
        command = ["/bin/echo", "hello"]
        parse = "fio"
    """)
    out_dir = str(tmp_path / "res")
    res = run_cli("run", plan, "-o", out_dir, "-q")
    assert res.returncode == 1, res.stderr          # the echo task is not fio's output
    rows = export_json(out_dir)
    fio_rows = [r for r in rows if r["task"] == "fio"]
    assert len(fio_rows) == 2
    for r in fio_rows:
        assert r["status"] == "ok", r["error"]
        m = r["metrics"]
        assert m["exit_status"] == 0 and m["jobs"] == 1 and m["job_errors"] == 0
        assert m["read_mib_s"] > 0 and m["write_mib_s"] > 0
        assert m["read_iops"] > 0 and m["write_clat_p99_us"] > 0
        assert m["read_bytes"] + m["write_bytes"] == 2**20
    bad = [r for r in rows if r["task"] == "notfio"]
    assert len(bad) == 2
    for r in bad:
        assert r["status"] == "error" and "fio output not understood" in r["error"]


@pytest.mark.e2e
@pytest.mark.skipif(not os.access("/usr/bin/time", os.X_OK), reason="GNU time is not installed")
def test_gnu_time_command_task_end_to_end(plan_file, tmp_path):
    plan = plan_file("""
        [[task]]
        name = "dd"
        command = ["/usr/bin/time", "-v", "dd", "if=/dev/zero", "of={scratch}/dd.out",
                   "bs=64k", "count=32"]
        parse = "gnutime"
    """)
    out_dir = str(tmp_path / "res")
    res = run_cli("run", plan, "-o", out_dir, "-q")
    assert res.returncode == 0, res.stderr
    (row,) = export_json(out_dir)
    assert row["status"] == "ok", row["error"]
    m = row["metrics"]
    assert m["exit_status"] == 0 and m["max_rss_kb"] > 0 and m["elapsed_s"] >= 0
    assert {"user_s", "system_s", "minor_faults", "voluntary_cs"} <= set(m)


def test_every_parser_names_its_tool_versions():
    from importlib import import_module
    for name in MODULES:
        versions = import_module(f"manybench.parsers.{name}").VERSIONS
        assert versions and all(isinstance(v, str) and v for v in versions), name
