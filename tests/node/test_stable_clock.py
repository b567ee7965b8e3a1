"""The clock peaks are reckoned at is the node's stable one: a rating where one exists, else the
highest measured on one busy core since the machine booted, kept in a file of the user's
(inventory/clock_keep.py); never one measurement that moves with the load."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from manybench.inventory import clock_keep, environment
from manybench.inventory import cpu_peak as C
from manybench.inventory import peaks as P

BOOT = "6422f3af-4994-4523-88ef-475542b6dade"
EPYC_VM = ("vendor_id\t: AuthenticAMD\ncpu family\t: 26\nmodel\t\t: 2\nmodel name\t: AMD EPYC\n"
           "cpu MHz\t\t: 2596.120\nflags\t\t: sse2 avx fma avx2 avx512f\n\n")


def _collect_with_probe(monkeypatch, ghz: float) -> dict:
    """The cpu facts and peaks collect() makes when the probe of one busy core reads `ghz`
    on a machine without cpufreq (a VM): the test double stands for the C probe."""
    monkeypatch.setattr(environment, "parse_cpuinfo", lambda _text: C.parse_cpuinfo(EPYC_VM))
    monkeypatch.setattr(environment, "_probe", lambda fma: C.Measured(ghz, {}))
    monkeypatch.setattr(environment, "_cpufreq", lambda: {})
    cpu, peaks = environment._cpu_and_peaks({"physical_cores": 2})
    return {"cpu": cpu, "peaks": peaks, "physical_cores": 2}


def test_the_clock_is_not_moved_by_load(monkeypatch, tmp_path):
    monkeypatch.setenv("MANYBENCH_CACHE_DIR", str(tmp_path))
    idle = _collect_with_probe(monkeypatch, 4.46)
    busy = _collect_with_probe(monkeypatch, 3.21)       # the same machine, its host loaded
    assert idle["cpu"]["base_mhz"] == busy["cpu"]["base_mhz"] == 4500.0
    assert P.for_run(busy).get("dp_gflops") == P.for_run(idle).get("dp_gflops")
    assert "the highest of 2 since boot" in busy["cpu"]["base_source"]
    assert busy["cpu"]["probe"]["ghz"] == 3.21          # the measurement itself is kept too


def test_a_rated_clock_is_used_where_no_base_is_rated():
    """amd-pstate lists the rated boost (cpuinfo_max_freq) and no base: not the current
    cpu MHz, which moves with the load."""
    base, src, mx, _ = C.frequencies("AMD EPYC 9654 96-Core Processor", [1500.0, 3100.0],
                                     None, 3_700_000, "amd-pstate-epp")
    assert (base, mx) == (3.7, 3.7) and "rated boost" in src


def test_kept_clock_file_is_written_safely(tmp_path):
    where = tmp_path / "clock"
    assert clock_keep.keep(4.2, str(where), BOOT) == clock_keep.Kept(4.2, 1, str(where / f"{BOOT}.json"))
    assert clock_keep.keep(4.5, str(where), BOOT).ghz == 4.5
    assert clock_keep.keep(3.2, str(where), BOOT).ghz == 4.5
    assert oct(where.stat().st_mode & 0o777) == "0o700"
    assert oct((where / f"{BOOT}.json").stat().st_mode & 0o777) == "0o600"
    # a link planted at the file is replaced, never followed
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    (where / f"{BOOT}.json").unlink()
    os.symlink(victim, where / f"{BOOT}.json")
    kept = clock_keep.keep(3.9, str(where), BOOT)
    assert (kept.ghz, kept.count) == (3.9, 1) and victim.read_text() == "keep me"
    assert not (where / f"{BOOT}.json").is_symlink()
    # a damaged file starts again
    (where / f"{BOOT}.json").write_text("{not json")
    assert clock_keep.keep(4.0, str(where), BOOT).count == 1
    # a directory others may write to is not used: the measurement stands alone, says why
    where.chmod(0o777)
    alone = clock_keep.keep(3.0, str(where), BOOT)
    assert (alone.ghz, alone.path) == (3.0, None) and "not this user's alone" in alone.why_not
    assert "one measurement (not kept: " in alone.source("measured: x")
    # no boot id, or a value that is no clock: not kept either
    assert clock_keep.keep(4.0, str(where), "../../etc").path is None
    assert clock_keep.keep(float("nan"), str(tmp_path / "c2"), BOOT).path is None


KEEPER = """
import os, sys, time
from manybench.inventory import clock_keep
go, where, boot, ghz = sys.argv[1:]
print("ready", flush=True)
while not os.path.exists(go):        # all imported first: then they keep at once
    time.sleep(0.001)
print(clock_keep.keep(float(ghz), where, boot).ghz)
"""


def test_concurrent_keepers_keep_the_highest(tmp_path):
    """The agents of one machine (namespaced nodes) measure at once: none loses another's."""
    values = [3.1, 4.4, 3.3, 3.9, 3.0, 4.1, 3.5, 3.2]
    # plain processes, not a multiprocessing pool: a forked pool's children hung on a lock copied
    # from another test's thread, and a spawned pool's exit hung in CI (timeout, 120 s)
    go = tmp_path / "go"
    keepers = [subprocess.Popen([sys.executable, "-c", KEEPER, str(go), str(tmp_path / "c"),
                                 BOOT, str(v)], stdout=subprocess.PIPE, text=True)
               for v in values]
    try:
        assert all(k.stdout.readline() == "ready\n" for k in keepers)
        go.touch()
        for k in keepers:
            out, _ = k.communicate(timeout=90)
            assert k.returncode == 0 and float(out) >= 3.0
    finally:
        for k in keepers:
            if k.poll() is None:
                k.kill()
                k.wait()
    last = clock_keep.keep(2.0, str(tmp_path / "c"), BOOT)
    assert (last.ghz, last.count) == (4.4, len(values) + 1)
    # a measurement kept before is read, not added again; the file gone, it is kept anew
    assert clock_keep.keep(2.0, str(tmp_path / "c"), BOOT, again=True) == last
    (tmp_path / "c" / f"{BOOT}.json").unlink()
    assert clock_keep.keep(2.0, str(tmp_path / "c"), BOOT, again=True).count == 1


def test_a_process_started_ahead_takes_its_probe_before_the_run(monkeypatch, tmp_path):
    """warm() (a Dask worker's setup, the idle agent's start) takes the one probe collect()
    would take at the run's Info or snapshot: 64 nodes' probes on 2 cpus were ~1.3 s of each
    of those rounds. collect() after it probes no more."""
    native = pytest.importorskip("manybench._native")
    monkeypatch.setenv("MANYBENCH_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(environment, "parse_cpuinfo", lambda _text: C.parse_cpuinfo(EPYC_VM))
    monkeypatch.setattr(environment, "_cpufreq", lambda: {})      # a VM: the clock is probed
    probes = []
    monkeypatch.setattr(native, "probe_clock", lambda *a: probes.append(a) or 4.4)
    environment._probe.cache_clear()
    try:
        environment.warm()
        assert len(probes) == 1
        kept = tmp_path / "clock"
        assert [p.name for p in kept.iterdir() if p.suffix == ".json"]     # kept by warm()
        cpu, _ = environment._cpu_and_peaks({"physical_cores": 2})
        assert len(probes) == 1 and cpu["probe"]["ghz"] == 4.4     # the one warm() took
        # kept once: a second collect() (the run's snapshot) reads the file, counts no more
        again, _ = environment._cpu_and_peaks({"physical_cores": 2})
        assert (again["probe"]["measurements"], cpu["probe"]["measurements"]) == (1, 1)
        assert "the first since boot" in again["base_source"]
    finally:
        environment._probe.cache_clear()     # no test double left in the process's cache
    monkeypatch.setattr(environment, "_cpufreq", lambda: {"base_khz": 2_600_000})
    environment.warm()              # a rated clock and a known CPU: nothing to probe
    assert len(probes) == 1
    environment._probe.cache_clear()
