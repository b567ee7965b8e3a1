"""`run`'s options are one object, stored as JSON in the run's row, and a resume reuses them
(issue 33, item 6): it no longer parses the stored command line by hand, a second copy of
click's options. A run stored before results schema 10 has only its command line: `run`
itself parses it."""
from __future__ import annotations

import json
import sqlite3

from click.testing import CliRunner

from manybench.cli import main
from manybench.cli.run_options import RunOptions, stored
from manybench.results.contract import RunNotes
from manybench.results.schema import SCHEMA_VERSION
from manybench.results.store import Store
from manybench.run.resume import latest_run

from builders import plan

PLAN = '[[task]]\nname = "t"\nkernel = "null"\n'
# quick runs: the noise floor's minimum, no telemetry
QUICK = ("--set", "noise=0.01s", "--set", "telemetry=0")


def _interrupt_after_first_phase(out) -> None:
    """The run as a kill after its first phase leaves it: the rest to run again."""
    db = sqlite3.connect(out / "results.db")
    with db:
        db.execute("UPDATE runs SET status = 'interrupted'")
        db.execute("UPDATE phases SET status = 'interrupted' WHERE idx > 0")
    db.close()


def test_a_run_stores_its_options_and_a_resume_reuses_them_whoever_started_it(tmp_path):
    """A run started from Python (here click's runner: sys.argv is pytest's, not the run's)
    resumes with its own --set: int32 re-parsed sys.argv by hand, found no --set and
    refused the resume (the plan "changed": repeat)."""
    (tmp_path / "p.toml").write_text(PLAN)
    out = tmp_path / "out"
    first = CliRunner().invoke(main, ["run", str(tmp_path / "p.toml"), "-o", str(out), "-q",
                                      "--set", "repeat=2", "--slots", "1", *QUICK])
    assert first.exit_code == 0, first.output
    info = latest_run_any(out)
    assert info.options["overrides"] == ["repeat=2", *QUICK[1::2]]
    assert info.options["slots"] == 1 and info.options["quiet"] is True
    _interrupt_after_first_phase(out)
    again = CliRunner().invoke(main, ["run", "--resume", str(out), "-q"])
    assert again.exit_code == 0, again.output
    db = sqlite3.connect(out / "results.db")
    assert db.execute("SELECT idx, status FROM phases ORDER BY idx").fetchall() == \
        [(0, "ok"), (1, "ok")]
    assert db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 1    # the same run
    db.close()


def latest_run_any(out):
    with Store(out, readonly=True) as st:
        return st.runs()[-1]


def _old_run(directory, argv: list[str]) -> None:
    """A run stored by a manybench before results schema 10: its command line, no options."""
    st = Store(directory)
    st.begin_run("r", plan(), argv, {}, RunNotes())
    st.end_run("r", "interrupted")
    st.close()
    db = sqlite3.connect(directory / "results.db")
    db.execute("ALTER TABLE runs DROP COLUMN options")
    db.execute("PRAGMA user_version = 9")
    db.commit()
    db.close()


def test_a_run_stored_before_schema_10_resumes_from_its_command_line_parsed_by_run(tmp_path):
    """Where it ran, its --set and --slots, in either spelling, as `run` itself parses them;
    none of them for a run on this machine, or one not started by `manybench run`."""
    for i, (argv, want) in enumerate((
            (["manybench", "run", "p.toml", "-q"], RunOptions("p.toml", quiet=True)),
            (["/usr/bin/manybench", "run", "p.toml", "--simulate=6x4,loss=0.1", "--fanout",
              "3", "--slots=2"],
             RunOptions("p.toml", simulate="6x4,loss=0.1", fanout=3, slots=2)),
            (["manybench", "run", "p.toml", "--scheduler", "tcp://10.0.0.1:8786", "--set",
              "repeat=2", "--set=noise=0", "--insecure", "--fanout", "off"],
             RunOptions("p.toml", scheduler="tcp://10.0.0.1:8786", insecure=True, fanout=0,
                        overrides=("repeat=2", "noise=0"))),
            # the value of -o is no option, whatever it looks like (the hand copy read it)
            (["manybench", "run", "p.toml", "-o", "--slots=3"],
             RunOptions("p.toml", outdir="--slots=3")),
            (["pytest", "-q", "--set", "repeat=9"], RunOptions()),
            (["pytest", "-k", "run", "--set", "repeat=9"], RunOptions()))):
        d = tmp_path / str(i)
        _old_run(d, argv)
        info, _ = latest_run(str(d))
        assert info.options is None        # migrated: the column is there, empty
        assert stored(info) == want, argv
        db = sqlite3.connect(d / "results.db")
        assert db.execute("PRAGMA user_version").fetchone()[0] == 9    # read, not written
        db.close()
        Store(d).close()                   # opened for writing: migrated in place
        db = sqlite3.connect(d / "results.db")
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert db.execute("SELECT options FROM runs").fetchone()[0] is None
        db.close()


def test_options_round_trip_through_their_json():
    opts = RunOptions("p.toml", overrides=("a=1", "b=2"), slots=4, scheduler="tcp://h:1",
                      fanout=0, insecure=True)
    assert RunOptions.of(json.loads(json.dumps(opts.to_json()))) == opts
    # a field a later version adds is left out, not an error
    assert RunOptions.of({**opts.to_json(), "newer": 1}) == opts
