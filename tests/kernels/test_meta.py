"""meta.*: mdtest's phases in mdtest's layout, by full path (at = true: relative)."""
from __future__ import annotations

import errno
import os

import pytest

pytest.importorskip("manybench._native",
                    reason="C kernels not built (python setup.py build_ext --inplace)")
from manybench import _native  # noqa: E402
from manybench.kernels import KERNELS  # noqa: E402
from manybench.kernels.base import KernelError  # noqa: E402
from manybench.kernels.meta import tree_dirs, tree_size  # noqa: E402
from manybench.kernels.scratchfs import root_of  # noqa: E402
from builders import check_latency, ctx_for, run_kernel  # noqa: E402
from suite_paths import FIXTURES

TREES = str(FIXTURES / "meta" / "mdtest_4.1_trees.txt")


def root(ctx, rank: int | None = None) -> str:
    """The tree's root directory: shared, or slot `rank`'s own (unique)."""
    name = "mdtest_tree.0" if rank is None else f"mdtest_tree.{rank}.0"
    return os.path.join(root_of(ctx), name)


def listing(top: str) -> list[str]:
    """Every path below top's trees (mdtest_tree.*), relative to top."""
    out = []
    for d, dirs, files in os.walk(top):
        rel = os.path.relpath(d, top)
        if rel == ".":
            dirs[:] = [n for n in dirs if n.startswith("mdtest_tree.")]
            files = []
        out += [os.path.normpath(os.path.join(rel, n)) for n in dirs + files]
    return sorted(out)


def test_the_layout_is_mdtests(tmp_path):
    """Items and tree directories named and nested as real mdtest made them (fixture), at
    the same depth: mdtest -d D's trees are in D/test-dir.0-0, meta.*'s with dir = D in
    D/<run> (the run's root), not one directory deeper in its shared/."""
    want: dict[str, list[str]] = {"shared": [], "unique": []}
    for line in open(TREES):
        parts = line.strip().split("/")
        if len(parts) > 3 and parts[2] == "test-dir.0-0":   # ./shared/test-dir.0-0/...
            want[parts[1]].append("/".join(parts[3:]))
    for rank in range(2):     # mdtest -n 14 -b 2 -z 2, 2 tasks, one shared tree
        for op in ("mkdir", "create"):
            r = run_kernel(f"meta.{op}", ctx_for(tmp_path / "s", rank, 2),
                           {"items": 14, "branch": 2, "depth": 2})
            assert r.status == "ok" and r.ops == 14, r.error
    assert listing(root_of(ctx_for(tmp_path / "s"))) == sorted(want["shared"])
    for rank in range(2):     # mdtest -u -n 7 -b 2 -z 1: 3 directories, 2 items each
        for op in ("mkdir", "create"):
            r = run_kernel(f"meta.{op}", ctx_for(tmp_path / "u", rank, 2),
                           {"items": 7, "branch": 2, "depth": 1, "unique": True})
            assert r.status == "ok" and r.ops == 6, r.error
    assert listing(root_of(ctx_for(tmp_path / "u"))) == sorted(want["unique"])


def test_tree_numbering():
    assert tree_size(2, 2) == 7 and tree_size(1, 3) == 4 and tree_size(5, 0) == 1
    assert [os.path.relpath(d, "/t") for d in tree_dirs("/t", "mdtest_tree", 2, 2)] == [
        "mdtest_tree.0", "mdtest_tree.0/mdtest_tree.1", "mdtest_tree.0/mdtest_tree.2",
        "mdtest_tree.0/mdtest_tree.1/mdtest_tree.3", "mdtest_tree.0/mdtest_tree.1/mdtest_tree.4",
        "mdtest_tree.0/mdtest_tree.2/mdtest_tree.5", "mdtest_tree.0/mdtest_tree.2/mdtest_tree.6"]


@pytest.mark.parametrize("at", [False, True])
def test_directory_phases_in_sequence(tmp_path, at):
    ctx = ctx_for(tmp_path)
    names = sorted(f"dir.mdtest.0.{i}" for i in range(50))
    p = {"items": 50, "at": at}
    r = run_kernel("meta.mkdir", ctx, p)
    assert r.status == "ok" and r.ops == 50
    check_latency(r)
    assert sorted(os.listdir(root(ctx))) == names
    for op in ("statdir", "rename"):
        r = run_kernel(f"meta.{op}", ctx, p)
        assert r.status == "ok" and r.ops == 50, (op, r.error)
        assert sorted(os.listdir(root(ctx))) == names     # rename keeps the set of names
    r = run_kernel("meta.rmdir", ctx, p)
    assert r.status == "ok" and r.ops == 50 and os.listdir(root(ctx)) == []


@pytest.mark.parametrize("at", [False, True])
def test_file_phases_in_sequence_with_bytes(tmp_path, at):
    ctx = ctx_for(tmp_path)
    p = {"items": 25, "at": at, "bytes": 3000}
    r = run_kernel("meta.create", ctx, p)
    assert r.status == "ok" and r.ops == 25 and r.bytes == 25 * 3000
    files = [os.path.join(root(ctx), f"file.mdtest.0.{i}") for i in range(25)]
    assert all(os.path.getsize(f) == 3000 for f in files)
    assert oct(os.stat(files[0]).st_mode & 0o777) == oct(0o664 & ~_umask())
    assert run_kernel("meta.create", ctx, p).status == "ok"        # a repeat: made absent
    for op in ("stat", "read"):
        r = run_kernel(f"meta.{op}", ctx, p)
        assert r.status == "ok" and r.ops == 25, (op, r.error)
    assert r.bytes == 25 * 3000
    r = run_kernel("meta.unlink", ctx, p)
    assert r.status == "ok" and r.ops == 25 and os.listdir(root(ctx)) == []
    r = run_kernel("meta.read", ctx, {"items": 5, "bytes": 100})    # lays out missing files
    assert r.status == "ok" and r.ops == 5 and r.bytes == 500


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_a_short_file_read_is_an_error(tmp_path):
    ctx = ctx_for(tmp_path)
    k = KERNELS["meta.read"]
    st = k.prepare(ctx, {"items": 3, "bytes": 4096})
    with open(os.path.join(root(ctx), "file.mdtest.0.1"), "w") as f:
        f.write("x")                                   # someone shortened it after prepare
    r = k.run(st, _native.now_ns() + 1_000_000, 0)
    assert r.status == "error" and r.ops == 1 and "file.mdtest.0.1" in r.error


@pytest.mark.parametrize("total,workers", [(10, 3), (2, 4), (9, 3)])
def test_total_is_split_over_workers(tmp_path, total, workers):
    counts = []
    for rank in range(workers):
        r = run_kernel("meta.mkdir", ctx_for(tmp_path, rank, workers), {"total": total})
        assert r.status == "ok"
        counts.append(r.ops)
    assert sum(counts) == total
    assert max(counts) - min(counts) <= 1 and counts == sorted(counts, reverse=True)


def test_repeats_and_fewer_items_clear_leftovers_but_not_strangers(tmp_path):
    for rank in range(3):
        assert run_kernel("meta.mkdir", ctx_for(tmp_path, rank, 3), {"items": 4}).ops == 4
    d = root(ctx_for(tmp_path))
    assert sorted(os.listdir(d)) == sorted(f"dir.mdtest.{r}.{i}" for r in range(3)
                                           for i in range(4))
    os.mkdir(os.path.join(d, "dir.mdtest.0.007"))      # not one of ours: left alone
    # fewer workers and items: rank 0 sweeps ranks >= workers and indices beyond the range
    for rank in range(2):
        assert run_kernel("meta.mkdir", ctx_for(tmp_path, rank, 2), {"items": 2}).ops == 2
    assert sorted(os.listdir(d)) == sorted([f"dir.mdtest.{r}.{i}" for r in range(2)
                                            for i in range(2)] + ["dir.mdtest.0.007"])


def test_a_tree_too_big_for_the_items_is_refused(tmp_path):
    with pytest.raises(KernelError, match="3 items per slot cannot fill the tree's 7"):
        KERNELS["meta.mkdir"].prepare(ctx_for(tmp_path), {"items": 3, "branch": 2,
                                                          "depth": 2})
    assert KERNELS["meta.mkdir"].check({"items": 1, "branch": 10, "depth": 6}) != []


def test_meta_error_is_one_clear_line(tmp_path):
    ctx = ctx_for(tmp_path)
    k = KERNELS["meta.mkdir"]
    st = k.prepare(ctx, {"items": 3})
    os.mkdir(os.path.join(root(ctx), "dir.mdtest.0.1"))       # someone got there first
    r = k.run(st, _native.now_ns() + 1_000_000, 0)
    assert r.status == "error" and r.ops == 1
    assert r.error == (f"meta.mkdir: mkdir {root(ctx)}/dir.mdtest.0.1: "
                       f"{os.strerror(errno.EEXIST)}")
    assert sum(r.hist.values()) == 1


def test_meta_prepare_failure_is_a_kernel_error(tmp_path):
    ctx = ctx_for(tmp_path)
    os.makedirs(os.path.join(root(ctx), "dir.mdtest.0.0"))
    open(os.path.join(root(ctx), "dir.mdtest.0.0", "precious"), "w").close()
    with pytest.raises(KernelError, match=r"meta.mkdir: preparing dir.mdtest.0.0 in .* for "
                                          r"mkdir: "):
        KERNELS["meta.mkdir"].prepare(ctx, {"items": 1})
    assert os.path.exists(os.path.join(root(ctx), "dir.mdtest.0.0", "precious"))
