"""mbmpi measures what OSU 7.x measures: the same MPI calls, as many, with the same sizes, as
many inside the timer, on as many buffers, first touched as OSU touches them (point to point:
a size's bytes right before that size, so no page of the buffer beyond a message is resident
at its first call), and a barrier after every timed collective call, counted by
benchmarks/mpicount.c (preloaded into the ranks) and compared with OSU 7.4's own counts
(tests/fixtures/osu/counts-7.4.json: only OSU's outputs are kept, never its code)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
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
    # calls, timed, buffers (the first touch: the fixture's test, at sizes whose buffers are
    # fresh pages in both families)
    assert rank0[("isend", 8192)][:3] == (WINDOW * 110, WINDOW * 100, 1)
    assert rank0[("isend", 16384)][:3] == (WINDOW * 22, WINDOW * 20, 1)


@pytest.mark.parametrize("test", ["bcast", "allreduce", "alltoall"])
def test_every_collective_call_is_timed_alone_with_a_barrier_after_it(builds, test):
    for rank, got in _counts(builds, test, "8192:16384").items():
        calls = {k[1]: c for k, c in got.items() if k[0] == test}
        assert {s: c.calls for s, c in calls.items()} == {8192: 1100, 16384: 110}
        assert all(c.timed == c.calls for c in calls.values())     # each inside a timer
        assert got[("barrier-after-timer", 0)].calls == 1210, rank  # outside it, right after


# a buffer of 128 KiB sent at 8 KiB then 128 KiB, filled whole first (as mbmpi v2) or a
# size's bytes right before that size (as OSU's set_buffer_pt2pt)
TOUCH = r"""
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv)
{
    int rank, whole = argc > 1;
    char *b;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (posix_memalign((void **)&b, 4096, 131072))
        return 1;
    if (whole)
        memset(b, 1, 131072);
    for (int size = 8192; size <= 131072; size *= 16) {
        if (!whole)
            memset(b, 1, size);
        if (rank == 0)
            MPI_Send(b, size, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
        else
            MPI_Recv(b, size, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Finalize();
    return 0;
}
"""


def test_the_first_touch_tells_a_buffer_filled_whole_from_one_filled_size_by_size(
        builds, tmp_path):
    """Calls, timing and buffers are the same either way; only the pages beyond the message
    resident at its first call differ: all 16 looked at when filled whole, none else."""
    lib = builds("openmpi")[1]
    exe = tmp_path / "touch"
    (tmp_path / "touch.c").write_text(TOUCH)
    subprocess.run([mpi_program.COMPILERS["openmpi"], "-O2", "-o", str(exe),
                    str(tmp_path / "touch.c")], check=True)
    whole = mpicount.run([str(exe), "whole"], lib)[1]
    by_size = mpicount.run([str(exe)], lib)[1]
    for rank, call in ((0, "send"), (1, "recv")):
        assert whole[rank][(call, 8192)] == mpicount.Count(1, 0, 1, 16), whole
        assert by_size[rank][(call, 8192)] == mpicount.Count(1, 0, 1, 0), by_size
        assert whole[rank][(call, 131072)] == by_size[rank][(call, 131072)] == \
            mpicount.Count(1, 0, 1, 0)      # nothing of the buffer beyond the message


def test_differences_name_the_call_and_ignore_the_barriers_between_sizes():
    a = {0: {("isend", 8): mpicount.Count(64, 64, 1, 0),
             ("barrier", 0): mpicount.Count(3, 0, 0, 0)}}
    b = {0: {("isend", 8): mpicount.Count(64, 64, 64, 2),
             ("barrier", 0): mpicount.Count(6, 0, 0, 0)}}
    assert mpicount.differences(a, b) == [
        ("rank 0 isend 8 B: 64 calls (64 timed) on 1 buffers, 0 pages beyond resident at "
         "first call vs 64 calls (64 timed) on 64 buffers, 2 pages beyond resident at first "
         "call")]
    assert mpicount.differences(a, a) == []
    assert mpicount.from_json(mpicount.to_json(b)) == b


def test_the_file_format_is_counts_fields_and_an_older_line_is_refused():
    assert mpicount.parse({0: "isend 8192 7040 6400 1 16"}) == \
        {0: {("isend", 8192): mpicount.Count(calls=7040, timed=6400, buffers=1, resident=16)}}
    with pytest.raises(ValueError, match="CALLS TIMED BUFFERS RESIDENT"):
        mpicount.parse({0: "isend 8192 7040 6400 1"})      # before the first touch
