"""The command line's user errors: each failure a user can cause or fix (a damaged results.db,
an unknown run, an output path that cannot be written, a read-only or full results disk)
told as one line naming the file or option, never a traceback. The commands call these."""
from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import tempfile
from typing import IO, Iterator

import click

from ..printable import echo

EXIT_USAGE = 2
EXIT_FAILED = 1


def fail(msg: str) -> "click.exceptions.Exit":
    """A user's mistake: one line on stderr, and the exit (2) to raise."""
    echo(f"manybench: {msg}", err=True)
    return click.exceptions.Exit(EXIT_USAGE)


def problems(e: Exception) -> "click.exceptions.Exit":
    """A plan's or a hostfile's problems (e.problems), one per line on stderr, and the exit
    (2) to raise."""
    for problem in e.problems:
        echo(problem, err=True)
    return click.exceptions.Exit(EXIT_USAGE)


def open_results(directory: str):
    """The directory's results, read-only; exit 2 with the reason when they cannot be read."""
    from ..results.store import SchemaError, Store
    if not os.path.isfile(os.path.join(directory, "results.db")):
        raise fail(f"no results.db in {directory}")
    try:
        return Store(directory, readonly=True)
    except SchemaError as e:
        raise fail(str(e))


class UserError(click.ClickException):
    """One line on stderr prefixed `manybench:`, and an exit code (2 unless told)."""

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.exit_code = code

    def show(self, file: IO | None = None) -> None:
        echo(f"manybench: {self.message}", err=True)


def _reason(e: BaseException) -> str:
    return getattr(e, "strerror", None) or str(e)


def db_reason(e: sqlite3.Error) -> str:
    """SQLite's complaint in a user's words."""
    from ..results.store import db_problem
    text = str(e)
    if is_disk_full(e):
        return "the disk is full"
    if "malformed" in text or "not a database" in text:
        return "the file is damaged or is not a manybench results database"
    return db_problem(e)        # a lock said with the time waited, else SQLite's words


def is_disk_full(e: BaseException) -> bool:
    if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    return (isinstance(e, sqlite3.Error) and (getattr(e, "sqlite_errorcode", 0) == 13
                                               or "disk is full" in str(e)))


@contextlib.contextmanager
def reading_results(directory: str, run_id: str | None = None) -> Iterator[None]:
    """report/export: a damaged, truncated or empty results.db, or an unknown --run, is
    exit 2 naming it."""
    path = os.path.join(directory, "results.db")
    from ..results.schema import SchemaError
    if os.path.isfile(path) and os.path.getsize(path) == 0:
        raise UserError(f"{path} is empty: no run was ever recorded there")
    try:
        yield
    except SchemaError as e:         # damaged, foreign or too new: the message names it
        raise UserError(str(e)) from None
    except sqlite3.Error as e:
        raise UserError(f"{path}: cannot be read: {db_reason(e)}") from None
    except KeyError as e:            # Store.run: no such run (its message names the runs)
        raise UserError(f"--run {run_id}: {e.args[0] if e.args else e}") from None


def _damaged(db: str) -> bool:
    """Whether SQLite finds this results.db unreadable (a quick check of every page)."""
    from ..results.store import SchemaError, read_uri
    try:
        con = sqlite3.connect(read_uri(db), uri=True)     # as the readers open it
        try:
            return con.execute("PRAGMA quick_check").fetchone()[0] != "ok"
        finally:
            con.close()
    except (sqlite3.Error, SchemaError):
        return True


@contextlib.contextmanager
def reading_runs(args: list[str]) -> Iterator[None]:
    """diff/compare (DIR or DIR:RUN arguments): a damaged results.db is exit 2 naming it."""
    from ..results.schema import SchemaError
    try:
        yield
    except SchemaError as e:
        raise UserError(str(e)) from None
    except sqlite3.Error as e:
        dbs = [os.path.join(a if os.path.isdir(a) else a.rpartition(":")[0] or a, "results.db")
               for a in args]
        bad = [d for d in dbs if os.path.isfile(d) and _damaged(d)] or dbs
        raise UserError(f"{', '.join(dict.fromkeys(bad))}: cannot be read: {db_reason(e)}") \
            from None


def check_run(store, run_id: str | None) -> None:
    """--run names a run of this directory (Store.run raises KeyError naming those there)."""
    if run_id is not None:
        store.run(run_id)


def output_file(path: str, option: str = "-o") -> None:
    """-o FILE can be written (outfile.check: a file there is left as it is until the new
    one is complete), else exit 2 naming it and why not."""
    from ..outfile import check
    try:
        check(path)
    except OSError as e:
        raise UserError(f"{option} {path}: cannot write: {_reason(e)}") from None


@contextlib.contextmanager
def writing(path: str, option: str = "-o") -> Iterator[None]:
    """Writing FILE fails midway (a full disk, /dev/full, an I/O error): exit 2 naming it."""
    try:
        yield
    except BrokenPipeError:
        if path != "stdout":
            raise UserError(f"{option} {path}: cannot write: the pipe was closed") from None
        # `export | head`: the reader has what it wanted; no word, as `report | head`
        # (click's own handling: stdout pacified, exit 1)
        raise
    except OSError as e:
        raise UserError(f"{option} {path}: cannot write: {_reason(e)}{_kept(path)}") from None


def _kept(path: str) -> str:
    """What a failed write left at path (outfile.replacing: the file that was there)."""
    from ..outfile import in_place
    if path == "stdout" or not os.path.lexists(path) or in_place(path):
        return ""
    return "; the file there is left as it was" if os.path.isfile(path) else \
        "; the files there are left as they were"


def writable_results_dir(outdir: str, option: str = "-o") -> None:
    """Before anything starts: the results directory can be made and written (a read-only
    mount, no permission, a file in the way), else exit 2 naming it (and the option that
    gave it: -o, --resume)."""
    in_way = _not_a_directory(outdir)
    if in_way:      # makedirs would say "File exists" or "Not a directory", naming nothing
        what = "a file" if os.path.isfile(in_way) else "something other than a directory"
        if in_way != outdir:
            fix = "give a path whose every part is a directory or does not exist yet"
        elif os.path.basename(outdir) == "results.db":
            fix = f"give the directory that holds it, {os.path.dirname(outdir) or '.'}"
        else:
            fix = f"{option} takes the directory that holds results.db (made if it does not exist)"
        raise UserError(f"{option} {outdir}: {'this' if in_way == outdir else in_way} is {what}, "
                        f"not a directory: {fix}")
    try:
        os.makedirs(outdir, exist_ok=True)
        with tempfile.TemporaryFile(dir=outdir):
            pass
    except OSError as e:
        raise UserError(f"{option} {outdir}: results directory cannot be written: "
                        f"{_reason(e)}") from None


def _not_a_directory(path: str) -> str | None:
    """The first part of path that exists and is not a directory (a file where one was
    meant), else None."""
    parts = os.path.abspath(path).split(os.sep)
    for i in range(2, len(parts) + 1):
        at = os.sep.join(parts[:i])
        if not os.path.exists(at):
            return None
        if not os.path.isdir(at):
            return path if i == len(parts) else at
    return None


def own_results(outdir: str) -> None:
    """Before anything starts: a results.db already in the directory is manybench's, readable
    and not locked by another process (its runs are kept and this one added); another
    program's SQLite file is never written to. Else exit 2 naming it."""
    from ..results.schema import SchemaError
    from ..results.store import Store
    db = os.path.join(outdir, "results.db")
    if not os.path.lexists(db):
        return
    if not os.path.isfile(db) or os.path.islink(db):
        raise UserError(f"{db} is not a file manybench made (a directory, a link or a device "
                        "is in its place): give another directory")
    try:
        with Store(outdir) as store:
            store.check_writable()
    except SchemaError as e:
        raise UserError(str(e)) from None
    except sqlite3.Error as e:
        raise UserError(f"{os.path.join(outdir, 'results.db')}: cannot be written: "
                        f"{db_reason(e)}") from None


@contextlib.contextmanager
def storing_results(outdir: str) -> Iterator[None]:
    """A run whose results disk fills (or fails) mid-run: what was committed stays, the
    message says why the run stopped, exit 1. A results.db found damaged as the run reads it
    back (a resume's end checks): exit 2, as every reader of it says so."""
    from ..results.schema import SchemaError
    try:
        yield
    except SchemaError as e:     # damage found reading back what is stored (the end's checks)
        raise UserError(f"{e}; the run stopped, every phase committed before is kept",
                        EXIT_USAGE) from None
    except (sqlite3.Error, OSError) as e:
        if isinstance(e, OSError) and not is_disk_full(e):
            raise
        what = "the disk is full" if is_disk_full(e) else db_reason(e)
        raise UserError(f"{outdir}: results could not be stored ({what}); the run stopped, "
                        f"every phase committed before is kept in "
                        f"{os.path.join(outdir, 'results.db')}", EXIT_FAILED) from None


def preflight(plan, phases, distributed: bool) -> None:
    """plan/preflight.py's checks: warnings on stderr, errors one per line and exit 2."""
    from ..plan.preflight import preflight as check
    errors, warnings = check(plan, phases, distributed)
    for w in warnings:
        echo(f"warning: {w}", err=True)
    for e in errors:
        echo(e, err=True)
    if errors:
        raise click.exceptions.Exit(EXIT_USAGE)
