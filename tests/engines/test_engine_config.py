"""Engines take their configuration in their constructor, checked there, and grow no
attribute afterwards; the command line makes its engine through the registry
(engines/__init__.ENGINES), not an if/else of its own (issue 33, item 6)."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from manybench.cli import main
from manybench.engines import ENGINES, EngineConfig, LocalEngine, Where, chosen, make_engine
from manybench.engines.dask import DaskEngine
from manybench.engines.simulated import SimulatedEngine
from manybench.node.simulated import SimSpec
from manybench.plan import parse_plan
from manybench.results.contract import WarningKind

from fake_engine import FakeEngine


def _engines() -> list:
    config = EngineConfig(telemetry_s=0.5, noise_s=0.1, per_relay=2)
    return [LocalEngine(config), SimulatedEngine(SimSpec(2, 2), config),
            DaskEngine(object(), config=config)]


def test_an_engine_grows_no_attribute_after_its_constructor():
    """int32: the first warning an engine told grew it a `told` attribute on the fly."""
    for engine in _engines():
        before = set(vars(engine))
        engine.add_warning(WarningKind.CLEANUP, "n1", "a node did not confirm the run's end")
        assert engine.take_warnings() == [(WarningKind.CLEANUP, "n1", "a node did not "
                                                                      "confirm the run's end")]
        assert engine.take_warnings() == [] and engine.take_notices() == []
        assert engine.waits() == ({}, {})
        assert set(vars(engine)) == before, type(engine).__name__
        assert engine.config.per_relay == 2


@pytest.mark.parametrize("field, value", [("telemetry_s", -1.0), ("noise_s", "0.4"),
                                          ("per_relay", -2), ("per_relay", 1.5),
                                          ("telemetry_s", True)])
def test_an_engines_configuration_is_checked_where_it_is_given(field, value):
    with pytest.raises(ValueError, match=f"EngineConfig.{field}"):
        EngineConfig(**{field: value})


def test_a_plans_run_configures_its_engine_from_the_plan_and_fanout():
    plan = parse_plan('telemetry = "0.25s"\nnoise = "0.05s"\n'
                      '[[task]]\nname = "t"\nkernel = "null"\n', "p.toml", ())
    assert EngineConfig.of(plan, 0) == EngineConfig(0.25, 0.05, 0)


def test_the_registry_names_the_engine_the_options_ask_for():
    assert set(ENGINES) == {"local", "dask", "simulated"}
    assert chosen(Where()) == "local"
    assert chosen(Where(simulate="4x2")) == "simulated"
    assert {chosen(Where(**{o: "x"})) for o in ("scheduler", "hosts", "cluster")} == {"dask"}
    config = EngineConfig(noise_s=0.2)
    made = make_engine(None, Where(simulate="4x2"), config)
    assert isinstance(made, SimulatedEngine) and made.config is config
    assert made.spec.nodes == 4


MADE: list = []


def make(plan, where: Where, config: EngineConfig):
    """A registry row's maker, standing in for this machine's engine."""
    MADE.append((where, config))
    return FakeEngine(config=config)


def test_the_command_line_makes_its_engine_through_the_registry(tmp_path, monkeypatch):
    """int32 chose with an if/else of its own and set the engine's attributes afterwards."""
    monkeypatch.setitem(ENGINES, "local", (__name__, ()))
    MADE.clear()
    (tmp_path / "p.toml").write_text('telemetry = "0.5s"\nnoise = "0.05s"\n'
                                     '[[task]]\nname = "t"\nkernel = "null"\n')
    res = CliRunner().invoke(main, ["run", str(tmp_path / "p.toml"), "-o",
                                    str(tmp_path / "out"), "-q", "--slots", "2"])
    assert res.exit_code == 0, res.output
    assert MADE == [(Where(slots=2), EngineConfig(0.5, 0.05, None))]

