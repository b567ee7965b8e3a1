"""What a newcomer met (issue 29, item 13): each message names what is wrong and the way out,
a refused connection fails at once, and what the README lists works after its install (or
says what it needs)."""
from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from manybench.cli import main

ROOT = Path(__file__).resolve().parent.parent
NULL_PLAN = 'name = "n"\n[[task]]\nname = "sync"\nkernel = "null"\n'


def _invoke(*args: str):
    res = CliRunner().invoke(main, list(args))
    assert res.exception is None or isinstance(res.exception, SystemExit), \
        "".join(__import__("traceback").format_exception(res.exception))
    return res


# -- run -o FILE --------------------------------------------------------------------------

def test_run_into_a_file_says_it_is_a_file_and_what_o_takes(tmp_path):
    """Before: "-o F: results directory cannot be written: File exists"."""
    plan = tmp_path / "p.toml"
    plan.write_text(NULL_PLAN)
    afile = tmp_path / "out"
    afile.write_text("mine\n")
    res = _invoke("run", str(plan), "-o", str(afile))
    assert res.exit_code == 2, res.output
    assert f"-o {afile}: this is a file, not a directory" in res.output, res.output
    assert "the directory that holds results.db" in res.output and "File exists" not in res.output
    assert afile.read_text() == "mine\n"


def test_a_results_db_given_for_o_points_to_its_directory(tmp_path):
    plan = tmp_path / "p.toml"
    plan.write_text(NULL_PLAN)
    db = tmp_path / "results.db"
    db.write_bytes(b"")
    res = _invoke("run", str(plan), "-o", str(db))
    assert res.exit_code == 2 and f"give the directory that holds it, {tmp_path}" in res.output, \
        res.output


def test_a_file_on_the_way_to_o_is_named(tmp_path):
    plan = tmp_path / "p.toml"
    plan.write_text(NULL_PLAN)
    (tmp_path / "f").write_text("")
    res = _invoke("run", str(plan), "-o", str(tmp_path / "f" / "sub" / "out"))
    assert res.exit_code == 2, res.output
    assert f"{tmp_path / 'f'} is a file, not a directory" in res.output, res.output
