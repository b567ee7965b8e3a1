"""mbmpi measures what OSU 7.x measures: the same MPI calls, as many, with the same sizes, as
many inside the timer, on as many buffers, and a barrier after every timed collective call,
counted by benchmarks/mpicount.c (preloaded into the ranks) and compared with OSU 7.4's own
counts (tests/fixtures/osu/counts-7.4.json: only OSU's outputs are kept, never its code)."""
from __future__ import annotations

import json
import os
import shutil
import sys

import pytest

from manybench.kernels import mpi_program

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "benchmarks"))
import mpicount  # noqa: E402

pytestmark = pytest.mark.e2e   # real MPI jobs
FIXTURE = os.path.join(HERE, "fixtures", "osu", "counts-7.4.json")
WINDOW = 64


@pytest.fixture(scope="module")
def osu() -> dict:
    with open(FIXTURE) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[str, str]:
    """(mbmpi, the counters' library), both built with Open MPI's wrapper."""
    for tool in ("mpicc.openmpi", "mpirun.openmpi"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not installed (Debian openmpi-bin libopenmpi-dev)")
    d = tmp_path_factory.mktemp("mbmpi-osu")
    os.environ["MANYBENCH_CACHE_DIR"] = str(d / "cache")
    try:
        exe = mpi_program.build("openmpi")
    finally:
        del os.environ["MANYBENCH_CACHE_DIR"]
    return exe, mpicount.build("mpicc.openmpi", str(d))


def _counts(built, test: str, sizes: str) -> mpicount.Counts:
    exe, lib = built
    return mpicount.run([exe, test, "-m", sizes], lib)[1]


@pytest.mark.parametrize("test", list(mpicount.OSU_PAIRS))
def test_mbmpi_makes_the_calls_osu_7_makes(built, osu, test):
    got = _counts(built, test, osu["sizes"])
    want = mpicount.from_json(osu["tests"][test]["counts"])
    assert mpicount.differences(got, want) == [], mpicount.table(got, want)


def test_bw_sends_a_window_from_one_buffer_as_often_as_osu(built):
    """osu_bw: 64 sends a window from one buffer, 100 timed windows + 10 warm-up at 8 KiB,
    20 + 2 above: not 64 buffers (64 MiB a side at 1 MiB) nor 10 + 1 windows."""
    rank0 = _counts(built, "bw", "8192:16384")[0]
    assert rank0[("isend", 8192)] == mpicount.Count(WINDOW * 110, WINDOW * 100, 1)
    assert rank0[("isend", 16384)] == mpicount.Count(WINDOW * 22, WINDOW * 20, 1)


@pytest.mark.parametrize("test", ["bcast", "allreduce", "alltoall"])
def test_every_collective_call_is_timed_alone_with_a_barrier_after_it(built, test):
    for rank, got in _counts(built, test, "8192:16384").items():
        calls = {k[1]: c for k, c in got.items() if k[0] == test}
        assert {s: c.calls for s, c in calls.items()} == {8192: 1100, 16384: 110}
        assert all(c.timed == c.calls for c in calls.values())     # each inside a timer
        assert got[("barrier-after-timer", 0)].calls == 1210, rank  # outside it, right after


def test_differences_name_the_call_and_ignore_the_barriers_between_sizes():
    a = {0: {("isend", 8): mpicount.Count(64, 64, 1), ("barrier", 0): mpicount.Count(3, 0, 0)}}
    b = {0: {("isend", 8): mpicount.Count(64, 64, 64), ("barrier", 0): mpicount.Count(6, 0, 0)}}
    assert mpicount.differences(a, b) == [
        "rank 0 isend 8 B: 64 calls (64 timed) on 1 buffers vs 64 calls (64 timed) on 64 "
        "buffers"]
    assert mpicount.differences(a, a) == []
    assert mpicount.from_json(mpicount.to_json(b)) == b
