"""[[concurrent]]: several tasks in the same phases, on disjoint slots, from one T0, with each
task's figures and the whole phase's."""
from __future__ import annotations

import pytest

from conftest import export_json, run_cli
from manybench.analysis import summarize
from manybench.plan import PlanError, parse_plan
from manybench.plan.expand import expand
from manybench.results.store import Store

MIXED = """
    repeat = 2
    [placement]
    workers = 1
    [[task]]
    name = "w"
    kernel = "io.write"
    dir = "{tmp}"
    size = "4MiB"
    block = "64KiB"
    [[task]]
    name = "m"
    kernel = "meta.create"
    dir = "{tmp}"
    total = 200
    [[task]]
    name = "alone"
    kernel = "null"
    [[concurrent]]
    name = "mixed"
    tasks = ["w", "m"]
    """


def test_a_group_runs_its_tasks_in_one_phase_on_their_own_ranks(tmp_path):
    plan = parse_plan(MIXED.replace("{tmp}", str(tmp_path)))
    phases = expand(plan)
    assert [p.task.name for p in phases] == ["mixed", "mixed", "alone", "alone"]
    g = phases[0]
    assert g.workers == 2 and [m.task.name for m in g.members] == ["w", "m"]
    assert [(g.member_of(r)[0].task.name, g.member_of(r)[1]) for r in (0, 1)] == \
        [("w", 0), ("m", 0)]
    assert all(m.index == g.index for m in g.members)   # records carry the group's phase


@pytest.mark.e2e
def test_a_group_phase_starts_every_task_at_one_t0_and_reports_each_and_the_whole(
        plan_file, tmp_path):
    plan = plan_file(MIXED)
    out = str(tmp_path / "res")
    res = run_cli("run", plan, "-o", out, "-q")
    assert res.returncode == 0, res.stderr
    rows = [r for r in export_json(out) if r["phase"] in (0, 1)]
    for phase in (0, 1):
        recs = [r for r in rows if r["phase"] == phase]
        assert sorted(r["task"] for r in recs) == ["m", "w"]
        assert len({r["t0_ns"] for r in recs}) == 1           # one T0 for both tasks
        assert len({r["slot"] for r in recs}) == 2            # disjoint slots
    with Store(out, readonly=True) as st:
        run = st.runs()[-1].run_id
        points = {s.task: s for s in summarize(st.records(run), st.phases(run))}
    whole, w, m = points["mixed"], points["w"], points["m"]
    assert w.bytes == 4 * 2**20 and m.ops == 200 and w.workers == 1
    assert whole.bytes == w.bytes and whole.ops == w.ops + m.ops   # the whole: every slot
    assert whole.records == w.records + m.records == 4
    report = run_cli("report", out).stdout
    assert "mixed (group)" in report and "w (io.write)" in report and "[[concurrent]]" in report


@pytest.mark.parametrize("groups, expected", [
    ('name = "g"\ntasks = ["w", "nope"]', "concurrent.tasks: unknown task 'nope'"),
    ('name = "w"\ntasks = ["w", "m"]', "concurrent.name: 'w' is already a task or group name"),
    ('name = "g"\ntasks = ["w"]', "concurrent.tasks: expected two or more task names"),
])
def test_groups_that_cannot_run_are_refused(groups, expected):
    text = MIXED.replace("{tmp}", "/tmp").split("[[concurrent]]")[0]
    with pytest.raises(PlanError) as e:
        parse_plan(text + "[[concurrent]]\n" + groups, check_dirs=False)
    assert expected in str(e.value), str(e.value)


def test_uneven_sweeps_in_a_group_and_a_task_in_two_groups_are_refused():
    text = MIXED.replace("{tmp}", "/tmp").replace('total = 200', 'total = [100, 200]') \
        .replace('block = "64KiB"', 'block = ["64KiB", "128KiB", "1MiB"]')
    with pytest.raises(PlanError) as e:
        parse_plan(text, check_dirs=False)
    assert "pair their points by position" in str(e.value)
    twice = MIXED.replace("{tmp}", "/tmp") + '[[concurrent]]\nname = "h"\ntasks = ["w", "alone"]\n'
    with pytest.raises(PlanError) as e:
        parse_plan(twice, check_dirs=False)
    assert "task 'w' is already in group 'mixed'" in str(e.value)


def test_a_variant_must_cover_all_of_a_group_or_none():
    text = MIXED.replace("{tmp}", "/tmp") + '[[variant]]\nname = "v"\ntasks = ["w"]\n'
    with pytest.raises(PlanError) as e:
        parse_plan(text, check_dirs=False)
    assert "variant.v.tasks: applies to some tasks of group 'mixed' but not all" in str(e.value)
