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

from suite_paths import FIXTURES, ROOT

from manybench.kernels import mpi_program

sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import mpicount  # noqa: E402

pytestmark = pytest.mark.e2e   # real MPI jobs
FIXTURE = str(FIXTURES / "osu" / "counts-7.4.json")
WINDOW = 64


@pytest.fixture(scope="module")
def osu() -> dict:
    with open(FIXTURE) as f:
        return json.load(f)


LAUNCHERS = {"openmpi": "mpirun.openmpi", "mpich": "mpiexec.mpich"}
PACKAGES = {"openmpi": "openmpi-bin libopenmpi-dev", "mpich": "mpich libmpich-dev"}


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    """family -> (mbmpi, the counters' library), both built with the family's wrapper."""
    made: dict[str, tuple[str, str]] = {}

    def get(family: str) -> tuple[str, str]:
        if family not in made:
            for tool in (mpi_program.COMPILERS[family], LAUNCHERS[family]):
                if shutil.which(tool) is None:
                    pytest.skip(f"{tool} not installed (Debian {PACKAGES[family]})")
            d = tmp_path_factory.mktemp(f"mbmpi-osu-{family}")
            os.environ["MANYBENCH_CACHE_DIR"] = str(d / "cache")
            try:
                exe = mpi_program.build(family)
            finally:
                del os.environ["MANYBENCH_CACHE_DIR"]
            made[family] = (exe, mpicount.build(mpi_program.COMPILERS[family], str(d)))
        return made[family]
    return get


def _counts(builds, test: str, sizes: str, family: str = "openmpi") -> mpicount.Counts:
    exe, lib = builds(family)
    return mpicount.run([exe, test, "-m", sizes], lib, family)[1]


@pytest.mark.parametrize("family", ["openmpi", "mpich"])
@pytest.mark.parametrize("test", list(mpicount.OSU_PAIRS))
def test_mbmpi_makes_the_calls_osu_7_makes(builds, osu, test, family):
    got = _counts(builds, test, osu["sizes"], family)
    want = mpicount.from_json(osu["tests"][test]["counts"])
    assert mpicount.differences(got, want) == [], mpicount.table(got, want)


def test_bw_sends_a_window_from_one_buffer_as_often_as_osu(builds):
    """As osu_bw: windows of 64 sends from one buffer, 100 timed + 10 warm-up at 8 KiB,
    20 + 2 above: not 64 buffers (64 MiB a side at 1 MiB) nor 10 + 1 windows."""
    rank0 = _counts(builds, "bw", "8192:16384")[0]
    assert rank0[("isend", 8192)] == mpicount.Count(WINDOW * 110, WINDOW * 100, 1)
    assert rank0[("isend", 16384)] == mpicount.Count(WINDOW * 22, WINDOW * 20, 1)


@pytest.mark.parametrize("test", ["bcast", "allreduce", "alltoall"])
def test_every_collective_call_is_timed_alone_with_a_barrier_after_it(builds, test):
    for rank, got in _counts(builds, test, "8192:16384").items():
        calls = {k[1]: c for k, c in got.items() if k[0] == test}
        assert {s: c.calls for s, c in calls.items()} == {8192: 1100, 16384: 110}
        assert all(c.timed == c.calls for c in calls.values())     # each inside a timer
        assert got[("barrier-after-timer", 0)].calls == 1210, rank  # outside it, right after


def test_differences_name_the_call_and_ignore_the_barriers_between_sizes():
    a = {0: {("isend", 8): mpicount.Count(64, 64, 1), ("barrier", 0): mpicount.Count(3, 0, 0)}}
    b = {0: {("isend", 8): mpicount.Count(64, 64, 64), ("barrier", 0): mpicount.Count(6, 0, 0)}}
    assert mpicount.differences(a, b) == [
        ("rank 0 isend 8 B: 64 calls (64 timed) on 1 buffers vs 64 calls (64 timed) on 64 "
         "buffers")]
    assert mpicount.differences(a, a) == []
    assert mpicount.from_json(mpicount.to_json(b)) == b
