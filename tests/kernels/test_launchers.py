"""The launcher registry (launchers/): each family's command line for a job's layout, the
layouts a family refuses, its failure messages (real outputs kept as fixtures), and the plan
checks of parallel tasks (exit 2 naming the field)."""
from __future__ import annotations

import os
import shutil

import pytest

from conftest import run_cli
from suite_paths import FIXTURES
from manybench.launchers import FAMILIES, Job, LauncherError, detect
from manybench.launchers.base import runs

FIX = str(FIXTURES / "launchers")


def _fixture(name: str) -> str:
    with open(os.path.join(FIX, name)) as f:
        return f.read()


def _job(tmp_path, hosts: list[str], local: bool = False) -> Job:
    return Job(program=["prog", "a"], hosts=hosts, local=local,
               env={"MANYBENCH_MPI_PASS": "p", "OMP_NUM_THREADS": "2"},
               args=["--extra"], workdir=str(tmp_path))


def test_runs_are_consecutive():
    assert runs(["a", "a", "b", "a"]) == [("a", 2), ("b", 1), ("a", 1)]


def test_open_mpi_places_rank_i_on_line_i_of_its_hostfile(tmp_path):
    argv, extra = FAMILIES["openmpi"].argv("/x/mpirun", _job(tmp_path, ["h1", "h2", "h1", "h2"]))
    assert argv[:3] == ["/x/mpirun", "-np", "4"] and extra == {}
    assert "--oversubscribe" in argv and argv[argv.index("--bind-to") + 1] == "none"
    assert argv[argv.index("--hostfile") + 1] == str(tmp_path / "hostfile")
    assert (tmp_path / "hostfile").read_text().split() == ["h1", "h2", "h1", "h2"]
    assert argv[argv.index("rmaps") + 1] == "seq"
    assert "MANYBENCH_MPI_PASS=p" in argv and "OMP_NUM_THREADS=2" in argv
    assert argv[-3:] == ["--extra", "prog", "a"]      # launcher_args, then the program
    local, _ = FAMILIES["openmpi"].argv("/x/mpirun", _job(tmp_path, ["h"] * 2, local=True))
    assert "--hostfile" not in local


def test_mpich_says_the_layout_as_runs_of_hosts(tmp_path):
    fam = FAMILIES["mpich"]
    spread, _ = fam.argv("mpiexec", _job(tmp_path, ["h1", "h2", "h1", "h2"]))
    assert spread[spread.index("-hosts") + 1] == "h1:1,h2:1,h1:1,h2:1"
    pack, _ = fam.argv("mpiexec", _job(tmp_path, ["h1", "h1", "h2", "h2"]))
    assert pack[pack.index("-hosts") + 1] == "h1:2,h2:2"
    i = pack.index("-genv")
    assert pack[i:i + 3] == ["-genv", "MANYBENCH_MPI_PASS", "p"]
    assert fam.check(["a", "b", "a", "b"]) == ""


def test_intel_ppn_expresses_equal_blocks_only(tmp_path):
    fam = FAMILIES["intel"]
    argv, _ = fam.argv("mpiexec", _job(tmp_path, ["h1", "h1", "h2", "h2"]))
    assert argv[argv.index("-ppn") + 1] == "2"
    assert argv[argv.index("-hosts") + 1] == "h1,h2"
    assert fam.check(["a", "a", "b", "b"]) == "" and fam.check(["a", "a"]) == ""
    assert fam.check(["a", "b"]) == ""                   # one rank per node: -ppn 1
    assert "spread" in fam.check(["a", "b", "a", "b"])
    assert fam.check(["a", "a", "a", "b"]) == ""         # -ppn 3: the last node takes 1
    assert fam.check(["a", "b", "b"])                    # -ppn 1 cannot put 2 on b


def test_srun_runs_only_inside_an_allocation(tmp_path, monkeypatch):
    fam = FAMILIES["slurm"]
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    with pytest.raises(LauncherError, match="Slurm allocation"):
        fam.argv("srun", _job(tmp_path, ["n1", "n2"]))
    monkeypatch.setenv("SLURM_JOB_ID", "7")
    job = _job(tmp_path, ["10.0.0.1", "10.0.0.2", "10.0.0.1"])
    argv, extra = fam.argv("srun", Job(**{**job.__dict__, "nodes": ("n1", "n2", "n1")}))
    assert "--distribution=arbitrary" in argv and "--cpu-bind=none" in argv
    # Slurm's node names, not the addresses manybench reaches the nodes at
    assert (tmp_path / "slurm-hostfile").read_text().split() == ["n1", "n2", "n1"]
    assert extra == {"SLURM_HOSTFILE": str(tmp_path / "slurm-hostfile")}
    assert any(a.startswith("--export=ALL,") and "MANYBENCH_MPI_PASS=p" in a for a in argv)


def test_private_variables_are_named_on_the_command_line_never_valued(tmp_path, monkeypatch):
    """The job's socket name and token reach the ranks through the launcher's environment:
    its command line is every user's to read (/proc/PID/cmdline)."""
    monkeypatch.setenv("SLURM_JOB_ID", "7")
    private = {"MANYBENCH_MPI_SOCK": "n4me", "MANYBENCH_MPI_TOKEN": "s3cret"}
    job = Job(program=["prog"], hosts=["h1", "h2"], local=False, env={"A": "1"},
              private=private, workdir=str(tmp_path), nodes=("n1", "n2"))
    for fam in FAMILIES.values():
        argv, extra = fam.argv("/x/launcher", job)
        assert not any("n4me" in a or "s3cret" in a for a in argv), (fam.name, argv)
        assert {k: extra[k] for k in private} == private, fam.name
    argv, _ = FAMILIES["openmpi"].argv("mpirun", job)
    assert all(argv[argv.index(k) - 1] == "-x" for k in private)
    argv, _ = FAMILIES["slurm"].argv("srun", job)
    assert "--export=ALL,A=1,MANYBENCH_MPI_SOCK,MANYBENCH_MPI_TOKEN" in argv
    # Hydra passes its whole environment unless the plan's launcher_args narrow it
    names = "MANYBENCH_MPI_SOCK,MANYBENCH_MPI_TOKEN"
    for fam in (FAMILIES["mpich"], FAMILIES["intel"]):
        argv, _ = fam.argv("mpiexec", job)
        assert "-genvlist" not in argv and "-genvnone" not in argv
        argv, _ = fam.argv("mpiexec", Job(**{**job.__dict__, "args": ["-genvnone"]}))
        assert argv[argv.index("-genvlist") + 1] == names and "-genvnone" not in argv
        argv, _ = fam.argv("mpiexec", Job(**{**job.__dict__, "args": ["-genvlist", "PATH"]}))
        assert argv[argv.index("-genvlist") + 1] == f"PATH,{names}"


@pytest.mark.parametrize("name, expect", [
    ("openmpi-4.1.4-rank1-kill.txt", {"rank 1": "killed by signal 9 (SIGKILL: Killed) on vm"}),
    ("openmpi-4.1.4-rank1-exit.txt", {"rank 1": "exit status 3"}),
    ("openmpi-4.1.4-rank1-abort.txt", {"rank 1": "called MPI_Abort (error code 2)"}),
    ("mpich-4.0.2-rank1-abort.txt", {"rank 1": "called MPI_Abort (error code 2)"}),
])
def test_failures_name_the_rank(name, expect):
    fam = FAMILIES[name.split("-")[0]]
    assert fam.failures(_fixture(name)) == expect


def test_mpich_names_the_failed_process_by_pid():
    got = FAMILIES["mpich"].failures(_fixture("mpich-4.0.2-rank1-kill.txt"))
    assert list(got.values()) == ["killed by signal 9 (SIGKILL: Killed) on vm"]
    assert next(iter(got)).startswith("pid ")


def test_a_signal_reads_as_a_signal_in_every_familys_report():
    """Hydra 4.0's "EXIT CODE: 11" is signal 11 when its exit string says so (the record
    said "exit code 11"), and mpiexec's own exit status 11 is that signal; 4.1's "KILLED BY
    SIGNAL"; a shell's 139 in Open MPI's "Exit code"; a launcher killed itself."""
    segv = ("=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n=   PID 29797 RUNNING AT "
            "vm\n=   EXIT CODE: 11\n=   CLEANING UP REMAINING PROCESSES\n"
            "YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Segmentation fault (signal 11)\n")
    mpich = FAMILIES["mpich"]
    sig11 = "signal 11 (SIGSEGV: Segmentation fault)"
    assert mpich.failures(segv) == {"pid 29797": f"killed by {sig11} on vm"}
    assert mpich.status(11, segv) == f"exit status 11 (a rank's {sig11})"
    assert mpich.status(11, "") == "exit status 11"        # an exit(11): no exit string
    exited = segv.replace("Segmentation fault (signal 11)", "").replace("CODE: 11", "CODE: 3")
    assert mpich.failures(exited) == {"pid 29797": "exit status 3 on vm"}
    newer = segv.replace("EXIT CODE: 11", "KILLED BY SIGNAL: 11").split("YOUR APPLICATION TERM")[0]
    assert mpich.failures(newer) == {"pid 29797": f"killed by {sig11} on vm"}
    ompi = FAMILIES["openmpi"]
    shell = "Process name: [[4242,1],1]\n  Exit code:    139\n"
    assert ompi.failures(shell) == {"rank 1": f"exit status 139 ({sig11}, as a shell "
                                              "reports it)"}
    assert ompi.status(-9, "") == "killed by signal 9 (SIGKILL: Killed)"
    assert ompi.status(3, "") == "exit status 3"


def test_family_detected_from_version_output(tmp_path):
    def fake(name: str, text: str) -> str:
        p = tmp_path / name
        p.write_text(f"#!/bin/sh\necho '{text}'\n")
        p.chmod(0o755)
        return str(p)
    assert detect(fake("a", "mpirun (Open MPI) 4.1.4")).family.name == "openmpi"
    assert detect(fake("b", "Intel(R) MPI Library for Linux* OS, Version 2021.9 HYDRA")
                  ).family.name == "intel"
    assert detect(fake("c", "HYDRA build details:")).family.name == "mpich"
    assert detect(fake("d", "slurm 22.05.8")).family.name == "slurm"
    with pytest.raises(LauncherError, match="cannot tell"):
        detect(fake("e", "hello"))


def test_a_finished_phase_names_each_failed_rank(tmp_path):
    """run/jobs.py: the launcher's account (by rank or by pid) reaches each rank's record."""
    from manybench.record import Record
    from manybench.kernels.mpi_phase import finish_jobs

    def rec(rank: int, status: str, error: str = "", **extra) -> Record:
        return Record(run="r", phase=0, task="t", kernel="mpi", variant="", rep=0, workers=3,
                      node="n", slot=rank, cpu=0, t0_ns=0, start_ns=10 + rank, end_ns=20,
                      status=status, error=error,
                      metrics={"job": 0, "job_rank": rank, "rank_pid": 100 + rank,
                               "cpu_start": 0, "mpi_startup_s": 0.1 * (rank + 1)},
                      extra=extra)
    recs = [rec(0, "error", "the launcher ended", rank_failures={"pid 101": "exit code 9"}),
            rec(1, "error", "rank 1: ended"), rec(2, "error", "rank 2: ended")]
    finish_jobs(recs)
    assert recs[1].error == "rank 1: exit code 9 (as its launcher reported)"
    assert recs[2].error.endswith("(the launcher reported rank 1: exit code 9)")
    assert recs[0].metrics["job_skew_s"] == pytest.approx(2e-9)
    assert recs[0].metrics["job_startup_s"] == pytest.approx(0.3)
    assert "job_skew_s" not in recs[1].metrics


def test_layout_a_family_cannot_express_is_refused_naming_the_field(tmp_path, monkeypatch):
    from manybench.model import Phase, TaskSpec
    from manybench.node.protocol import Assignment, SlotPlace
    from manybench.run.jobs import layout_problems
    fake = tmp_path / "mpiexec"
    fake.write_text("#!/bin/sh\necho 'Intel(R) MPI Library for Linux* OS, Version 2021.9'\n")
    fake.chmod(0o755)
    task = TaskSpec("t", "mpi", {}, command=["prog"], launcher=str(fake))
    phase = Phase(0, task, "mpi", "", 0, 4, "spread", "core", {"ranks": 4}, "")
    place = SlotPlace(0, 0, (0,), False)
    spread = {"a": [Assignment(place, 0), Assignment(place, 2)],
              "b": [Assignment(place, 1), Assignment(place, 3)]}
    got = layout_problems(phase, spread, "task.t.launcher")
    assert len(got) == 1 and got[0].startswith("task.t.launcher: Intel MPI (-ppn) cannot place")
    pack = {"a": [Assignment(place, 0), Assignment(place, 1)],
            "b": [Assignment(place, 2), Assignment(place, 3)]}
    assert layout_problems(phase, pack, "task.t.launcher") == []


@pytest.mark.e2e
def test_plan_check_names_each_field(plan_file):
    plan = plan_file("""
        name = "bad"
        [placement]
        workers = 3
        [[task]]
        name = "odd"
        command = ["hostname"]
        ranks = 2
        launcher = "no-such-mpirun"
        [[task]]
        name = "notmpi"
        command = ["hostname"]
        ranks = 1
        launcher = "true"
        """)
    done = run_cli("run", plan, "--dry-run")
    assert done.returncode == 2, done.stderr
    err = done.stderr
    assert "task.odd.ranks: ranks = 2 does not divide workers = 3" in err
    assert "task.odd.launcher: no launcher no-such-mpirun found" in err
    assert "task.notmpi.launcher: cannot tell which MPI" in err
    assert "Traceback" not in err


@pytest.mark.e2e
def test_plan_fields_of_parallel_tasks_are_checked(plan_file):
    plan = plan_file("""
        name = "bad"
        [[task]]
        name = "k"
        kernel = "null"
        ranks = 2
        [[task]]
        name = "c"
        command = ["hostname"]
        launcher = "mpirun"
        [[task]]
        name = "zero"
        command = ["hostname"]
        ranks = 0
        [[task]]
        name = "m"
        command = ["hostname"]
        ranks = 1
        launcher_args = "-x"
        [[task]]
        name = "s"
        command = ["hostname"]
        ranks = 1
        startup_timeout = "soon"
        [[task]]
        name = "s0"
        command = ["hostname"]
        ranks = 1
        startup_timeout = "0s"
        [[task]]
        name = "sc"
        command = ["hostname"]
        startup_timeout = "1m"
        [[task]]
        name = "g"
        command = ["hostname"]
        ranks = 1
        [[task]]
        name = "h"
        kernel = "null"
        [[concurrent]]
        name = "both"
        tasks = ["g", "h"]
        """)
    done = run_cli("run", plan, "--dry-run")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    err = done.stderr
    assert "task.k.ranks: only a command task runs as MPI jobs" in err
    assert "task.c.launcher: only for a parallel task" in err
    assert "task.zero.ranks:" in err
    assert "task.m.launcher_args: expected a list of strings" in err
    assert "task.s.startup_timeout:" in err and "'soon'" in err
    assert "task.s0.startup_timeout: must be greater than zero" in err
    assert "task.sc.startup_timeout: only for a parallel task" in err
    assert "concurrent.tasks: task 'g' runs as MPI jobs" in err


@pytest.mark.skipif(not shutil.which("mpirun.openmpi"),
                    reason="openmpi not installed (Debian openmpi-bin)")
@pytest.mark.e2e
def test_ranks_sweep_and_show_in_the_dry_run(plan_file):
    plan = plan_file("""
        name = "sweep"
        [placement]
        workers = 4
        [[task]]
        name = "p"
        command = ["echo", "{ranks}"]
        ranks = [1, 2, 4]
        launcher = "mpirun.openmpi"
        """)
    done = run_cli("run", plan, "--dry-run")
    assert done.returncode == 0, done.stderr
    assert [ln.split()[-1] for ln in done.stdout.splitlines() if ln.startswith("#")] == \
        ["ranks=1", "ranks=2", "ranks=4"]


def test_ranks_workers_makes_one_job_of_every_worker():
    """ranks = "workers": one job over all of a phase's workers, whatever the worker count
    (a job over 1, 2, 4 nodes); anything else that is not a count is refused, naming it."""
    from manybench.plan import PlanError, parse_plan
    from manybench.plan.expand import expand
    plan = parse_plan('[placement]\nworkers = [1, 2, 4]\n[[task]]\nname = "h"\n'
                      'command = ["prog", "{ranks}"]\nranks = "workers"\n', check_dirs=False)
    got = [(p.workers, p.params["ranks"]) for p in expand(plan)]
    assert got == [(1, 1), (2, 2), (4, 4)]
    with pytest.raises(PlanError) as e:
        parse_plan('[[task]]\nname = "h"\ncommand = ["prog"]\nranks = "all"\n',
                   check_dirs=False)
    assert "task.h.ranks: expected ranks per job" in str(e.value)
    assert '"workers"' in str(e.value)


def test_auto_is_srun_in_an_allocation_else_mpirun_else_mpiexec(tmp_path):
    from manybench.launchers import program
    for name in ("srun", "mpirun", "mpiexec"):
        p = tmp_path / name
        p.write_text("#!/bin/sh\n")
        p.chmod(0o755)
    path = str(tmp_path)
    assert program("auto", {"PATH": path, "SLURM_JOB_ID": "7"}) == str(tmp_path / "srun")
    assert program("auto", {"PATH": path}) == str(tmp_path / "mpirun")
    (tmp_path / "mpirun").unlink()
    assert program("auto", {"PATH": path}) == str(tmp_path / "mpiexec")
    assert program("mpiexec", {"PATH": path}) == str(tmp_path / "mpiexec")
    (tmp_path / "mpiexec").unlink()
    with pytest.raises(LauncherError, match="no launcher mpirun or mpiexec found"):
        program("auto", {"PATH": path})


def test_a_phase_of_several_jobs_says_how_far_apart_they_began():
    """jobs_skew_s: max - min of the jobs' starts (a job's: its first rank's), on the first
    job's rank 0; none with one job, none when a rank never started."""
    from manybench.record import Record
    from manybench.kernels.mpi_phase import finish_jobs

    def rec(job: int, rank: int, start: int, started: bool = True) -> Record:
        m = {"job": job, "job_rank": rank}
        if started:
            m["cpu_start"] = 0
        return Record(run="r", phase=0, task="t", kernel="mpi", variant="", rep=0, workers=4,
                      node="n", slot=2 * job + rank, cpu=0, t0_ns=0, start_ns=start,
                      end_ns=start + 10, status="ok", metrics=m)
    recs = [rec(1, 0, 1_000_700), rec(1, 1, 1_000_500), rec(0, 0, 1_000_000),
            rec(0, 1, 1_000_100)]
    finish_jobs(recs)
    assert recs[2].metrics["jobs_skew_s"] == pytest.approx(500e-9)   # 1,000,500 - 1,000,000
    assert all("jobs_skew_s" not in r.metrics for r in recs if r is not recs[2])
    one = [rec(0, 0, 5), rec(0, 1, 9)]
    finish_jobs(one)
    assert "jobs_skew_s" not in one[0].metrics
    unstarted = [rec(0, 0, 5), rec(0, 1, 9), rec(1, 0, 7), rec(1, 1, 0, started=False)]
    finish_jobs(unstarted)
    assert "jobs_skew_s" not in unstarted[0].metrics
