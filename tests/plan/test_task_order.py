"""A task's own `order` (issue 31, defect 7): "4 ranks packed 2 per node" and "2 ranks
spread" share a plan. The placement's order stays every other task's."""
from __future__ import annotations

import pytest

from conftest import export_json, run_cli
from manybench.plan import PlanError, load_plan
from manybench.plan.expand import expand

PLAN = """
name = "orders"
[placement]
workers = 2
order = "spread"
[[task]]
name = "packed"
kernel = "null"
order = "pack"
[[task]]
name = "spread"
kernel = "null"
[[task]]
name = "both"
kernel = "null"
order = ["spread", "pack"]
"""


def test_a_task_sets_its_own_order(plan_file):
    plan = load_plan(plan_file(PLAN))
    got = {(ph.task.name, ph.order) for ph in expand(plan)}
    assert got == {("packed", "pack"), ("spread", "spread"), ("both", "spread"),
                   ("both", "pack")}


@pytest.mark.e2e
def test_its_slots_are_placed_by_it(plan_file, tmp_path):
    """On 2 simulated nodes of 2 slots: packed fills one node, spread takes one slot of each."""
    out = str(tmp_path / "res")
    done = run_cli("run", plan_file(PLAN), "-o", out, "-q", "--simulate", "2x2")
    assert done.returncode == 0, done.stderr[-2000:]
    nodes: dict[tuple[str, str], set] = {}
    for r in export_json(out):
        nodes.setdefault((r["task"], r["params"].get("order", "")), set()).add(r["node"])
    assert len(nodes[("packed", "")]) == 1 and len(nodes[("spread", "")]) == 2
    assert len(nodes[("both", "pack")]) == 1 and len(nodes[("both", "spread")]) == 2


@pytest.mark.parametrize("text, says", [
    ('order = "packed"', "task.packed.order"),
    ('order = []', "task.packed.order"),
])
def test_a_bad_order_names_the_field(plan_file, text, says):
    with pytest.raises(PlanError) as e:
        load_plan(plan_file(PLAN.replace('order = "pack"', text)))
    assert says in str(e.value)


def test_a_group_member_cannot_set_it(plan_file):
    with pytest.raises(PlanError) as e:
        load_plan(plan_file(PLAN + '[[concurrent]]\nname = "g"\ntasks = ["packed", "spread"]\n'))
    assert "sets its own order" in str(e.value)
