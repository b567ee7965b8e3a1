"""The C side (manybench._native) as API.md describes it: behaviour, never absolute timings."""
from __future__ import annotations

import errno
import os
import signal
import threading
import time

import pytest

native = pytest.importorskip("manybench._native",
                             reason="C kernels not built (python setup.py build_ext --inplace)")
from manybench.kernels import hist  # noqa: E402

MS = 1_000_000


def soon(ms: float = 5) -> int:
    return native.now_ns() + int(ms * MS)


# ---- clocks, waiting, histogram rule ---------------------------------------------------------

def test_clocks_agree_with_python():
    a, n, b = time.time_ns(), native.now_ns(), time.time_ns()
    assert a <= n <= b
    m1, m2 = native.mono_ns(), native.mono_ns()
    assert m1 <= m2


@pytest.mark.parametrize("spin_ns", [0, 2 * MS])
def test_wait_until_wakes_at_or_after_t0(spin_ns):
    t0 = soon(10)
    wake = native.wait_until(t0, spin_ns)
    assert wake >= t0
    assert native.now_ns() >= t0


def test_wait_until_past_t0_returns_at_once():
    t0 = native.now_ns() - 10 * MS
    assert native.wait_until(t0, 0) >= t0


def test_set_timerslack_applies_to_this_thread():
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("/proc/self/timerslack_ns shows the main thread's slack only")
    native.set_timerslack(1)
    with open("/proc/self/timerslack_ns") as f:
        assert int(f.read()) == 1


# ---- memory policy (numa.c) -------------------------------------------------------------------

def test_mempolicy_set_and_read_back_in_a_thread():
    """A policy is the calling thread's: set and read in a thread of its own, so the test
    process keeps its own. get_mempolicy once cleared 135 bytes into its 128-byte mask: the
    sanitized build (scripts/sanitized.sh) fails this with a stack-buffer-overflow."""
    got: list = []

    def bound() -> None:
        got.append(native.get_mempolicy())
        native.set_mempolicy(2, [0])          # MPOL_BIND to node 0: every machine has it
        got.append(native.get_mempolicy())
        native.set_mempolicy(0, [])
        got.append(native.get_mempolicy())

    t = threading.Thread(target=bound)
    t.start()
    t.join()
    assert got == [(0, []), (2, [0]), (0, [])]
    with pytest.raises(ValueError, match="memory node 1024 out of range"):
        native.set_mempolicy(2, [1024])


@pytest.mark.parametrize("v", [0, 1, 63, 64, 65, 127, 128, 129, 1000, 4095, 4096, 123456789,
                               2**40 + 12345, 2**63, 2**64 - 1])
def test_bucket_rule_matches_python(v):
    b = native.bucket(v)
    assert b == hist.bucket_of(v)
    lo, hi = hist.bucket_range(b)
    assert lo <= v <= hi
    assert b < native.HIST_BUCKETS == hist.HIST_BUCKETS


# ---- null ------------------------------------------------------------------------------------

def test_run_null_stamps_after_t0():
    t0 = soon()
    r = native.run_null(t0, 1 * MS)
    assert r["armed_ns"] <= t0 <= r["start_ns"] <= r["end_ns"]
    assert r["elapsed_ns"] >= 0
    assert (r["ops"], r["bytes"], r["errno"], r["error"], r["hist"]) == (0, 0, 0, "", None)


# ---- io ----------------------------------------------------------------------------------------

def _open_w(path, extra=0):
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | extra, 0o644)


def test_run_io_write_counts_and_histogram(tmp_path):
    path = tmp_path / "w.dat"
    block, size = 64 * 1024, 64 * 1024 * 10 + 4096   # last op is a short one
    fd = _open_w(path)
    try:
        t0 = soon()
        r = native.run_io(fd, True, block, size, 0, True, False, t0, 0)
    finally:
        os.close(fd)
    assert r["errno"] == 0 and r["error"] == ""
    assert r["start_ns"] >= t0 and r["end_ns"] >= r["start_ns"]
    assert r["bytes"] == size and r["ops"] == 11
    assert os.path.getsize(path) == size
    assert 0 <= r["fsync_ns"] <= r["elapsed_ns"]
    h = hist.decode(r["hist"])
    assert sum(h.values()) == r["ops"]
    data = path.read_bytes()[:block]
    assert 0 not in data[:4096] and len(set(data)) > 100   # non-zero, non-constant pattern


def test_run_io_write_stops_at_the_deadline():
    """Writes until the deadline, never past the bytes given. A window the process was
    descheduled through whole (a busy machine: 20 ms lost before the first write) writes
    nothing and still ends at its deadline; then a window 10x longer is tried."""
    fd = os.open("/dev/null", os.O_WRONLY)
    try:
        for window_ms in (20, 200, 2000):
            t0 = soon()
            deadline = t0 + window_ms * MS
            r = native.run_io(fd, True, 4096, 1 << 50, deadline, False, False, t0, 0)
            assert r["errno"] == 0 and r["end_ns"] >= deadline
            if r["bytes"]:
                break
    finally:
        os.close(fd)
    assert 0 < r["bytes"] < 1 << 50


def _layout(path: str, size: int, block: int) -> None:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        native.layout(fd, path, size, block)
    finally:
        os.close(fd)


def test_run_io_read_wraps_at_eof_with_a_deadline(tmp_path):
    path = str(tmp_path / "r.dat")
    _layout(path, 64 * 1024, 4096)
    fd = os.open(path, os.O_RDONLY)
    try:
        t0 = soon()
        r = native.run_io(fd, False, 4096, 0, t0 + 30 * MS, False, False, t0, 0)
    finally:
        os.close(fd)
    assert r["errno"] == 0
    assert r["bytes"] > 64 * 1024        # went past the end, so it wrapped
    assert r["bytes"] % 4096 == 0


def test_run_io_read_to_eof_and_short_file(tmp_path):
    path = str(tmp_path / "r.dat")
    _layout(path, 40000, 4096)
    fd = os.open(path, os.O_RDONLY)
    try:
        r = native.run_io(fd, False, 4096, 0, 0, False, False, soon(), 0)
        assert r["errno"] == 0 and r["bytes"] == 40000 and r["ops"] == 10
        os.lseek(fd, 0, os.SEEK_SET)
        r = native.run_io(fd, False, 4096, 80000, 0, False, False, soon(), 0)
    finally:
        os.close(fd)
    assert r["errno"] == errno.ENODATA and r["bytes"] == 40000
    assert "before size" in r["error"]


def test_run_io_write_enospc_is_reported():
    fd = os.open("/dev/full", os.O_WRONLY)
    try:
        r = native.run_io(fd, True, 4096, 8192, 0, True, False, soon(), 0)
    finally:
        os.close(fd)
    assert r["errno"] == errno.ENOSPC
    assert r["error"] == "write at offset 0: " + os.strerror(errno.ENOSPC)
    assert r["ops"] == 0 and r["bytes"] == 0


def test_run_io_direct_alignment(tmp_path):
    fd = _open_w(tmp_path / "d.dat")
    try:
        r = native.run_io(fd, True, 1000, 4000, 0, False, True, soon(), 0)
        assert r["errno"] == errno.EINVAL and "multiples of 4096" in r["error"]
        assert r["start_ns"] == 0   # refused before waiting
    finally:
        os.close(fd)


def test_kernel_einval_on_unaligned_odirect_write(tmp_path):
    try:
        fd = _open_w(tmp_path / "d.dat", os.O_DIRECT)
    except OSError as e:
        pytest.skip(f"{tmp_path} refuses O_DIRECT: {e}")
    try:   # direct=False: our own check is off, the file system judges
        r = native.run_io(fd, True, 1000, 3000, 0, False, False, soon(), 0)
    finally:
        os.close(fd)
    assert r["errno"] == errno.EINVAL
    assert r["error"].startswith("write at offset 0: ")


def test_run_io_rejects_negative_sizes():
    with pytest.raises(ValueError):
        native.run_io(1, True, -1, 10, 0, False, False, 0, 0)


def test_layout_makes_and_extends_never_shrinks(tmp_path):
    path = str(tmp_path / "l.dat")
    _layout(path, 10000, 4096)
    assert os.path.getsize(path) == 10000
    with open(path, "rb") as f:
        head = f.read()
    assert 0 not in head and len(set(head)) > 100
    _layout(path, 20000, 4096)
    assert os.path.getsize(path) == 20000
    with open(path, "rb") as f:
        assert f.read(10000) == head          # what was there stays
    _layout(path, 5000, 4096)
    assert os.path.getsize(path) == 20000


def test_layout_error_is_an_oserror_with_errno(tmp_path):
    fd = os.open(tmp_path / "ro", os.O_RDONLY | os.O_CREAT, 0o600)   # not open for writing
    try:
        with pytest.raises(OSError) as ei:
            native.layout(fd, "ro", 10, 4096)
    finally:
        os.close(fd)
    assert ei.value.errno == errno.EBADF
    assert "laying out ro" in ei.value.strerror


# ---- scratch_open: by descriptor from a root, checked ------------------------------------

def test_scratch_open_makes_the_directories_and_opens_a_regular_file(tmp_path):
    fd = native.scratch_open(str(tmp_path), "a/b/f.dat", os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, b"x")
    os.close(fd)
    assert (tmp_path / "a" / "b" / "f.dat").read_bytes() == b"x"
    assert oct(os.stat(tmp_path / "a").st_mode & 0o777) == oct(0o700)


@pytest.mark.parametrize("plant, found", [
    (lambda p, v: os.symlink(v, p), "is a symbolic link"),
    (lambda p, v: os.link(v, p), "has 2 links"),
    (lambda p, v: os.mkfifo(p), "is a FIFO"),
    (lambda p, v: os.mkdir(p), "is a directory"),
])
def test_scratch_open_refuses_what_is_not_a_regular_file_of_its_own(tmp_path, plant, found):
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep")
    (tmp_path / "root").mkdir()
    plant(str(tmp_path / "root" / "f"), str(victim))
    with pytest.raises(OSError) as ei:     # O_TRUNC: a hard link would empty the victim
        native.scratch_open(str(tmp_path / "root"), "f", os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                            0o600)
    assert ei.value.errno == errno.EPERM and found in ei.value.strerror
    assert victim.read_bytes() == b"keep"


def test_scratch_open_never_walks_through_a_linked_directory(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "root").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / "root" / "slot")
    with pytest.raises(OSError, match="slot is a symbolic link, not a directory"):
        native.scratch_open(str(tmp_path / "root"), "slot/f", os.O_WRONLY | os.O_CREAT, 0o600)
    assert os.listdir(tmp_path / "elsewhere") == []


# ---- meta ----------------------------------------------------------------------------------

def test_meta_mkdir_rmdir_cycle(tmp_path):
    root, d = str(tmp_path), ["t"]     # the tree's directories, relative to the root
    os.mkdir(tmp_path / "t")
    native.meta_prepare("mkdir", root, d, "d", 200, 95, 10, 0, False)   # crosses 99 -> 100
    t0 = soon()
    r = native.run_meta("mkdir", root, d, "d", 200, 95, 10, 0, False, t0, 0)
    assert r["errno"] == 0 and r["ops"] == 10 and r["start_ns"] >= t0
    t = tmp_path / "t"
    assert sorted(os.listdir(t)) == sorted(f"d{i}" for i in range(95, 105))
    assert all(os.path.isdir(t / f"d{i}") for i in range(95, 105))
    assert sum(hist.decode(r["hist"]).values()) == 10

    again = native.run_meta("mkdir", root, d, "d", 200, 95, 10, 0, False, soon(), 0)
    assert again["errno"] == errno.EEXIST and again["ops"] == 0   # precondition not made
    assert f"{t}/d95" in again["error"]

    native.meta_prepare("rmdir", root, d, "d", 200, 95, 12, 0, False)   # makes the missing ones
    r = native.run_meta("rmdir", root, d, "d", 200, 95, 12, 0, True, soon(), 0)
    assert r["errno"] == 0 and r["ops"] == 12 and os.listdir(t) == []


def test_meta_items_spread_over_the_tree_directories(tmp_path):
    root, dirs = str(tmp_path), [f"t{k}" for k in range(3)]
    for x in dirs:
        os.mkdir(tmp_path / x)
    native.meta_prepare("create", root, dirs, "f.", 4, 0, 12, 100, False)
    r = native.run_meta("create", root, dirs, "f.", 4, 0, 12, 100, False, soon(), 0)
    assert r["errno"] == 0 and r["ops"] == 12
    for k, x in enumerate(tmp_path / d for d in dirs):     # item i lives in dirs[i // 4]
        assert sorted(os.listdir(x)) == sorted(f"f.{i}" for i in range(4 * k, 4 * k + 4))
        assert all(os.path.getsize(os.path.join(x, n)) == 100 for n in os.listdir(x))
    for op in ("stat", "read", "unlink"):
        native.meta_prepare(op, root, dirs, "f.", 4, 0, 12, 100, False)
        r = native.run_meta(op, root, dirs, "f.", 4, 0, 12, 100, op == "stat", soon(), 0)
        assert r["errno"] == 0 and r["ops"] == 12, (op, r["error"])
    assert all(os.listdir(tmp_path / x) == [] for x in dirs)


def test_meta_errors(tmp_path):
    root, d = str(tmp_path), ["t"]
    os.mkdir(tmp_path / "t")
    with pytest.raises(ValueError):
        native.meta_prepare("chmod", root, d, "d", 1, 0, 1, 0, False)
    with pytest.raises(ValueError, match="past the last directory"):
        native.meta_prepare("mkdir", root, d, "d", 1, 0, 2, 0, False)
    r = native.run_meta("mkdir", root, ["nope"], "d", 1, 0, 1, 0, True, soon(), 0)
    assert r["errno"] == errno.ENOENT and f"cannot open {root}/nope" in r["error"]
    os.mkdir(tmp_path / "t" / "d0")
    (tmp_path / "t" / "d0" / "user-file").write_text("not ours")
    with pytest.raises(OSError) as ei:   # never removes what it did not make empty
        native.meta_prepare("mkdir", root, d, "d", 1, 0, 1, 0, False)
    assert ei.value.errno == errno.ENOTEMPTY


# ---- spawn / release / read_stamp ------------------------------------------------------------

def _spawn(argv, out_fd=-1, err_fd=-1, env=None, cwd=None, path=None):
    return native.spawn(path or argv[0], argv, env, cwd, out_fd, err_fd)


def _status(pid):
    _, st = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(st)


def test_spawn_echo_starts_at_t0(tmp_path):
    out = os.open(tmp_path / "out", os.O_WRONLY | os.O_CREAT, 0o644)
    pid, ctl, stamp = _spawn(["/bin/echo", "hello", "world"], out_fd=out)
    os.close(out)
    try:
        t0 = soon(20)
        native.release(ctl, t0, 1 * MS)
        start, start_mono, err = native.read_stamp(stamp)
    finally:
        os.close(ctl)
        os.close(stamp)
    assert err == 0
    assert start >= t0
    assert 0 < start_mono <= native.mono_ns()
    assert _status(pid) == 0
    native.forget_child(pid)
    assert (tmp_path / "out").read_text() == "hello world\n"


def test_spawn_searches_path_and_sets_env_and_cwd(tmp_path):
    out = os.open(tmp_path / "out", os.O_WRONLY | os.O_CREAT, 0o644)
    env = {"PATH": "/usr/bin:/bin", "MB_TEST": "42"}
    pid, ctl, stamp = native.spawn("sh", ["sh", "-c", 'echo "$MB_TEST $(pwd)"'], env,
                                   str(tmp_path), out, out)
    os.close(out)
    native.release(ctl, soon(), 0)
    assert native.read_stamp(stamp)[2] == 0
    os.close(ctl)
    os.close(stamp)
    assert _status(pid) == 0
    assert (tmp_path / "out").read_text() == f"42 {tmp_path}\n"


def test_spawned_child_keeps_only_stdio(tmp_path):
    out = os.open(tmp_path / "out", os.O_WRONLY | os.O_CREAT, 0o644)
    keep = os.open("/dev/null", os.O_RDONLY)
    os.set_inheritable(keep, True)     # even an inheritable fd of ours must not leak
    pid, ctl, stamp = _spawn(["/bin/ls", "-1", "/proc/self/fd"], out_fd=out)
    os.close(out)
    os.close(keep)
    native.release(ctl, soon(), 0)
    native.read_stamp(stamp)
    os.close(ctl)
    os.close(stamp)
    assert _status(pid) == 0
    fds = set((tmp_path / "out").read_text().split())
    assert {"0", "1", "2"} <= fds <= {"0", "1", "2", "3"}   # 3: ls's own listing


def test_cancelled_child_exits_without_running():
    pid, ctl, stamp = _spawn(["/bin/sleep", "30"])
    os.close(ctl)                                  # no release: cancel
    start, _, err = native.read_stamp(stamp)
    os.close(stamp)
    assert (start, err) == (0, errno.ECANCELED)
    assert _status(pid) == 127


def test_failing_exec_returns_errno():
    pid, ctl, stamp = _spawn(["/nonexistent/program"])
    t0 = soon()
    native.release(ctl, t0, 0)
    start, _, err = native.read_stamp(stamp)
    os.close(ctl)
    os.close(stamp)
    assert err == errno.ENOENT
    assert start >= t0                   # it did wait for T0 before trying
    assert _status(pid) == 127


def test_bad_cwd_is_reported_after_release(tmp_path):
    pid, ctl, stamp = _spawn(["/bin/true"], cwd=str(tmp_path / "missing"))
    native.release(ctl, soon(), 0)
    assert native.read_stamp(stamp)[2] == errno.ENOENT
    os.close(ctl)
    os.close(stamp)
    assert _status(pid) == 127


def _gone(pid: int, timeout: float = 10.0) -> bool:
    """True once pid has exited (a zombie waiting for its new parent counts as gone)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.01)
    return False


def _slot_with_sleeping_child(forget: bool) -> tuple[int, int]:
    """Forks a stand-in slot: term handler on, a released `sleep 60`, then a long C wait.

    Returns (slot pid, sleep pid) once the sleep has exec'd.
    """
    r, w = os.pipe()
    slot = os.fork()
    if slot == 0:  # the stand-in slot: must never return into pytest
        try:
            os.close(r)
            native.install_term_handler()
            pid, ctl, stamp = native.spawn("/bin/sleep", ["sleep", "60"], None, None, -1, -1)
            if forget:
                native.forget_child(pid)
            native.release(ctl, native.now_ns(), 0)
            native.read_stamp(stamp)          # returns once exec happened
            os.write(w, pid.to_bytes(4, "little"))
            native.wait_until(native.now_ns() + 60_000 * MS, 0)   # a C loop holds the slot
        finally:
            os._exit(99)
    os.close(w)
    data = os.read(r, 4)
    os.close(r)
    return slot, int.from_bytes(data, "little")


def test_term_handler_kills_the_child_group():
    slot, child = _slot_with_sleeping_child(forget=False)
    assert child > 0
    os.kill(slot, signal.SIGTERM)
    assert _status(slot) == 128 + signal.SIGTERM
    assert _gone(child)


def test_forgotten_child_is_left_alone():
    slot, child = _slot_with_sleeping_child(forget=True)
    try:
        os.kill(slot, signal.SIGTERM)
        assert _status(slot) == 128 + signal.SIGTERM
        assert not _gone(child, timeout=0.2)
    finally:
        os.killpg(child, signal.SIGKILL)
    assert _gone(child)
