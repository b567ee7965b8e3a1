"""What libmbrank.so (kernels/native/mbrank.c) does with the lines its slot sends, driven from
the slot's own end (RankLink) with a plain program as the rank: a line it cannot use ends the
rank at once with its reason, never a hang. fuzz/ feeds the same parsers random and cut-short
lines (docs/architecture.md, "Memory safety")."""
from __future__ import annotations

import os
import subprocess
import time

import pytest

from manybench.kernels.base import KernelError
from manybench.kernels.rank_keys import JobKeys, run_key
from manybench.kernels.rank_link import RankGone, RankLink, socket_name

WAIT_S = 60     # a bound on waiting for an event (the rank's answer or end), not a duration


def _library() -> str:
    from manybench.kernels.mpi_job import library
    try:
        return library()
    except KernelError as e:
        pytest.skip(f"libmbrank.so (the native build): {e}")


def _job() -> JobKeys:
    """A job's values as its slots derive them (the rank proves its token: it is not the
    slot's child through a launcher here)."""
    return JobKeys.of(run_key("the run's secret"), f"lines-{os.getpid()}", 0, 0)


def _rank(keys: JobKeys) -> subprocess.Popen:
    """`true` as rank 0 of the job whose slot listens at its name: held before its main."""
    env = dict(os.environ, LD_PRELOAD=":".join(filter(None, [_library(),
                                                            os.environ.get("LD_PRELOAD")])),
               MANYBENCH_MPI_SOCK=keys.name, MANYBENCH_MPI_TOKEN=keys.token, PMI_RANK="0")
    return subprocess.Popen(["true"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


def _ended(rank: subprocess.Popen) -> tuple[int, str]:
    try:
        _, err = rank.communicate(timeout=WAIT_S)
    finally:
        if rank.poll() is None:
            rank.kill()
            rank.wait()
    return rank.returncode, err


@pytest.mark.parametrize("cpus, why", [
    ("-9223372036854775808-0", "cpus were not understood"),   # was 2^63 turns of a loop
    ("3-1", "cpus were not understood"),
    ("x", "cpus were not understood")])
def test_a_placement_it_cannot_use_ends_the_rank_with_the_reason(cpus, why):
    keys = _job()
    link = RankLink(socket_name(keys.name, 0), keys)
    rank = _rank(keys)
    try:
        with pytest.raises(RankGone):
            link.wait_ready(f"{cpus} - /", time.monotonic() + WAIT_S)
        code, err = _ended(rank)
    finally:
        link.close()
    assert code == 126 and why in err, (code, err)


def test_a_go_before_the_epoch_ends_the_rank_with_the_reason():
    """T0 - SPIN overflowed for a T0 near INT64_MIN (signed overflow; the rank slept on to
    the year 2262)."""
    keys = _job()
    link = RankLink(socket_name(keys.name, 0), keys)
    rank = _rank(keys)
    try:
        link.wait_ready("- - /", time.monotonic() + WAIT_S)
        assert link.go(-(1 << 63) + 1, 100)
        code, err = _ended(rank)
    finally:
        link.close()
    assert code == 126 and "the slot's go was not understood" in err, (code, err)


def test_a_go_without_its_start_page_ends_the_rank_with_the_reason():
    """The rank stamps its start into the page that comes with the go line: a go alone is
    not one it can start on."""
    keys = _job()
    link = RankLink(socket_name(keys.name, 0), keys)
    rank = _rank(keys)
    try:
        link.wait_ready("- - /", time.monotonic() + WAIT_S)
        link.conn.sendall(f"go {time.time_ns()} 0\n".encode())
        code, err = _ended(rank)
    finally:
        link.close()
    assert code == 126 and "the slot's go came without its start page" in err, (code, err)


def test_the_start_comes_back_in_the_page_the_slot_sent():
    """The rank says nothing at its start: the slot reads the stamp from the page once the
    rank is gone, T0 or after, on the cpu it ran on."""
    keys = _job()
    link = RankLink(socket_name(keys.name, 0), keys)
    rank = _rank(keys)
    try:
        link.wait_ready("- - /", time.monotonic() + WAIT_S)
        t0 = time.time_ns() + 1_000_000
        assert link.go(t0, 100_000)
        assert link.wait_end(time.monotonic() + WAIT_S) == "ended"
        code, err = _ended(rank)
    finally:
        link.close()
    assert code == 0, err
    st = link.st
    assert t0 <= st.start_ns <= st.end_ns and 0 < st.start_mono <= st.end_mono
    assert st.start_cpu in os.sched_getaffinity(0)
