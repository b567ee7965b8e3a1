"""What a newcomer met (issue 29, item 13): each message names what is wrong and the way out,
a refused connection fails at once, and what the README lists works after its install (or
says what it needs)."""
from __future__ import annotations

import re
import socket
import sys
import textwrap

import pytest
from click.testing import CliRunner

from conftest import free_port
from suite_paths import ROOT
from manybench.cli import main
from manybench.plan import PlanError, load_plan

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


# -- a template's typo --------------------------------------------------------------------

def _problems(tmp_path, text: str) -> str:
    plan = tmp_path / "p.toml"
    plan.write_text(textwrap.dedent(text))
    with pytest.raises(PlanError) as e:
        load_plan(plan)
    return str(e.value)


def test_a_template_typo_says_did_you_mean(tmp_path):
    """Before: the names were listed, with no "did you mean", as a field's typo has."""
    out = _problems(tmp_path, """
        [[task]]
        name = "dd"
        command = ["dd", "if=/dev/zero", "of={scrach}/dd.out", "bs={blok}", "count=1"]
        block = "1M"
        """)
    assert "unknown parameter 'scrach'" in out and "did you mean 'scratch'?" in out, out
    # the task's own parameters are candidates too
    assert "unknown parameter 'blok'" in out and "did you mean 'block'?" in out, out


def test_a_variants_template_typo_says_did_you_mean(tmp_path):
    out = _problems(tmp_path, """
        [[task]]
        name = "dd"
        command = ["true"]
        [[variant]]
        name = "c"
        vars = { image = "/img" }
        wrap = ["ch-run", "{imgae}", "--"]
        """)
    assert "unknown value 'imgae'" in out and "did you mean 'image'?" in out, out


def test_a_name_near_nothing_gets_no_guess(tmp_path):
    out = _problems(tmp_path, """
        [[task]]
        name = "dd"
        command = ["echo", "{zzzzqqq}"]
        """)
    assert "unknown parameter 'zzzzqqq'" in out and "did you mean" not in out, out


# -- a scheduler nothing listens at ----------------------------------------------------------

def test_a_refused_scheduler_fails_at_once_naming_the_refusal(tmp_path, monkeypatch):
    """Before: Dask retried the refused connect for its connect timeout (30 s), then "Timed
    out". Now one TCP connect tells, and Dask's client is never asked to wait."""
    import distributed

    def no_client(*a, **kw):
        raise AssertionError("Dask's client was asked to connect to a refused address")
    monkeypatch.setattr(distributed, "Client", no_client)
    plan = tmp_path / "p.toml"
    plan.write_text(NULL_PLAN)
    port = free_port()            # bound and closed: nothing listens there
    for args in (["-o", str(tmp_path / "out")], ["--dry-run"]):
        res = _invoke("run", str(plan), "--scheduler", f"tls://127.0.0.1:{port}", *args)
        assert res.exit_code == 2, res.output
        assert "connection refused" in res.output and f"port {port}" in res.output, res.output
        assert "manybench scheduler" in res.output      # the way out


@pytest.mark.e2e
def test_a_scheduler_that_accepts_but_does_not_answer_keeps_dasks_timeout(tmp_path):
    """A listening socket that never answers (a busy scheduler's backlog): the probe's connect
    succeeds and Dask's client waits its own connect timeout, as before."""
    import dask
    plan = tmp_path / "p.toml"
    plan.write_text(NULL_PLAN)
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)            # the kernel completes connects; nothing ever answers
        port = silent.getsockname()[1]
        import distributed  # noqa: F401  (its defaults before set(): see test_input_safety)
        with dask.config.set({"distributed.comm.timeouts.connect": "2s"}):
            res = _invoke("run", str(plan), "--scheduler", f"tls://127.0.0.1:{port}",
                          "-o", str(tmp_path / "out"))
    assert res.exit_code == 2 and "Timed out" in res.output, res.output
    assert "refused" not in res.output


# -- parquet after the README's install ----------------------------------------------------

def _extra_with(package: str) -> str:
    """The optional extra of pyproject.toml that installs `package` (not the test one)."""
    import tomllib
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not any(d.startswith(package) for d in meta["dependencies"])
    found = [name for name, reqs in meta["optional-dependencies"].items()
             if name != "test" and any(r.startswith(package) for r in reqs)]
    assert len(found) == 1, meta["optional-dependencies"]
    return found[0]


@pytest.mark.skipif(sys.version_info < (3, 11), reason="tomllib")
def test_the_readme_says_what_parquet_needs_beyond_its_install():
    """The README's install (`pip install .`) leaves pyarrow out: its export line, `export
    --help` and the message when pyarrow is missing name the extra that brings it."""
    extra = _extra_with("pyarrow")
    readme = (ROOT / "README.md").read_text()
    assert "python3 -m pip install ." in readme
    line = re.search(r"^manybench export .*parquet.*\n(.*)$", readme, re.M)
    assert line and f"'.[{extra}]'" in line.group(0), line and line.group(0)
    help_text = _invoke("export", "--help").output
    assert f"'.[{extra}]'" in " ".join(help_text.split()), help_text


@pytest.mark.skipif(sys.version_info < (3, 11), reason="tomllib")
def test_parquet_without_pyarrow_names_the_extra(tmp_path, monkeypatch):
    from manybench.results.store import Store
    from builders import T0, phase, plan, recs
    st = Store(tmp_path)
    st.begin_run("r1", plan(), ["manybench"], {})
    st.write_phase("r1", phase(0), T0, recs("r1", 0))
    st.close()
    monkeypatch.setitem(sys.modules, "pyarrow", None)       # import pyarrow fails
    res = _invoke("export", str(tmp_path), "--format", "parquet", "-o", str(tmp_path / "x.pq"))
    assert res.exit_code == 2 and "needs pyarrow" in res.output, res.output
    assert f"'.[{_extra_with('pyarrow')}]'" in res.output, res.output
    assert "manybench[test]" not in res.output
