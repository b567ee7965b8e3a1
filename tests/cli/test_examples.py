"""Every example in examples/ runs at its smoke size and its report shows the figure the
experiment is about; every figure of every point reads alike in the terminal table, `report
--json` and the HTML figures (tests/figure_views.py, issue 29). The smoke overrides are read
from the example's README (its "Smoke run" command), so the README cannot drift from what CI
runs."""
from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from conftest import export_json, run_cli
from builders import assert_export_streams
from waits import wait_phases
from figure_views import assert_views_agree
from suite_paths import ROOT
from manybench.plan import PlanError, load_plan
from manybench.plan.expand import expand

EXAMPLES = ROOT / "examples"
pytestmark = pytest.mark.timeout(420)


@dataclass
class Expect:
    shows: list[str]                              # in `manybench report` (wide terminal)
    tools: list[tuple[str, str]] = field(default_factory=list)   # (program, Debian package)
    nodes: int = 0                                # a Dask lab of this many netns nodes
    exit: int = 0
    ratios: list[str] = field(default_factory=list)   # comparisons whose rows say a ratio


RATIO = re.compile(r"\d+(\.\d+)? times (faster|slower) \[\d+(\.\d+)?, \d+(\.\d+)?\]")


def _says_ratios(report: str, expect: Expect) -> None:
    """Each comparison the example answers with prints, under its title, a ratio with its
    95% interval ("2.35 times faster [1.08, 5.11]"), not "n too small" or "-"."""
    for title in expect.ratios:
        assert title in report, (title, report[-3000:])
        table = report.split(title, 1)[1].split("\ntest: ", 1)[0]
        assert RATIO.search(table), (title, table)


EXPECT = {
    "smtef-002": Expect(["sync overhead", "aggregate bandwidth", "read: cached against device",
                         "mkdir (meta.mkdir)", "ops/s"]),
    "vendor-000-aligners": Expect(
        ["bwa: numa against unbound", "bowtie2: numa against unbound", "threads"],
        tools=[("bwa", "bwa"), ("bowtie2", "bowtie2"), ("wgsim", "samtools")]),
    "vendor-000-stream": Expect(["stream: numa against unbound (triad,"]),
    "vendor-000-storage": Expect(["write: ramdisk against disk", "read: ramdisk against disk",
                                  "randread: ramdisk against disk", "ops/s"]),
    "vendor-000-tuned": Expect(["sync (null)"]),      # + the tuned branch below
    "containers-003": Expect(["io: container against host", "net: container against host",
                              "latency: container, container-per-node against host (per-slot",
                              "bandwidth: container, container-per-node against host "
                              "(bandwidth", "allreduce: container, container-per-node against "
                              "host", "times"],
                             tools=[("ch-run", "charliecloud"), ("busybox", "busybox-static"),
                                    ("mpirun.openmpi", "openmpi-bin"),
                                    ("mpicc.openmpi", "libopenmpi-dev")],
                             ratios=["iojob: container, container-per-node against host",
                                     "latency: container, container-per-node against host",
                                     "bandwidth: container, container-per-node against host",
                                     "allreduce: container, container-per-node against host"]),
    "interconnects-001": Expect(["share of", "N x single-node", "efficiency", "of peak",
                                 "himeno: ucx, ofi against tcp (mflops",
                                 "hpl: ucx, ofi against tcp (gflops",
                                 "latency: ucx, ofi against tcp (per-slot",
                                 "bandwidth: ucx, ofi against tcp (bandwidth", "times"],
                                tools=[("hpcc", "hpcc"), ("mpirun.openmpi", "openmpi-bin"),
                                       ("mpicc.openmpi", "libopenmpi-dev")], nodes=2,
                                ratios=["himeno: ucx, ofi against tcp", "hpl: ucx, ofi against tcp",
                                        "latency: ucx, ofi against tcp",
                                        "bandwidth: ucx, ofi against tcp"]),
    "ha-004": Expect(["NODE LOST", "lost"], nodes=3, exit=1),
    "ranks-threads-004": Expect(["himeno: ranks against threads (mflops", "times", "decomp_i"],
                                tools=[("mpiexec.mpich", "mpich"),
                                       ("mpicc.mpich", "libmpich-dev")],
                                ratios=["himeno: ranks against threads"]),
}


def smoke_overrides(readme: Path) -> list[str]:
    """The --set arguments of the README's smoke command (```sh block under "Smoke run")."""
    text = readme.read_text()
    section = text.split("## Smoke run", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    cmd = " ".join(line.rstrip("\\").strip() for line in block.splitlines()
                   if line.strip() and not line.strip().startswith("#"))
    words = shlex.split(cmd.split("manybench run plan.toml", 1)[1])
    return [w for i, w in enumerate(words) if i > 0 and words[i - 1] == "--set"]


def test_every_example_has_a_plan_a_readme_and_an_expectation():
    names = sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir())
    assert names == sorted(EXPECT)
    for name in names:
        readme = (EXAMPLES / name / "README.md").read_text()
        for part in ("## What the document did", "## What to look at", "## Scaling up",
                     "## Smoke run"):
            assert part in readme, (name, part)
        # an MPI example says which transport its numbers came from (issue 31)
        if re.search(r"^ranks\s*=", (EXAMPLES / name / "plan.toml").read_text(), re.M):
            assert "## Which transport the numbers came from" in readme, name
        sets = smoke_overrides(EXAMPLES / name / "README.md")
        assert sets, name
        # the full-size plan and the smoke-size one are both valid plans
        for overrides in ([], sets):
            try:
                expand(load_plan(EXAMPLES / name / "plan.toml", overrides, slots=64))
            except PlanError as e:
                raise AssertionError((name, overrides, e.problems)) from None


def _report(out: str) -> str:
    res = run_cli("report", out, env={**os.environ, "COLUMNS": "300"})
    assert res.returncode == 0, res.stderr
    return res.stdout


def _fits_80_columns(out: str) -> None:
    """Every table of the report fits 80 columns whole (issue 17, item 8): none split into
    parts titled "(1/3)", no line wider than the terminal."""
    res = run_cli("report", out, env={**os.environ, "COLUMNS": "80"})
    assert res.returncode == 0, res.stderr
    split = [ln for ln in res.stdout.splitlines() if re.search(r"\(\d+/\d+\)\s*$", ln)]
    assert not split, split
    wide = [ln for ln in res.stdout.splitlines() if len(ln.rstrip()) > 80]
    assert not wide, wide


def _needs(expect: Expect) -> None:
    for prog, pkg in expect.tools:
        if shutil.which(prog) is None:
            pytest.skip(f"{prog} not installed (Debian package {pkg})")


@pytest.mark.e2e
@pytest.mark.parametrize("name", [n for n, e in EXPECT.items() if e.nodes == 0])
def test_example_runs_at_smoke_size(name, tmp_path):
    expect = EXPECT[name]
    _needs(expect)
    if name == "containers-003":
        pytest.importorskip("manybench.kernels.wrapped",
                            reason="variant wrap runs through kernels/wrapped.py (issue 9)")
    sets = smoke_overrides(EXAMPLES / name / "README.md")
    out = str(tmp_path / "res")
    env = {**_mpi_env(), "USER": os.environ.get("USER") or "root"}   # ch-run wants $USER
    res = run_cli("run", str(EXAMPLES / name / "plan.toml"), "-o", out, "-q",
                  *[a for s in sets for a in ("--set", s)], timeout=240, env=env,
                  cwd=str(tmp_path))
    report = _report(out)
    if name == "vendor-000-tuned":
        if shutil.which("tuned-adm") is None:
            # the tuned variants are skipped with a clear message; the baseline still ran
            assert res.returncode == 1, res.stderr[-2000:]
            assert "tuned-adm not installed: profile throughput-performance skipped" in report
            rows = export_json(out)
            assert {r["status"] for r in rows if r["variant"] == "balanced"} == {"ok"}
        else:
            assert res.returncode == 0, res.stderr[-2000:]
            assert "throughput against balanced" in report
    else:
        assert res.returncode == expect.exit, res.stderr[-3000:]
    for figure in expect.shows:
        assert figure in report, (figure, report[-3000:])
    _says_ratios(report, expect)
    _fits_80_columns(out)
    # every figure of every point alike in the table, `report --json` and the HTML figures
    assert_views_agree(out)
    assert_export_streams(out)
    if name == "ranks-threads-004":    # one rank of 2 threads, 2 ranks of 1, on their cpus
        from manybench.kernels.binding import parse_cpulist
        rows = export_json(out)
        cpus = {(r["variant"], r["workers"], r["slot"]): parse_cpulist(
            r["metrics"]["cpus_allowed"]) for r in rows}
        assert {k: len(v) for k, v in cpus.items()} == {
            ("threads", 1, 0): 2, ("ranks", 2, 0): 1, ("ranks", 2, 1): 1}, cpus
        assert not set(cpus[("ranks", 2, 0)]) & set(cpus[("ranks", 2, 1)])
        assert all(r["metrics"]["mpi_sync"] == "MPI_Init" for r in rows)
        assert {r["metrics"]["decomp_i"] for r in rows if r["metrics"]["job_rank"] == 0} == \
            {1, 2}
    if name == "containers-003":       # containers per job: each rank's own, or one shared
        rows = export_json(out)
        for r in rows:
            if r["kernel"] == "mpi" and r["metrics"].get("job_rank") == 0 and \
                    r["task"] != "iojob":
                want = {"host": 1, "container": 2, "container-per-node": 1}
                assert r["metrics"]["job_mount_namespaces"] == want[r["variant"]], r
                assert r["metrics"]["mpi_sync"] == "MPI_Init"
        # IOR's layouts: N containers x 1 rank against 1 container x N ranks, N = 1 and 2
        io = [r for r in rows if r["task"] == "iojob" and r["metrics"].get("job_rank") == 0]
        got = {(r["variant"], r["workers"]): r["metrics"]["job_mount_namespaces"] for r in io}
        assert got == {("host", 1): 1, ("host", 2): 1, ("container", 1): 1,
                       ("container", 2): 2, ("container-per-node", 1): 1,
                       ("container-per-node", 2): 1}, got
        assert all(r["status"] == "ok" and r["metrics"]["mpi_sync"] == "main"
                   for r in rows if r["task"] == "iojob")


def _mpi_env() -> dict:
    """The ranks' shells run `manybench mpi-build`: this Python's manybench on PATH."""
    return {**os.environ,
            "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}


@pytest.mark.alone     # MPI ranks busy-poll: under load ~6x slower, most cpu of the suite
@pytest.mark.e2e
def test_interconnects_example_over_two_nodes(tmp_path, monkeypatch):
    """MPI jobs spanning two namespace nodes: mpirun reaches the second through an rsh agent
    that enters its namespace (as ssh would on a cluster), named in the nodes' environment
    (OMPI_MCA_plm_rsh_agent) before they start, so the README's smoke command runs as is."""
    expect = EXPECT["interconnects-001"]
    _needs(expect)
    from cluster_lab import DaskLab
    from mpi_helpers import rsh_agent
    sets = smoke_overrides(EXAMPLES / "interconnects-001" / "README.md")
    out = str(tmp_path / "res")
    agent = str(tmp_path / "rsh-agent")
    for k, v in {**_mpi_env(), "OMPI_MCA_plm_rsh_agent": agent}.items():
        monkeypatch.setenv(k, v)
    with DaskLab(2, slots=1) as lab:
        rsh_agent(lab, agent)
        res = run_cli("run", str(EXAMPLES / "interconnects-001" / "plan.toml"), "-o", out, "-q",
                      "--scheduler", lab.scheduler, *[a for s in sets for a in ("--set", s)],
                      timeout=400)     # a hang guard: ~50 s alone, 280 s was outrun under load
    assert res.returncode == 0, res.stderr[-3000:]
    rows = export_json(out)
    for task in ("himeno", "hpl", "latency", "bandwidth"):     # one rank on each node
        two = [r for r in rows if r["task"] == task and r["workers"] == 2]
        assert {r["node"] for r in two} == {"n1", "n2"}, task
        assert all(r["kernel"] == "mpi" and r["status"] == "ok" for r in two), task
        assert all(r["metrics"]["mpi_sync"] == "MPI_Init" for r in two), task
    # every network ran its jobs
    firsts = [r for r in rows if r["task"] == "bandwidth" and r["metrics"]["job_rank"] == 0]
    assert {r["variant"] for r in firsts} == {"tcp", "ucx", "ofi"}
    # what each network's jobs really went through, as Open MPI said (issue 31): the README
    # names it (its UCX took cma, shared memory, for large messages between the two nodes)
    said = {r["variant"]: r["extra"]["mpi_transport"] for r in firsts}
    assert said["tcp"] == "Open MPI pml ob1; btl tcp between ranks 0-1", said
    assert said["ucx"].startswith("Open MPI pml ucx; pml ucx") and "tcp/eth0" in said["ucx"]
    assert said["ofi"] == ("Open MPI pml cm, mtl ofi; mtl ofi, libfabric tcp;ofi_rxm between "
                           "ranks 0-1"), said
    report = _report(out)
    for figure in expect.shows:
        assert figure in report, (figure, report[-3000:])
    _says_ratios(report, expect)
    assert re.search(r"\d+(\.\d+)?% of \d", report)      # HPL's share of the peak
    _fits_80_columns(out)
    assert_views_agree(out)


@pytest.mark.e2e
def test_ha_example_loses_a_node_and_goes_on(tmp_path):
    from cluster_lab import DaskLab
    sets = smoke_overrides(EXAMPLES / "ha-004" / "README.md")
    out = str(tmp_path / "res")
    with DaskLab(3, slots=1) as lab:
        proc = subprocess.Popen([sys.executable, "-m", "manybench", "run",
                                 str(EXAMPLES / "ha-004" / "plan.toml"), "-o", out, "-q",
                                 "--scheduler", lab.scheduler,
                                 *[a for s in sets for a in ("--set", s)]],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_phases(out, 1, proc)   # the node is then lost mid-run, not before it
        lab.workers["n2"].send_signal(signal.SIGKILL)       # our own worker, by its pid
        _, err = proc.communicate(timeout=200)
    assert proc.returncode == 1, (proc.returncode, err[-3000:])   # finished, records lost
    assert "NODE LOST" in err and "n2" in err
    rows = export_json(out)
    phases = sorted({r["phase"] for r in rows})
    assert len(phases) > 1                                  # the run went on
    assert any(r["status"] == "lost" and r["node"] == "n2" for r in rows)
    assert all(r["status"] == "ok" for r in rows if r["node"] != "n2")
    lost_in = min(r["phase"] for r in rows if r["status"] == "lost")
    later = [p for p in phases if p > lost_in]
    assert later, "no phase ran after the node was lost: smoke repeat too small"
    for p in later:                     # no work goes to the lost node again
        ok = {r["node"] for r in rows if r["phase"] == p and r["status"] == "ok"}
        assert ok == {"n1", "n3"}, [(r["phase"], r["node"], r["status"]) for r in rows]
    report = _report(out)
    assert "lost" in report
    _fits_80_columns(out)
    assert_views_agree(out)
