"""The C side's own input checks: mbkernel's numbers and argument count, and the PATH search
of spawn.c (a directory is not a program)."""
from __future__ import annotations

import os
import subprocess

from manybench import _native as native
from manybench.kernels.wrapped import executable


def _mbkernel(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([executable(), "run", *args], input="", capture_output=True,
                          text=True, timeout=60)


def test_mbkernel_refuses_a_number_with_trailing_garbage(tmp_path):
    # strtoll alone reads "1GiB" as 1: a 1-byte file where a gibibyte was meant
    res = _mbkernel("io.write", f"root={tmp_path}", "path=f", "size=1GiB", "block=4096")
    assert res.returncode == 1
    assert "error" in res.stdout and "size" in res.stdout and "1GiB" in res.stdout
    assert not (tmp_path / "f").exists()


def test_mbkernel_refuses_an_empty_or_out_of_range_number(tmp_path):
    for bad in ("size=", "size=99999999999999999999999"):
        res = _mbkernel("io.write", f"root={tmp_path}", "path=f", bad, "block=4096")
        assert res.returncode == 1 and "size" in res.stdout, (bad, res.stdout)


def test_mbkernel_refuses_more_arguments_than_it_holds():
    args = [f"k{i}=1" for i in range(40)]
    res = _mbkernel("null", *args)
    assert res.returncode == 1 and "too many arguments" in res.stdout


def test_mbkernel_still_takes_its_full_argument_count():
    res = subprocess.run([executable(), "run", "null", *[f"k{i}=1" for i in range(32)]],
                         input="", capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and "ready" in res.stdout


def test_the_path_search_skips_a_directory_of_the_programs_name(tmp_path):
    (tmp_path / "first" / "sh").mkdir(parents=True)   # a directory named sh, searchable
    out = os.open(tmp_path / "out", os.O_WRONLY | os.O_CREAT, 0o644)
    env = {"PATH": f"{tmp_path / 'first'}:/usr/bin:/bin"}
    pid, ctl, stamp = native.spawn("sh", ["sh", "-c", "echo ran"], env, str(tmp_path), out, out)
    os.close(out)
    native.release(ctl, 0, 0)
    err = native.read_stamp(stamp)[2]
    os.close(ctl)
    os.close(stamp)
    _, st = os.waitpid(pid, 0)
    native.forget_child(pid)
    assert err == 0 and os.waitstatus_to_exitcode(st) == 0
    assert (tmp_path / "out").read_text() == "ran\n"
