"""Who relays whom (engines/relays.py) and `run --fanout`: automatic above the documented node
count, forced for tests and users, refused with one clear message when it makes no sense."""
from __future__ import annotations

from click.testing import CliRunner

from manybench.cli import main
from manybench.engines.relays import AUTO_ABOVE, per_relay_for, plan_groups


def test_relays_are_automatic_only_above_the_documented_node_count():
    assert per_relay_for(AUTO_ABOVE, None) == 0
    assert per_relay_for(AUTO_ABOVE + 1, None) ** 2 >= AUTO_ABOVE + 1
    assert per_relay_for(1000, None) == 32               # ceil(sqrt(1000))
    assert per_relay_for(1000, 0) == 0 and per_relay_for(4, 2) == 2
    names = [f"n{i:04d}" for i in range(1000)]
    groups = plan_groups(names, per_relay_for(1000, None))
    assert len(groups) == 31 and max(len(m) for m in groups.values()) == 32
    reached = [r for r in groups] + [m for ms in groups.values() for m in ms]
    assert sorted(reached) == names                      # every node once: relay or member


def test_a_forced_fanout_groups_small_runs():
    assert plan_groups(["n1", "n2", "n3", "n4"], 2) == {"n1": ["n2", "n3"]}   # n4 on its own
    assert plan_groups(["n1", "n2", "n3"], 2) == {"n1": ["n2", "n3"]}
    assert plan_groups(["n1", "n2"], 0) == {}


def test_the_fanout_option_is_checked(tmp_path):
    plan = tmp_path / "p.toml"
    plan.write_text('[[task]]\nname = "t"\nkernel = "null"\n')
    for bad in ("banana", "0", "-3"):
        res = CliRunner().invoke(main, ["run", str(plan), "--fanout", bad])
        assert res.exit_code == 2 and "--fanout" in res.output, res.output
        assert "Traceback" not in res.output
    res = CliRunner().invoke(main, ["run", str(plan), "--fanout", "2"])
    assert res.exit_code == 2, res.output
    assert "--fanout needs a cluster (--scheduler, --hosts, --cluster or --simulate)" in res.output
    assert "--fanout" in CliRunner().invoke(main, ["run", "--help"]).output
