"""A user's mistake or a broken results directory is one line naming the file or option and
exit 2, never a traceback (issue 11, item 7); a results disk filling mid-run keeps every
phase committed before and says the disk is full."""
from __future__ import annotations

import errno
import json
import os
import shutil
import sqlite3
import subprocess

import pytest

from conftest import run_cli
from manybench.results.contract import WarningKind

pytestmark = pytest.mark.e2e

NULL_PLAN = 'name = "n"\nrepeat = 2\n[[task]]\nname = "n"\nkernel = "null"\n'


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """A results directory holding one finished run."""
    d = tmp_path_factory.mktemp("res")
    plan = d / "p.toml"
    plan.write_text(NULL_PLAN)
    out = d / "res"
    r = run_cli("run", str(plan), "-o", str(out), "-q")
    assert r.returncode == 0, r.stderr
    return str(out)


_WARNED = tuple({f"{k.label}: " for k in WarningKind})


def fails_cleanly(res: subprocess.CompletedProcess, *words: str, code: int = 2) -> None:
    assert res.returncode == code, (res.returncode, res.stdout, res.stderr)
    assert "Traceback" not in res.stderr, res.stderr
    # a run's warnings may come first (a slot told its cpu was busy on a loaded machine)
    said = [line for line in res.stderr.splitlines() if not line.startswith(_WARNED)]
    assert said and said[0].startswith("manybench: "), res.stderr
    for w in words:
        assert w in res.stderr, res.stderr


@pytest.mark.parametrize("cmd", ["report", "export"])
def test_an_unknown_run_is_named(results, cmd):
    fails_cleanly(run_cli(cmd, results, "--run", "nosuch"), "nosuch", "runs there")


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty", "not sqlite"])
@pytest.mark.parametrize("cmd", ["report", "export", "diff", "compare"])
def test_a_damaged_results_db_is_named(results, tmp_path, damage, cmd):
    d = tmp_path / "copy"
    shutil.copytree(results, d)
    db = d / "results.db"
    for extra in ("results.db-wal", "results.db-shm"):
        (d / extra).unlink(missing_ok=True)
    size = db.stat().st_size
    if damage == "garbage":      # pages after the header overwritten
        with open(db, "r+b") as f:
            f.seek(100)
            f.write(os.urandom(min(size - 100, 8192)))
    elif damage == "truncated":
        os.truncate(db, size // 3)
    elif damage == "empty":
        os.truncate(db, 0)
    else:
        db.write_text("this is not a database, just text\n" * 200)
    args = [str(d)] if cmd in ("report", "export") else [str(d), results]
    fails_cleanly(run_cli(cmd, *args), str(d))     # the damaged directory is named


@pytest.mark.parametrize("out", ["/nonexistent/x.csv", "/proc/x.csv", "/dev/full"])
def test_export_to_an_unwritable_file_is_named(results, out):
    fails_cleanly(run_cli("export", results, "-o", out), f"-o {out}", "cannot write")


def test_export_to_a_directory_is_a_usage_error(results, tmp_path):
    res = run_cli("export", results, "-o", str(tmp_path))
    assert res.returncode == 2 and "Traceback" not in res.stderr and "-o" in res.stderr


def test_report_html_to_an_unwritable_file_is_named(results):
    fails_cleanly(run_cli("report", results, "--html", "/nonexistent/r.html"), "--html")


def _mount_tmpfs(path, options: str) -> None:
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"needs to mount a tmpfs (root): {r.stderr.strip()}")


@pytest.fixture
def mount_point(tmp_path):
    m = tmp_path / "mnt"
    m.mkdir()
    yield m
    r = subprocess.run(["umount", str(m)], capture_output=True, text=True)
    assert r.returncode == 0 or "not mounted" in r.stderr, r.stderr   # nothing left mounted


def test_a_read_only_results_directory_is_refused_before_the_run(tmp_path, mount_point):
    _mount_tmpfs(mount_point, "ro,size=1m")
    plan = tmp_path / "p.toml"
    plan.write_text(NULL_PLAN)
    fails_cleanly(run_cli("run", str(plan), "-o", str(mount_point / "res"), "-q"),
                  str(mount_point / "res"), "Read-only")


def test_export_onto_a_read_only_mount_is_named(results, mount_point):
    """Unwritable even for root: a read-only file system."""
    _mount_tmpfs(mount_point, "ro,size=1m")
    out = str(mount_point / "x.csv")
    fails_cleanly(run_cli("export", results, "-o", out), f"-o {out}", "Read-only")


def test_the_results_disk_filling_mid_run_keeps_what_was_stored(tmp_path, mount_point):
    _mount_tmpfs(mount_point, "size=1200k")
    plan = tmp_path / "p.toml"
    # noise = 0: no `stalls` warning of this machine before the message this test reads
    plan.write_text('repeat = 5000\nnoise = 0\n[[task]]\nname = "n"\nkernel = "null"\n')
    out = mount_point / "res"
    res = run_cli("run", str(plan), "-o", str(out), "-q", timeout=300)
    fails_cleanly(res, "disk is full", "kept", code=1)
    # what was committed before the disk filled is all there and readable
    db = sqlite3.connect(f"file:{out / 'results.db'}?mode=ro", uri=True)
    try:
        phases = db.execute("SELECT COUNT(*) FROM phases").fetchone()[0]
        records = db.execute("SELECT COUNT(*) FROM records").fetchone()[0]
    finally:
        db.close()        # an open file would keep the tmpfs from unmounting
    assert 0 < phases < 5000 and records == phases
    rep = run_cli("report", str(out))
    assert rep.returncode == 0, rep.stderr


def _filled(tmp_path, mount_point):
    """A run stopped by its results disk filling (resumable: `aborted`): (plan, results dir)."""
    _mount_tmpfs(mount_point, "size=1200k")
    plan = tmp_path / "p.toml"
    plan.write_text('repeat = 5000\nnoise = 0\n[[task]]\nname = "n"\nkernel = "null"\n')
    out = mount_point / "res"
    fails_cleanly(run_cli("run", str(plan), "-o", str(out), "-q", timeout=300),
                  "disk is full", "kept", code=1)
    return plan, out


def _remount(mount_point, options: str) -> None:
    r = subprocess.run(["mount", "-o", f"remount,{options}", str(mount_point)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_the_results_disk_filling_during_a_resumed_run_is_told_as_in_a_run(tmp_path, mount_point):
    """`run --resume` stores through the same path as `run`: the disk filling again mid-way
    keeps every phase committed before (the first run's and the resumed ones) and says why."""
    _, out = _filled(tmp_path, mount_point)
    before = _counts(out)
    _remount(mount_point, "size=1600k")     # room for some more phases, then full again
    fails_cleanly(run_cli("run", "--resume", str(out), "-q", timeout=300),
                  "disk is full", "kept", code=1)
    phases, records = _counts(out)
    assert before[0] < phases < 5000 and records == phases
    assert run_cli("report", str(out)).returncode == 0


def test_a_resume_onto_a_read_only_results_disk_is_refused_before_it_starts(tmp_path,
                                                                           mount_point):
    plan, out = _filled(tmp_path, mount_point)
    before = _counts(out)
    _remount(mount_point, "ro")
    fresh = run_cli("run", str(plan), "-o", str(out), "-q")
    fails_cleanly(fresh, f"-o {out}: results directory cannot be written", "Read-only")
    res = run_cli("run", "--resume", str(out), "-q")
    assert res.stderr == fresh.stderr.replace(f"-o {out}", f"--resume {out}")
    fails_cleanly(res)
    assert _counts(out) == before


def _counts(out) -> tuple[int, int]:
    db = sqlite3.connect(f"file:{out / 'results.db'}?mode=ro", uri=True)
    try:
        return (db.execute("SELECT COUNT(*) FROM phases").fetchone()[0],
                db.execute("SELECT COUNT(*) FROM records").fetchone()[0])
    finally:
        db.close()        # an open file would keep the tmpfs from unmounting


def test_more_slots_than_this_machine_holds_are_refused_before_any_starts(tmp_path):
    """100,000 workers on this machine, a process each (~600 GB): exit 2 naming the field and
    the way to run it, and nothing started or written (they used to start slot after slot
    until memory ran out)."""
    plan = tmp_path / "p.toml"
    plan.write_text(NULL_PLAN.replace("repeat = 2", "repeat = 2\n[placement]\nworkers = 100000"))
    out = tmp_path / "res"
    r = run_cli("run", str(plan), "-o", str(out), "-q", timeout=60)
    assert r.returncode == 2, r.stderr
    assert "placement.workers: 100000 slots on this machine need" in r.stderr
    assert "--simulate" in r.stderr and "Traceback" not in r.stderr
    assert not out.exists()


# -- issue 28, item 12: a results.db nothing may write is read, not called damaged ------------

@pytest.fixture
def read_only(tmp_path, mount_point):
    """make(src) -> src's directory as a reader finds it where nothing may be written: a
    read-only bind mount of it (root, whom a directory's mode does not stop), else the
    directory made mode 555 (a user's own: the same to SQLite)."""
    made = []

    def make(src):
        if os.geteuid() != 0:
            os.chmod(src, 0o555)
            made.append(src)
            return src
        for args in (["--bind", str(src), str(mount_point)],
                     ["-o", "remount,bind,ro", str(mount_point)]):
            r = subprocess.run(["mount", *args], capture_output=True, text=True)
            if r.returncode != 0:
                pytest.skip(f"needs a read-only bind mount (root): {r.stderr.strip()}")
        return mount_point
    yield make
    for src in made:
        os.chmod(src, 0o755)


def _copy(results, tmp_path, wal: bool = False, shm: bool = True):
    """A copy of the results directory; wal: as a writer killed mid-run leaves it (its last
    change, the run's name, only in results.db-wal; results.db-shm beside it unless not shm)."""
    src = tmp_path / "copy"
    shutil.copytree(results, src)
    for extra in ("results.db-wal", "results.db-shm"):
        (src / extra).unlink(missing_ok=True)
    if wal:
        db = sqlite3.connect(src / "results.db")
        db.execute("PRAGMA wal_autocheckpoint=0")
        db.execute("UPDATE runs SET name='from-the-wal'")
        db.commit()
        keep = tmp_path / "crashed"       # the files as they are while the writer is alive
        shutil.copytree(src, keep)
        db.close()
        shutil.rmtree(src)
        keep.rename(src)
        if not shm:
            (src / "results.db-shm").unlink()
    return src


def test_a_results_db_on_a_read_only_directory_is_read(results, tmp_path, read_only):
    """It was "damaged or is not a SQLite database: unable to open database file": a WAL
    database opened read-only wants a -shm file it cannot make there."""
    d = str(read_only(_copy(results, tmp_path)))
    for args in (["report", d], ["export", d, "--format", "json"], ["history", d],
                 ["compare", d, results], ["diff", d, results]):
        res = run_cli(*args)
        assert res.returncode in (0, 1) and "damaged" not in res.stderr, (args, res.stderr)
        assert "Traceback" not in res.stderr, res.stderr
    assert len(json.loads(run_cli("export", d, "--format", "json").stdout)) == 2
    res = run_cli("report", d)
    assert "finished" in res.stdout, res.stdout
    import manybench.results
    with manybench.results.open(d) as r:      # closed: the mount must come off
        assert len(r.records()) == 2


def test_a_read_only_results_db_left_by_a_killed_writer_shows_its_last_commits(
        results, tmp_path, read_only):
    d = str(read_only(_copy(results, tmp_path, wal=True)))
    res = run_cli("report", d)
    assert res.returncode == 0 and "from-the-wal" in res.stdout, res.stdout + res.stderr


def test_a_read_only_wal_without_its_shm_file_is_told_not_called_damaged(results, tmp_path,
                                                                         read_only):
    d = str(read_only(_copy(results, tmp_path, wal=True, shm=False)))
    res = run_cli("report", d)
    fails_cleanly(res, "results.db-wal", "read-only")
    assert "damaged" not in res.stderr


# -- issue 28, item 12: a full disk leaves the file that was there ----------------------------

@pytest.fixture(scope="module")
def bigger(tmp_path_factory):
    """A results directory whose exports take several pages (20 records)."""
    d = tmp_path_factory.mktemp("bigger")
    plan = d / "p.toml"
    plan.write_text(NULL_PLAN.replace("repeat = 2", "repeat = 20"))
    r = run_cli("run", str(plan), "-o", str(d / "res"), "-q")
    assert r.returncode == 0, r.stderr
    return str(d / "res")


def _fill(mount_point) -> None:
    """Every block of the mounted tmpfs taken."""
    with open(mount_point / "filler", "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"x" * 4096)
        except OSError as e:
            assert e.errno == errno.ENOSPC, e


def _left(mount_point) -> list[str]:
    return sorted(p.name for p in mount_point.iterdir() if p.name != "filler")


@pytest.mark.parametrize("args, option", [
    (["report", "{res}", "--html", "{out}"], "--html"),
    (["export", "{res}", "--format", "json", "-o", "{out}"], "-o"),
    (["export", "{res}", "--format", "csv", "-o", "{out}"], "-o"),
])
def test_a_full_disk_leaves_the_old_file_intact(bigger, mount_point, args, option):
    """The target was opened for writing in place (truncated first): a full disk left a
    truncated file where a good one was."""
    _mount_tmpfs(mount_point, "size=256k")
    out = mount_point / "out"
    out.write_text("the good file of yesterday\n")
    _fill(mount_point)
    res = run_cli(*[a.format(res=bigger, out=out) for a in args])
    assert out.read_text() == "the good file of yesterday\n"
    fails_cleanly(res, f"{option} {out}", "No space left", "left as it was")
    assert _left(mount_point) == ["out"]         # no temporary file left behind
    (mount_point / "filler").unlink()
    assert run_cli(*[a.format(res=bigger, out=out) for a in args]).returncode == 0
    assert out.read_text() != "the good file of yesterday\n" and _left(mount_point) == ["out"]


def test_plots_on_a_full_disk_leave_the_old_files_intact(bigger, mount_point):
    _mount_tmpfs(mount_point, "size=2m")
    plots = mount_point / "plots"
    assert run_cli("report", bigger, "--plots", str(plots)).returncode == 0
    for p in plots.iterdir():     # yesterday's plots, smaller than today's
        p.write_bytes(b"yesterday's " + p.name.encode())
    before = {p.name: p.read_bytes() for p in plots.iterdir()}
    assert before
    _fill(mount_point)
    res = run_cli("report", bigger, "--plots", str(plots))
    fails_cleanly(res, f"--plots {plots}", "No space left")
    assert {p.name: p.read_bytes() for p in plots.iterdir()} == before


def test_an_output_file_keeps_its_mode_and_is_written_through_a_link(results, tmp_path):
    target = tmp_path / "real.json"
    target.write_text("old")
    target.chmod(0o640)
    link = tmp_path / "link.json"
    link.symlink_to(target)
    assert run_cli("export", results, "--format", "json", "-o", str(link)).returncode == 0
    assert link.is_symlink() and json.loads(target.read_text())
    assert oct(target.stat().st_mode & 0o777) == oct(0o640)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "real.json"]


def test_export_to_a_device_is_written_in_place(results):
    """/dev/stdout is a link to a pipe here: written as it is, never replaced."""
    res = run_cli("export", results, "--format", "json", "-o", "/dev/stdout")
    assert res.returncode == 0 and len(json.loads(res.stdout)) == 2, res.stderr
