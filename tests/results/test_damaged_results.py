"""Every reader of results.db (report, export, diff, compare, history, run --resume) states
damage as exit 2 naming the file and what is wrong, never a traceback and never wrong figures;
a locked file is waited on for a stated time, then exit 2; `run -o DIR` refuses a results.db
that manybench did not create (issue 18, item 6)."""
from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import traceback

import pytest
from click.testing import CliRunner

from manybench import config
from manybench.cli import main

PLAN = 'name = "n"\nrepeat = 3\n[[task]]\nname = "n"\nkernel = "null"\n'
READERS = ["report", "export", "diff", "compare", "history", "resume", "run -o"]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """A results directory holding one run, marked interrupted (so --resume would go on)."""
    d = tmp_path_factory.mktemp("res")
    (d / "p.toml").write_text(PLAN)
    out = d / "res"
    r = CliRunner().invoke(main, ["run", str(d / "p.toml"), "-o", str(out), "-q"])
    assert r.exit_code == 0, r.output
    con = sqlite3.connect(out / "results.db")
    con.execute("UPDATE runs SET status='interrupted'")
    con.commit()
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    return str(out)


def invoke(*args: str):
    res = CliRunner().invoke(main, list(args))
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        pytest.fail("".join(traceback.format_exception(res.exception)))
    return res


def reader_args(cmd: str, damaged: str, good: str) -> list[str]:
    if cmd in ("report", "export", "history"):
        return [cmd, damaged]
    if cmd == "resume":
        return ["run", "--resume", damaged, "-q"]
    if cmd == "run -o":      # a new run added to a directory that holds one
        return ["run", os.path.join(good, os.pardir, "p.toml"), "-o", damaged, "-q"]
    return [cmd, damaged, good]


def _garbage_last_page(db: str) -> None:
    """A data page overwritten: SQLite may read on without an error, printing wrong figures."""
    size = os.path.getsize(db)
    with open(db, "r+b") as f:
        f.seek(size - 4096)
        f.write(bytes(range(256)) * 16)


def _overwrite(db: str, offset: int, data: bytes) -> None:
    with open(db, "r+b") as f:
        f.seek(offset)
        f.write(data)


def _sql(db: str, *statements: str) -> None:
    con = sqlite3.connect(db)
    for s in statements:
        con.execute(s)
    con.commit()
    con.close()


DAMAGE = {
    "page garbage": (_garbage_last_page, "damaged"),
    "dropped table": (lambda db: _sql(db, "DROP TABLE records"), "records"),
    "bad JSON in a record": (lambda db: _sql(db, "UPDATE records SET metrics='{bad'"),
                             "records.metrics"),
    "bad JSON in an aggregate": (lambda db: _sql(db, "UPDATE aggregates SET data='[{bad'"),
                                 "aggregates.data"),
    "bad JSON in a run": (lambda db: _sql(db, "UPDATE runs SET environment='[1,'"),
                          "runs.environment"),
    "truncated": (lambda db: os.truncate(db, os.path.getsize(db) // 2), "damaged"),
    "bad header": (lambda db: _overwrite(db, 0, b"not the SQLite format 3 header"), "damaged"),
}


# a reader that never reads the damaged column prints nothing wrong: diff compares the runs'
# environments, not their records; export writes records, not the run's environment
# run -o adds a run beside the stored ones and reads none of their rows; report, compare,
# history and a resume's end read the phases' aggregates (issue 30), export and diff do not
UNREAD = {("diff", "bad JSON in a record"), ("export", "bad JSON in a run"),
          ("run -o", "bad JSON in a record"), ("run -o", "bad JSON in a run"),
          ("report", "bad JSON in a record"), ("compare", "bad JSON in a record"),
          ("history", "bad JSON in a record"), ("resume", "bad JSON in a record"),
          ("export", "bad JSON in an aggregate"), ("diff", "bad JSON in an aggregate"),
          ("run -o", "bad JSON in an aggregate")}


@pytest.mark.parametrize("cmd, damage", [(c, d) for c in READERS for d in DAMAGE
                                          if (c, d) not in UNREAD])
def test_a_damaged_results_db_is_exit_2_naming_it_and_the_damage(results, tmp_path, damage,
                                                                  cmd):
    d = tmp_path / "copy"
    shutil.copytree(results, d)
    make, word = DAMAGE[damage]
    make(str(d / "results.db"))
    res = invoke(*reader_args(cmd, str(d), results))
    assert res.exit_code == 2, (res.exit_code, res.output)
    assert str(d) in res.stderr and word in res.stderr, res.stderr


def _foreign(path) -> None:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE contacts (name TEXT, phone TEXT)")
    con.execute("INSERT INTO contacts VALUES ('a', '1')")
    con.commit()
    con.close()


@pytest.mark.parametrize("cmd", READERS)
def test_a_foreign_sqlite_file_is_refused_by_every_reader(results, tmp_path, cmd):
    d = tmp_path / "foreign"
    d.mkdir()
    _foreign(d / "results.db")
    res = invoke(*reader_args(cmd, str(d), results))
    assert res.exit_code == 2, (res.exit_code, res.output)
    assert str(d) in res.stderr and "not a manybench results database" in res.stderr


def test_run_o_refuses_a_results_db_manybench_did_not_create(tmp_path):
    d = tmp_path / "out"
    d.mkdir()
    _foreign(d / "results.db")
    before = (d / "results.db").read_bytes()
    (tmp_path / "p.toml").write_text(PLAN)
    res = invoke("run", str(tmp_path / "p.toml"), "-o", str(d), "-q")
    assert res.exit_code == 2 and "not a manybench results database" in res.stderr, res.output
    assert (d / "results.db").read_bytes() == before     # no table of ours added to it


def _hold_lock(db: str, exclusive_mode: bool) -> subprocess.Popen:
    """Another process holding the file's write lock (and, exclusive_mode, every lock)."""
    code = ("import sqlite3, sys, time\n"
            f"con = sqlite3.connect({db!r}, isolation_level=None)\n"
            + ("con.execute('PRAGMA locking_mode=EXCLUSIVE')\n" if exclusive_mode else "")
            + "con.execute('BEGIN EXCLUSIVE')\n"
            "con.execute(\"UPDATE runs SET name=name\")\n"
            "print('held', flush=True)\n"
            "time.sleep(60)\n")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "held"
    return p


# every reader against a file held in SQLite's exclusive locking mode (no reader gets in);
# the two writers also against a plain write lock (a reader of a WAL file still reads then)
LOCKS = [(cmd, True) for cmd in READERS] + [("resume", False), ("run -o", False)]


@pytest.mark.parametrize("cmd, exclusive_mode", LOCKS)
def test_a_locked_results_db_is_waited_on_then_exit_2(results, tmp_path, monkeypatch, cmd,
                                                       exclusive_mode):
    d = tmp_path / "copy"
    shutil.copytree(results, d)
    holder = _hold_lock(str(d / "results.db"), exclusive_mode)
    try:
        with config.set({"results.lock_wait": 0.5}):
            res = invoke(*reader_args(cmd, str(d), results))
    finally:
        holder.kill()
        holder.wait()
    assert res.exit_code == 2, res.output
    assert str(d) in res.stderr and "locked by another process" in res.stderr, res.stderr
    assert "0.5 s" in res.stderr


def test_run_o_refuses_a_results_db_that_is_not_a_file(tmp_path):
    """A directory (or anything but a file) named results.db: exit 2 before anything starts,
    not a run whose every phase then fails to be stored."""
    d = tmp_path / "out"
    (d / "results.db").mkdir(parents=True)
    (tmp_path / "p.toml").write_text(PLAN)
    res = invoke("run", str(tmp_path / "p.toml"), "-o", str(d), "-q")
    assert res.exit_code == 2, (res.exit_code, res.output)
    assert str(d / "results.db") in res.stderr and "not a file" in res.stderr, res.stderr
