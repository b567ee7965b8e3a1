"""Scratch is hostile ground (issue 18, item 1): a hard link, a symbolic link, a FIFO or a
socket planted at a slot's file, or the slot's directory replaced by a link to another
directory, is a phase error naming what was found; nothing outside scratch is written, and
nothing hangs. Plain and inside a wrap (mbkernel), on the local engine (Dask: test_cluster's
hostile case)."""
from __future__ import annotations

import json
import os
import stat

import pytest

from conftest import export_json, run_cli

VICTIM = b"the file a planted link points at; it must keep these bytes\n" * 3
PY = "python3"

# A command phase plants the object where the next task's slot file goes. S is the slot's
# directory ({scratch}/{run}/{node}.{slot}: the plan's scratch is fixed below), V the victim.
PLANTS = {
    "hard link": ('ln "$V/io.dat" "$S/io.dat"', "has 2 links"),
    "symbolic link": ('ln -s "$V/io.dat" "$S/io.dat"', "io.dat is a symbolic link"),
    "fifo": ('mkfifo "$S/io.dat"', "io.dat is a FIFO"),
    # bound from inside $S: a socket's path is limited to 107 bytes, and a slot's path
    # under pytest's tmp (longer on an xdist worker: popen-gwN/) can exceed it
    "socket": (f'cd "$S" && {PY} -c "import socket; socket.socket(socket.AF_UNIX).bind(\'io.dat\')"',
               "io.dat is a socket"),
    "directory symlink": ('mv "$S" "$S.moved" && ln -s "$V" "$S"', "is a symbolic link, not a "
                                                                    "directory"),
}


def plan_text(tmp, plant: str, kernel: str, wrap: bool) -> str:
    script = (f'S="{tmp}/scr/{{run}}/{{node}}.{{slot}}"; V="{tmp}/victim"; mkdir -p "$S"; '
              + plant)
    text = f"""
name = "hostile"
scratch = "{tmp}/scr"
[[task]]
name = "plant"
command = ["sh", "-c", {json.dumps(script)}]
[[task]]
name = "io"
kernel = "{kernel}"
size = "256KiB"
block = "64KiB"
timeout = "20s"
"""
    if kernel == "io.write":
        text += 'fsync = "never"\n'
    if wrap:
        text += '[[variant]]\nname = "wrapped"\nwrap = ["env", "--"]\n'
    return text


def _victim(tmp_path):
    (tmp_path / "scr").mkdir()
    v = tmp_path / "victim"
    v.mkdir()
    (v / "io.dat").write_bytes(VICTIM)
    return v


# every object under io.write, plain and wrapped; io.read (which lays its file out) with the
# two that changed a file or hung it
CASES = [("io.write", what, wrap) for what in PLANTS for wrap in (False, True)] + \
        [("io.read", what, wrap) for what in ("fifo", "hard link") for wrap in (False, True)]


@pytest.mark.e2e
@pytest.mark.parametrize("kernel, what, wrap", CASES)
def test_an_object_planted_in_scratch_is_a_phase_error_never_a_write(tmp_path, what, wrap,
                                                                     kernel):
    victim = _victim(tmp_path)
    plant, words = PLANTS[what]
    plan = tmp_path / "p.toml"
    plan.write_text(plan_text(tmp_path, plant, kernel, wrap))
    out = tmp_path / "out"
    res = run_cli("run", str(plan), "-o", str(out), "-q", timeout=120)   # never a hang
    assert res.returncode == 1, (res.returncode, res.stderr)
    rows = {r["task"]: r for r in export_json(str(out))}
    assert rows["plant"]["status"] == "ok", rows["plant"]
    assert rows["io"]["status"] == "error" and words in rows["io"]["error"], rows["io"]
    assert (victim / "io.dat").read_bytes() == VICTIM        # nothing written through it
    assert sorted(os.listdir(victim)) == ["io.dat"]


def test_a_scratch_root_someone_else_made_is_refused_not_used(tmp_path):
    """{scratch}/<run> made before the run by someone else (it cannot know the id unless it
    guessed it): a phase error, and the directory is left alone."""
    from manybench.node.scratch import Scratch, ScratchError
    (tmp_path / "scr" / "r1").mkdir(parents=True)
    (tmp_path / "scr" / "r1" / "theirs").write_text("x")
    with pytest.raises(ScratchError, match="not made by run r1"):
        Scratch("r1", "n").run_dir(str(tmp_path / "scr"))
    assert os.listdir(tmp_path / "scr" / "r1") == ["theirs"]
    (tmp_path / "scr" / "r2").symlink_to(tmp_path)
    with pytest.raises(ScratchError, match="is a symbolic link"):
        Scratch("r2", "n").run_dir(str(tmp_path / "scr"))


def test_the_run_roots_temporary_name_cannot_be_planted(tmp_path):
    """The root was built under {root}.{node}.{pid}.tmp: someone who made that name first
    (pids are few) failed the node's every phase; now a random name made exclusively."""
    from manybench.node.scratch import Scratch
    victim = tmp_path / "victim"
    victim.mkdir()
    base = tmp_path / "scr"
    base.mkdir()
    (base / f"r1.n.{os.getpid()}.tmp").symlink_to(victim)
    root = Scratch("r1", "n").run_dir(str(base))
    assert os.path.isdir(os.path.join(root, "shared")) and os.listdir(victim) == []
    assert sorted(os.listdir(base)) == ["r1", f"r1.n.{os.getpid()}.tmp"]


def test_the_run_root_is_fresh_and_owner_only(tmp_path):
    from manybench.node.scratch import Scratch
    s = Scratch("r1", "n")
    root = s.run_dir(str(tmp_path))
    assert stat.S_IMODE(os.stat(root).st_mode) == 0o700
    assert os.path.isdir(os.path.join(root, "shared"))
    # a second node of the run on a shared file system finds it marked and uses it
    assert Scratch("r1", "other").run_dir(str(tmp_path)) == root


def test_a_node_leaving_a_shared_scratch_removes_only_its_own(tmp_path):
    """On a shared file system every node of the run works under one root: a node that ends
    (lost, aborted or closed) removes its own slot directories only; the root, shared/ and
    meta.*'s trees (in the root, as mdtest's in its test-dir) go with the last node out."""
    from manybench.node.scratch import Scratch
    a, b = Scratch("r1", "a"), Scratch("r1", "b")
    root = a.run_dir(str(tmp_path))
    dirs = [s.slot_dir(str(tmp_path), 0) for s in (a, b)]
    for d in dirs:
        os.makedirs(d)
        open(os.path.join(d, "io.dat"), "w").close()
    os.makedirs(os.path.join(root, "mdtest_tree.0", "mdtest_tree.1", "dir.mdtest.0.1"))
    a.cleanup()
    assert os.path.isfile(os.path.join(dirs[1], "io.dat"))
    assert os.path.isdir(os.path.join(root, "shared")) and not os.path.exists(dirs[0])
    assert os.path.isdir(os.path.join(root, "mdtest_tree.0"))
    b.cleanup()
    assert not os.path.exists(root)


# ---- the kernels' own opens, driven directly (the fast pass) --------------------------------

def _victim_file(tmp_path):
    v = tmp_path / "victim.dat"
    v.write_bytes(VICTIM)
    return v


@pytest.mark.parametrize("kernel", ["io.randwrite", "io.randread", "io.write", "io.read"])
def test_every_io_kernel_refuses_a_hard_link_at_its_file(tmp_path, kernel):
    from builders import ctx_for
    from manybench.kernels import KERNELS
    from manybench.kernels.base import KernelError
    ctx = ctx_for(tmp_path)
    os.makedirs(ctx.scratch)
    victim = _victim_file(tmp_path)
    os.link(victim, os.path.join(ctx.scratch, "io.dat"))
    params = {"size": 1 << 20, "block": 4096, "file": "io.dat"}
    if kernel.startswith("io.rand"):
        params["ops"] = 10
    with pytest.raises(KernelError, match="has 2 links"):
        KERNELS[kernel].prepare(ctx, params)
    assert victim.read_bytes() == VICTIM


def test_a_link_planted_in_meta_trees_place_is_refused(tmp_path):
    from builders import ctx_for
    from manybench.kernels import KERNELS
    from manybench.kernels.base import KernelError
    from manybench.kernels.scratchfs import root_of
    ctx = ctx_for(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", os.path.join(root_of(ctx), "mdtest_tree.0"))
    with pytest.raises(KernelError, match="mdtest_tree.0 is a symbolic link"):
        KERNELS["meta.mkdir"].prepare(ctx, {"total": 10})
    assert os.listdir(tmp_path / "elsewhere") == []


def test_a_parallel_tasks_directory_replaced_by_a_link_is_refused(tmp_path):
    """The launcher runs in the slot's directory: reached by descriptor, as a command's
    (main made it with os.makedirs, which takes a link to a directory for one)."""
    from builders import ctx_for
    from manybench.kernels import KERNELS
    from manybench.kernels.base import KernelError
    ctx = ctx_for(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    os.makedirs(os.path.dirname(ctx.scratch))
    os.symlink(tmp_path / "elsewhere", ctx.scratch)
    with pytest.raises(KernelError, match=r"r1/0 is a symbolic link, not a directory"):
        KERNELS["mpi"].prepare(ctx, {"ranks": 1})
    assert os.listdir(tmp_path / "elsewhere") == []


def test_a_run_id_is_not_guessed(tmp_path):
    """A run's scratch root is named by its id: with 16 random bits, 65,536 directories made
    ahead refused any run's root of that second; now 64 bits, readable as hex. A stored run
    of the former width still opens."""
    import re
    from manybench.model import Plan
    from manybench.report import render_text
    from manybench.results.store import Store
    from manybench.run.coordinator import new_run_id
    ids = {new_run_id("io-bw") for _ in range(1000)}
    assert len(ids) == 1000
    assert all(re.fullmatch(r"io-bw-\d{8}-\d{6}-[0-9a-f]{16}", i) for i in ids), ids
    with Store(tmp_path) as st:
        st.begin_run("io-bw-20260101-000000-abcd", Plan(name="io-bw", tasks=[]), [], {})
    assert "io-bw-20260101-000000-abcd" in render_text(tmp_path)


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a directory to another user needs root "
                    "(CI runs as root)")
def test_a_run_root_made_first_by_another_user_is_refused(tmp_path):
    """A run's scratch root made ahead by another user, marked with the run's id and not
    writable by others, passed every check but its owner's: that user then owned the tree
    the run wrote in."""
    from manybench.node.scratch import MARKER, Scratch, ScratchError
    root = tmp_path / "r1"
    root.mkdir(mode=0o755)
    (root / MARKER).write_text("r1\n")
    os.chown(root / MARKER, 65534, 65534)
    os.chown(root, 65534, 65534)
    with pytest.raises(ScratchError, match="belongs to uid 65534"):
        Scratch("r1", "n1").run_dir(str(tmp_path))
