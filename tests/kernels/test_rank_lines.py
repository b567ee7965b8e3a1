"""What libmbrank.so (kernels/native/mbrank.c) does with the lines its slot sends, driven from
the slot's own end (RankLink) with a plain program as the rank: a line it cannot use ends the
rank at once with its reason, never a hang. fuzz/ feeds the same parsers random and cut-short
lines (docs/architecture.md, "Memory safety")."""
from __future__ import annotations

import os
import platform
import struct
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


# clock_nanosleep's number, as /proc/PID/syscall shows a process blocked in it
NANOSLEEP = {"x86_64": 230, "aarch64": 115}.get(platform.machine())


def _smaps_of(pid: int, name: str) -> dict[str, int]:
    """The kB figures of the mapping of `name` in /proc/PID/smaps ({} when none)."""
    out: dict[str, int] = {}
    block = None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            head = line.split()
            if len(head) >= 5 and "-" in head[0] and not head[0].endswith(":"):
                block = name in line
            elif block and len(head) == 3 and head[2] == "kB":
                out[head[0].rstrip(":")] = int(head[1])
    return out


@pytest.mark.skipif(NANOSLEEP is None, reason="clock_nanosleep's number on this machine")
def test_the_start_page_is_written_before_the_wait_for_t0():
    """The stamp's stores must not fault: the page is mapped and dirtied (written) before
    the rank waits for T0, so only stores to a present, writable page follow the stamp.
    Seen in the rank blocked in its wait (T0 far ahead): the page resident and dirty."""
    keys = _job()
    link = RankLink(socket_name(keys.name, 0), keys)
    rank = _rank(keys)
    try:
        link.wait_ready("- - /", time.monotonic() + WAIT_S)
        assert link.go(time.time_ns() + 3600 * 10**9, 0)
        deadline = time.monotonic() + WAIT_S
        while True:     # until it sleeps in its wait for T0 (an event: no duration assumed)
            with open(f"/proc/{rank.pid}/syscall") as f:
                if f.read().split()[0] == str(NANOSLEEP):
                    break
            assert time.monotonic() < deadline, "the rank never waited for T0"
            time.sleep(0.01)
        page = _smaps_of(rank.pid, "manybench-start")
    finally:
        rank.kill()
        rank.wait()
        link.close()
    assert page.get("Rss") == 4, page
    assert page.get("Private_Dirty", 0) + page.get("Shared_Dirty", 0) == 4, page


def _dynamic_tags(path: str) -> dict[int, int]:
    """The dynamic section's tags of a 64-bit little-endian ELF file (its PT_DYNAMIC)."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1, path
    phoff, = struct.unpack_from("<Q", data, 32)
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    for i in range(phnum):
        kind, _, offset, _, _, size = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
        if kind == 2:    # PT_DYNAMIC
            return dict(struct.iter_unpack("<qQ", data[offset:offset + size]))
    return {}


def test_the_library_is_bound_at_load_not_at_a_first_call():
    """A function's first call through the PLT looks its symbol up (microseconds): with lazy
    binding, the first sched_getcpu() ran between the start stamp and the return to the
    program. DT_FLAGS DF_BIND_NOW (or DT_BIND_NOW, or DT_FLAGS_1 DF_1_NOW): all at load."""
    tags = _dynamic_tags(_library())
    assert 24 in tags or tags.get(30, 0) & 0x8 or tags.get(0x6ffffffb, 0) & 0x1, tags
