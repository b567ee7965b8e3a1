"""Provenance snapshots on a node: tunables, the file system of each directory, programs and
their versions; unknown programs never run, nothing ever raises."""
from __future__ import annotations

import os
import shutil
import stat
import time

import pytest

from manybench import config
from manybench.inventory import environment, provenance, tunables


def _script(path, body: str) -> str:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return str(path)


def test_selected_reads_the_bracketed_choice():
    assert tunables.selected("always [madvise] never") == "madvise"
    assert tunables.selected("[always] defer defer+madvise madvise never") == "always"
    assert tunables.selected("mq-deadline") == "mq-deadline"
    assert tunables.selected(None) is None


def test_tunables_are_what_the_kernel_says():
    t = environment.collect()["tunables"]
    thp = "/sys/kernel/mm/transparent_hugepage/enabled"
    if os.path.exists(thp):
        with open(thp) as f:
            assert f"[{t['thp']['enabled']}]" in f.read()
    with open("/proc/sys/vm/swappiness") as f:
        assert t["sysctl"]["vm.swappiness"] == f.read().strip()
    for name in ("vm.dirty_ratio", "vm.dirty_background_ratio", "vm.zone_reclaim_mode"):
        assert name in t["sysctl"]
    assert "\t" not in t["sysctl"].get("net.ipv4.tcp_rmem", "")      # tabs made spaces
    gov = "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"
    assert ("governor" in t["cpufreq"]) == os.path.exists(gov)
    for v in t.values():                  # absent keys, never None values
        assert v is not None


def test_a_directory_is_on_the_longest_matching_mount(tmp_path):
    mounts = [
        {"mount_point": "/", "fstype": "ext4", "source": "/dev/sda1", "options": "rw",
         "super_options": "rw", "device": "0:0", "root": "/"},
        {"mount_point": "/mnt/a", "fstype": "nfs4", "source": "srv:/x", "options": "rw",
         "super_options": "rw,proto=rdma", "device": "0:1", "root": "/"},
        {"mount_point": "/mnt/a", "fstype": "lustre", "source": "mgs@o2ib:/fs", "options": "rw",
         "super_options": "rw,flock", "device": "0:2", "root": "/"},     # stacked: it wins
        {"mount_point": "/mnt/ab", "fstype": "xfs", "source": "/dev/nvme0n1", "options": "ro",
         "super_options": "ro", "device": "0:3", "root": "/"},
    ]
    d = provenance.directory("/mnt/a/run/x", mounts)
    assert (d["mount_point"], d["fstype"], d["super_options"]) == ("/mnt/a", "lustre", "rw,flock")
    assert d["exists"] is False and d["path"] == "/mnt/a/run/x"
    assert provenance.directory("/mnt/ab", mounts)["fstype"] == "xfs"
    assert provenance.directory("/mnt/abc", mounts)["fstype"] == "ext4"   # not /mnt/ab's
    assert provenance._unescape(r"/mnt/my\040disk") == "/mnt/my disk"


def test_snapshot_has_the_environment_and_each_directory_and_program(tmp_path):
    shm = "/dev/shm" if os.path.ismount("/dev/shm") else None
    dirs = [str(tmp_path), str(tmp_path / "not-yet")] + ([shm] if shm else [])
    before = time.time_ns()
    s = provenance.snapshot(dirs, ["sh", "no-such-program-here"])
    after = time.time_ns()
    env = environment.collect()
    assert set(env) <= set(s) and s["kernel"] == env["kernel"]
    assert isinstance(s["taken_ns"], int) and before <= s["taken_ns"] <= after
    here = s["dirs"][str(tmp_path)]
    assert here["exists"] and here["mount_point"] and here["fstype"] and here["options"]
    assert s["dirs"][str(tmp_path / "not-yet")]["mount_point"] == here["mount_point"]
    if shm:
        assert s["dirs"][shm]["fstype"] == "tmpfs" and s["dirs"][shm]["mount_point"] == shm
    sh = s["programs"]["sh"]
    assert sh["found"] and sh["path"] == shutil.which("sh")
    if shutil.which("dpkg-query"):
        assert sh["package"] in ("dash", "bash") and sh["package_version"]
    assert "version" not in sh                       # sh is no tool to ask
    assert s["programs"]["no-such-program-here"] == {"found": False}
    named = provenance.snapshot({"scratch": str(tmp_path)}, [])
    assert named["dirs"]["scratch"]["path"] == str(tmp_path)


@pytest.mark.skipif(not shutil.which("fio"), reason="fio not installed (Debian package fio)")
def test_a_well_known_tool_is_asked_its_version():
    import subprocess
    fio = provenance.snapshot([], ["fio"])["programs"]["fio"]
    line = subprocess.run(["fio", "--version"], capture_output=True, text=True).stdout
    assert fio["version"] == line.strip() and fio["found"]
    if shutil.which("dpkg-query"):
        assert fio["package"] == "fio"
    assert "version" not in provenance.snapshot([], ["fio"], versions=False)["programs"]["fio"]


def test_unknown_programs_are_never_run_and_hung_tools_time_out(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    marker = tmp_path / "ran"
    _script(bin_dir / "mytool", f"touch {marker}\n")
    # a tool of the allow-list that hangs when asked (an hour: only the timeout ends it within
    # the test's own time limit): given up on, its process killed
    _script(bin_dir / "qperf", f"echo $$ > {tmp_path}/qperf.pid\nexec sleep 3600\n")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    with config.set({"inventory.version_timeout": 0.5}):
        s = provenance.snapshot([], ["mytool", "qperf"])
    assert s["programs"]["mytool"]["found"] and not marker.exists()
    assert "version" not in s["programs"]["qperf"]
    pid = int((tmp_path / "qperf.pid").read_text())
    assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z"


def test_a_snapshot_never_raises():
    s = provenance.snapshot(["", "/proc/self/../nonexistent\0bad", None], [None, "", "a/b/c"])
    assert "kernel" in s and "a/b/c" in s["programs"]
