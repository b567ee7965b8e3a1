"""Scratch is hostile ground for meta.* too (issue 28, item 7): a symbolic link, a hard link,
a FIFO or a socket planted where an item goes (mdtest_tree.0/file.mdtest.0.N) is a phase
error naming what was found and where; nothing is written through it and nothing waits on
it. On the local engine and on Dask namespace nodes (tests/cluster_lab.py), through the
command line, and driven directly (the timed loop's own checks, an object planted after the
untimed preparation)."""
from __future__ import annotations

import json
import os
import socket
import stat

import pytest

from builders import ctx_for
from manybench.kernels.scratchfs import root_of
from conftest import export_json, run_cli

VICTIM = b"a file outside scratch: a planted link points here and it keeps these bytes\n"
PY = "python3"
BYTES = 4096      # meta.read lays out files shorter than this: main wrote through the link

# A command phase plants the object at items 0 and 1 of the shared tree (rank 0's); T is
# the tree's root ({scratch}/{run}/mdtest_tree.0), V the victim directory.
PLANTS = {
    "symbolic link": ('for i in 0 1; do ln -s "$V/f.$i" "$T/file.mdtest.0.$i"; done',
                      "file.mdtest.0.0 is a symbolic link"),
    "hard link": ('ln "$V/f.0" "$T/file.mdtest.0.0"', "file.mdtest.0.0 has 2 links"),
    "fifo": ('mkfifo "$T/file.mdtest.0.0"', "file.mdtest.0.0 is a FIFO"),
    # bound from inside T: a socket's path is limited to 107 bytes
    "socket": (f'cd "$T" && {PY} -c "import socket; '
               f'socket.socket(socket.AF_UNIX).bind(\'file.mdtest.0.0\')"',
               "file.mdtest.0.0 is a socket"),
}


def _victim(tmp_path):
    (tmp_path / "scr").mkdir()
    v = tmp_path / "victim"
    v.mkdir()
    for i in (0, 1):
        (v / f"f.{i}").write_bytes(VICTIM)
    return v


def _plan(tmp_path, plant: str, kernel: str, cluster: bool) -> str:
    script = (f'T="{tmp_path}/scr/{{run}}/mdtest_tree.0"; V="{tmp_path}/victim"; '
              f'mkdir -p -m 700 "$T"; ' + PLANTS[plant][0])
    plan = tmp_path / "p.toml"
    plan.write_text(f"""
name = "hostile-meta"
scratch = "{tmp_path}/scr"
{'[placement]' + chr(10) + 'workers = 1' if cluster else ''}
[[task]]
name = "plant"
command = ["sh", "-c", {json.dumps(script)}]
[[task]]
name = "meta"
kernel = "{kernel}"
items = 4
bytes = {BYTES if kernel != "meta.stat" else 0}
timeout = "20s"
""")
    return str(plan)


def _check(tmp_path, victim, res, out, plant: str) -> dict:
    assert res.returncode == 1, (res.returncode, res.stderr)
    rows = {r["task"]: r for r in export_json(str(out))}
    assert rows["plant"]["status"] == "ok", rows["plant"]
    # the object is named, not a timeout (a FIFO hung main's phase until the task's)
    assert rows["meta"]["status"] == "error" and PLANTS[plant][1] in rows["meta"]["error"], \
        rows["meta"]
    for i in (0, 1):
        assert (victim / f"f.{i}").read_bytes() == VICTIM      # nothing written through it
    assert sorted(os.listdir(victim)) == ["f.0", "f.1"]
    return rows["meta"]


LOCAL = [(k, p) for k in ("meta.read", "meta.stat", "meta.create") for p in PLANTS]


@pytest.mark.e2e
@pytest.mark.parametrize("kernel, plant", LOCAL)
def test_an_object_at_a_meta_item_is_a_phase_error_never_a_write(tmp_path, kernel, plant):
    victim = _victim(tmp_path)
    out = tmp_path / "out"
    res = run_cli("run", _plan(tmp_path, plant, kernel, False), "-o", str(out), "-q",
                  timeout=120)
    _check(tmp_path, victim, res, out, plant)


# ---- on Dask nodes ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def lab():
    from cluster_lab import DaskLab
    with DaskLab(1, slots=1) as lab:
        yield lab


CLUSTER = [(k, "symbolic link") for k in ("meta.read", "meta.stat", "meta.create")] + \
          [("meta.read", p) for p in ("hard link", "fifo", "socket")]


@pytest.mark.e2e
@pytest.mark.parametrize("kernel, plant", CLUSTER)
def test_an_object_at_a_meta_item_on_a_dask_node_is_a_phase_error(lab, tmp_path, kernel, plant):
    victim = _victim(tmp_path)
    out = tmp_path / "out"
    res = run_cli("run", _plan(tmp_path, plant, kernel, True), "-o", str(out), "-q",
                  "--scheduler", lab.scheduler, timeout=300)
    row = _check(tmp_path, victim, res, out, plant)
    assert row["node"] == "n1"                     # on the Dask node, not the coordinator


# ---- driven directly: the preparation's and the timed loop's own checks ----------------------

def _tree(ctx) -> str:
    return os.path.join(root_of(ctx), "mdtest_tree.0")


def _outcome(kernel: str, ctx, params: dict, plant=None) -> str:
    """The phase's error: from its preparation, or from its timed loop (plant(tree) runs
    between the two: an object planted after the untimed checks)."""
    from manybench import _native
    from manybench.kernels import KERNELS
    from manybench.kernels.base import KernelError
    k = KERNELS[kernel]
    try:
        st = k.prepare(ctx, params)
    except KernelError as e:
        return str(e)
    if plant:
        plant(_tree(ctx))
    r = k.run(st, _native.now_ns() + 1_000_000, 0)
    assert r.status == "error", r
    return r.error


def _link(tree: str, victim) -> None:
    os.symlink(victim, os.path.join(tree, "file.mdtest.0.1"))


@pytest.mark.parametrize("at", [False, True])
@pytest.mark.parametrize("op", ["read", "stat", "create"])
def test_a_link_at_an_item_is_refused_before_t0(tmp_path, op, at):
    ctx = ctx_for(tmp_path)
    os.makedirs(_tree(ctx), mode=0o700)
    victim = tmp_path / "victim"
    victim.write_bytes(VICTIM)
    _link(_tree(ctx), victim)
    err = _outcome(f"meta.{op}", ctx, {"items": 3, "bytes": BYTES, "at": at})
    assert f"{_tree(ctx)}/file.mdtest.0.1 is a symbolic link" in err, err
    assert victim.read_bytes() == VICTIM
    assert os.path.islink(os.path.join(_tree(ctx), "file.mdtest.0.1"))   # left, not removed


@pytest.mark.parametrize("at", [False, True])
@pytest.mark.parametrize("op", ["read", "stat", "create"])
def test_a_link_planted_after_the_preparation_is_refused_by_the_timed_loop(tmp_path, op, at):
    """O_NOFOLLOW (read), O_EXCL (create) and the stat's own answer (stat): no call added
    to the timed loop, and the object is named."""
    ctx = ctx_for(tmp_path)
    victim = tmp_path / "victim"
    victim.write_bytes(VICTIM)

    def plant(tree):
        path = os.path.join(tree, "file.mdtest.0.1")
        if os.path.lexists(path):
            os.unlink(path)
        os.symlink(victim, path)
    err = _outcome(f"meta.{op}", ctx, {"items": 3, "bytes": 16, "at": at}, plant)
    assert f"{_tree(ctx)}/file.mdtest.0.1 is a symbolic link" in err, err
    assert victim.read_bytes() == VICTIM


def test_a_link_at_a_directory_item_is_refused(tmp_path):
    """meta.statdir stat()ed the directory a link pointed at and said ok."""
    ctx = ctx_for(tmp_path)
    os.makedirs(_tree(ctx), mode=0o700)
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", os.path.join(_tree(ctx), "dir.mdtest.0.1"))
    for op in ("statdir", "rename", "rmdir", "mkdir"):
        err = _outcome(f"meta.{op}", ctx, {"items": 3})
        assert "dir.mdtest.0.1 is a symbolic link, not a directory" in err, (op, err)
    assert os.path.isdir(tmp_path / "elsewhere")


def test_a_socket_planted_after_the_preparation_is_named_by_the_stat(tmp_path):
    ctx = ctx_for(tmp_path)

    def plant(tree):
        os.unlink(os.path.join(tree, "file.mdtest.0.2"))
        s = socket.socket(socket.AF_UNIX)
        cwd = os.getcwd()
        os.chdir(tree)        # a socket's path is limited to 107 bytes
        try:
            s.bind("file.mdtest.0.2")
        finally:
            os.chdir(cwd)
            s.close()
    err = _outcome("meta.stat", ctx, {"items": 3}, plant)
    assert "file.mdtest.0.2 is a socket, not a regular file" in err, err


def test_a_fifo_planted_after_the_preparation_never_blocks_a_read(tmp_path):
    ctx = ctx_for(tmp_path)

    def plant(tree):
        os.unlink(os.path.join(tree, "file.mdtest.0.0"))
        os.mkfifo(os.path.join(tree, "file.mdtest.0.0"))
    err = _outcome("meta.read", ctx, {"items": 3, "bytes": 16}, plant)
    assert "file.mdtest.0.0 is a FIFO" in err, err


def test_a_stray_object_among_leftovers_is_named_not_removed(tmp_path):
    """A name of ours beyond this phase's items (a leftover to clear) that is not what we
    made: refused, left where it is."""
    ctx = ctx_for(tmp_path)
    os.makedirs(_tree(ctx), mode=0o700)
    stray = os.path.join(_tree(ctx), "file.mdtest.0.7")
    os.symlink(tmp_path / "victim", stray)
    err = _outcome("meta.create", ctx, {"items": 2})
    assert "file.mdtest.0.7 is a symbolic link" in err, err
    assert os.path.islink(stray)


def test_a_tree_directory_another_user_can_change_is_refused(tmp_path):
    """The timed loop walks full paths, as mdtest does: only the tree's owner may be able to
    swap a directory of it for a link while it runs."""
    ctx = ctx_for(tmp_path)
    os.makedirs(_tree(ctx), mode=0o700)
    os.chmod(_tree(ctx), 0o777)
    err = _outcome("meta.create", ctx, {"items": 2})
    assert "mdtest_tree.0 can be changed by other users (mode 777, owner uid" in err, err
    assert os.listdir(_tree(ctx)) == []
    assert stat.S_IMODE(os.stat(_tree(ctx)).st_mode) == 0o777
