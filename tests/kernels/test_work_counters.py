"""benchmarks/work.py: the work a tool did, counted where noise cannot move it (system calls
on the benchmark's files by size, bytes at the device)."""
from __future__ import annotations

import os
import shutil
import sys

import pytest

from suite_paths import ROOT

sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import work  # noqa: E402

TRACE = """\
openat(AT_FDCWD</x>, "/d/f.0", O_WRONLY|O_CREAT, 0644) = 6</d/f.0>
fallocate(6</d/f.0>, 0, 0, 2097152) = 0
fadvise64(6</d/f.0>, 0, 2097152, POSIX_FADV_SEQUENTIAL) = 0
pwrite64(6</d/f.0>, "\\0\\0"..., 1048576, 0) = 1048576
pwrite64(6</d/f.0>, "\\0\\0"..., 1048576, 1048576) = 1048576
write(1</dev/pts/0>, "done\\n", 5) = 5
read(3</usr/lib/python3/x.pyc>, "..."..., 4096) = 4096
openat(AT_FDCWD</x>, "/d/.manybench-run", O_RDONLY) = 7</d/.manybench-run>
fsync(6</d/f.0>) = 0
close(6</d/f.0>) = 0
"""


def test_calls_on_the_directorys_files_are_counted_by_size_and_advice():
    got = work.parse(TRACE, "/d")
    assert got == {("open", ""): 1, ("fallocate", ""): 1,
                   ("fadvise64", "POSIX_FADV_SEQUENTIAL"): 1, ("pwrite64", "1048576"): 2,
                   ("fsync", ""): 1, ("close", ""): 1}     # not stdout, imports, markers


def test_a_path_walk_from_the_current_directory_is_the_plain_call_and_windows_filter():
    """mkdir() and mkdirat(AT_FDCWD, full path) walk the same path (glibc picks either);
    a call relative to a directory descriptor (meta.* at = true) keeps its name. With -ttt
    stamps only calls inside the given windows count (a phase's timed window, not its
    untimed layout)."""
    trace = "\n".join([
        '10.5 mkdir("/d/a", 0775) = 0',
        '11.5 mkdirat(AT_FDCWD</x>, "/d/b", 0775) = 0',
        '12.5 mkdirat(5</d>, "c", 0775) = 0',
        '13.5 unlinkat(AT_FDCWD</x>, "/d/b", AT_REMOVEDIR) = 0',
        '14.5 unlinkat(AT_FDCWD</x>, "/d/f", 0) = 0',
        '15.5 newfstatat(AT_FDCWD</x>, "/d/a", {st_mode=S_IFDIR|0775}, 0) = 0'])
    assert work.parse(trace, "/d") == {("mkdir", ""): 2, ("mkdirat", ""): 1, ("rmdir", ""): 1,
                                       ("unlink", ""): 1, ("stat", ""): 1}
    assert work.parse(trace, "/d", [(11.0, 13.0)]) == {("mkdir", ""): 1, ("mkdirat", ""): 1}


def test_two_sides_agree_on_the_calls_asked_and_the_device_bytes():
    a = work.Work(100 * 2**20, 0, work.parse(TRACE, "/d"))
    b = work.Work(102 * 2**20, 0, work.parse(TRACE.replace("fallocate", "ftruncate"), "/d"))
    assert work.agree(a, b, ("pwrite64", "fsync")) == []
    assert work.agree(a, b) == ["fallocate: 1 vs 0", "ftruncate: 0 vs 1"]
    c = work.Work(200 * 2**20, 0, a.calls)
    assert work.agree(a, c, ("pwrite64",)) == ["device read: 100.0 vs 200.0 MiB"]


def test_a_real_commands_work_is_measured(tmp_path):
    if not work.strace():
        pytest.skip("needs strace (Debian package strace)")
    out = tmp_path / "out"
    got, _ = work.measure(["dd", "if=/dev/zero", f"of={out}", "bs=64k", "count=16",
                           "conv=fsync", "status=none"], str(tmp_path))
    assert got.calls[("write", str(64 * 1024))] == 16 and got.calls[("fsync", "")] == 1
    assert shutil.which("dd") and os.path.getsize(out) == 16 * 64 * 1024


def test_another_writer_on_the_device_is_not_the_commands_work(tmp_path):
    """Device bytes are the measured command's own (its process tree's I/O accounting), not
    the whole device's: on a shared machine another writer on the same disk made io.read
    look as if it wrote 46 MiB. The command writes 4 MiB and syncs them, a thread of this
    process (not the command) writes 32 MiB to the same file system meanwhile."""
    if not work.strace():
        pytest.skip("needs strace (Debian package strace)")
    if work.device_of(str(tmp_path)) is None:
        pytest.skip("needs a directory on a block device (tmp_path is on tmpfs)")
    import threading
    stop = threading.Event()

    def other_writer() -> None:
        block = b"x" * 2**20
        while not stop.is_set():
            with open(tmp_path / "other", "wb") as f:
                for _ in range(32):
                    f.write(block)
                f.flush()
                os.fsync(f.fileno())
    t = threading.Thread(target=other_writer)
    t.start()
    try:
        got, _ = work.measure(["sh", "-c", f"sleep 0.3; dd if=/dev/zero of={tmp_path}/mine "
                               "bs=1M count=4 conv=fsync status=none; sleep 0.3"],
                              str(tmp_path))
    finally:
        stop.set()
        t.join()
    assert 4 * 2**20 <= got.device_write < 5 * 2**20, got.line()


def test_only_the_items_direction_of_device_bytes_is_compared_when_asked():
    """A write job's device reads are its program's pages loaded cold (fio read 5.3 MiB of
    its libraries during its first write job here), not the writes' work: bench_io compares
    the device bytes of the item's direction and shows the other beside."""
    a = work.Work(0, 128 * 2**20, work.parse(TRACE, "/d"))
    b = work.Work(5 * 2**20, 128 * 2**20, a.calls)
    assert work.agree(a, b, ("pwrite64",), device=("write",)) == []
    assert work.agree(a, b, ("pwrite64",)) == ["device read: 0.0 vs 5.0 MiB"]
    c = work.Work(0, 100 * 2**20, a.calls)
    assert work.agree(a, c, ("pwrite64",), device=("write",)) == [
        "device write: 128.0 vs 100.0 MiB"]
