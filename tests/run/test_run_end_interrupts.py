"""A Ctrl-C after the last phase: as it is stored, in the run's end checks, or while its nodes
are closed.

Every phase is stored by then (the last one by the interrupt's own path). Cut before or in
the checks, the run is `interrupted` (its warnings are missing) and the outcome says that
every phase was kept, so the command can name --resume, which makes the checks. Cut while
the nodes are closed, the run was measured, stored and checked: it keeps its status, the
nodes are aborted, and the row is never left `running` (the interrupt used to escape the
coordinator there, and the command then said "interrupted before the first phase")."""
from __future__ import annotations

import signal
import sqlite3

from fake_engine import FakeEngine

from manybench.plan import parse_plan
from manybench.plan import expand as E
from manybench.run import coordinator as C
from manybench.run import interrupts

_OneNode = FakeEngine

PLAN = 'repeat = 3\nnoise = 0\n[placement]\nworkers = 2\n[[task]]\nname = "a"\nkernel = "null"\n'


class ClosedByCtrlC(_OneNode):
    aborted = False

    def close(self):
        raise KeyboardInterrupt

    def abort(self):
        self.aborted = True


def _run(tmp_path, engine) -> C.Outcome:
    plan = parse_plan(PLAN, "p.toml", ())
    saved = {s: signal.getsignal(s) for s in interrupts.SIGNALS}
    try:
        return C.Coordinator(plan, E.expand(plan), str(tmp_path), engine, [],
                             progress=False).run()
    finally:
        for s, handler in saved.items():    # an interrupted run ends ignoring them: not pytest
            signal.signal(s, handler)


def _stored(tmp_path) -> tuple[list, int]:
    db = sqlite3.connect(tmp_path / "results.db")
    try:
        return (db.execute("SELECT status FROM runs").fetchall(),
                db.execute("SELECT COUNT(*) FROM phases WHERE status = 'ok'").fetchone()[0])
    finally:
        db.close()


def test_ctrl_c_in_the_end_checks_keeps_every_phase_and_says_so(tmp_path, monkeypatch):
    def cut(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(C, "run_checks", cut)
    out = _run(tmp_path, _OneNode(str(tmp_path)))
    assert (out.status, out.exit_code, out.checks_cut) == ("interrupted", 130, True)
    assert _stored(tmp_path) == ([("interrupted",)], 3)


def test_ctrl_c_as_the_last_phase_commits_still_keeps_it(tmp_path, monkeypatch):
    """The interrupt inside the last phase's commit (rolled back): the interrupt's path
    commits it again, and every phase is kept."""
    from manybench.results.store import Store
    real, cut = Store.write_phase, []

    def write_phase(self, run_id, phase, *a, **k):
        if phase.index == 2 and not cut:
            cut.append(phase.index)
            raise KeyboardInterrupt
        return real(self, run_id, phase, *a, **k)
    monkeypatch.setattr(Store, "write_phase", write_phase)
    out = _run(tmp_path, _OneNode(str(tmp_path)))
    assert cut == [2] and (out.status, out.checks_cut) == ("interrupted", True)
    assert _stored(tmp_path) == ([("interrupted",)], 3)


def test_ctrl_c_mid_phase_is_not_taken_for_one_in_the_checks(tmp_path):
    out = _run(tmp_path, _OneNode(str(tmp_path), interrupt_at=1))
    assert (out.status, out.checks_cut) == ("interrupted", False)


def test_ctrl_c_while_the_nodes_close_keeps_the_runs_status(tmp_path):
    engine = ClosedByCtrlC(str(tmp_path))
    out = _run(tmp_path, engine)
    assert (out.status, out.exit_code, out.checks_cut) == ("finished", 0, False)
    assert engine.aborted
    assert _stored(tmp_path) == ([("finished",)], 3)
