"""The timings' one configuration (config/): defaults shipped in the package and described by a
schema, a user file and then the environment over them, read once; a bad one is exit 2 naming
the key; values the nodes must share are the coordinator's."""
from __future__ import annotations

import asyncio
import importlib.resources
import os
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from manybench import config
from manybench.config import ConfigError, defaults, read
from manybench.config.doc import schema_leaves


def _default_yaml() -> dict:
    with open(config.DEFAULTS) as f:
        return yaml.safe_load(f)


def _schema() -> dict:
    with open(config.SCHEMA) as f:
        return yaml.safe_load(f)


def test_the_defaults_are_valid_and_every_key_is_described():
    schema = _schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(_default_yaml())
    described = schema_leaves(schema)
    assert set(described) == set(defaults())        # no key without a meaning, nor the reverse
    assert all(spec.get("description") and spec.get("x-read-by") for spec in described.values())
    for short, long in config.SHORTER:
        assert short in described and long in described


def test_the_installed_package_carries_its_defaults_and_schema():
    """The tests import the installed package (`pip install .`): the YAML files are package
    data there, as in a wheel."""
    here = importlib.resources.files("manybench.config")
    assert {"manybench.yaml", "schema.yaml"} <= {p.name for p in here.iterdir()}
    assert os.path.samefile(config.DEFAULTS, str(here / "manybench.yaml"))


def test_a_user_file_then_the_environment_override_the_defaults(tmp_path):
    user = tmp_path / "manybench" / "manybench.yaml"
    user.parent.mkdir()
    user.write_text("lease:\n  length: 20s\n  renew: 4\nresults:\n  lock_wait: 1m\n")
    env = {"XDG_CONFIG_HOME": str(tmp_path), "MANYBENCH_LEASE__RENEW": "500ms",
           "MANYBENCH_SLOTS": "4"}           # another of our variables, not a timing: no `__`
    got = read(env)
    assert got["lease.length"] == 20.0                   # the file's
    assert got["lease.renew"] == 0.5                     # the environment's, over the file's
    assert got["results.lock_wait"] == 60.0
    assert got["heartbeat.stale"] == defaults()["heartbeat.stale"]   # untouched: the default
    other = tmp_path / "elsewhere.yaml"
    other.write_text("heartbeat:\n  every: 1s\n")
    assert read({"MANYBENCH_CONFIG": str(other)})["heartbeat.every"] == 1.0


@pytest.mark.parametrize("text, pause", [("false", False), ("off", False), ("0", False),
                                         ("True", True), ("on", True), ("1", True)])
def test_a_switch_is_true_or_false_from_the_environment_or_a_file(tmp_path, text, pause):
    """run.gc_pause is a switch, not a timing: a variable's text or a file's YAML value."""
    assert defaults()["run.gc_pause"] is True
    got = read({"XDG_CONFIG_HOME": str(tmp_path), "MANYBENCH_RUN__GC_PAUSE": text})
    assert got["run.gc_pause"] is pause
    user = tmp_path / "manybench.yaml"
    user.write_text(f"run:\n  gc_pause: {text}\n")
    assert read({"MANYBENCH_CONFIG": str(user)})["run.gc_pause"] is pause
    with config.set({"run.gc_pause": pause}):
        assert config.switch("run.gc_pause") is pause


def test_it_is_read_once_and_set_changes_it_for_a_block(monkeypatch):
    first = config.load()
    monkeypatch.setenv("MANYBENCH_LEASE__LENGTH", "99s")
    assert config.load() is first and config.timing("lease.length") != 99.0
    with config.set({"lease.length": 3.0}):
        assert config.timing("lease.length") == 3.0
    assert config.timing("lease.length") == first["lease.length"]
    with pytest.raises(ConfigError, match="lease.lenght"):
        with config.set({"lease.lenght": 3.0}):
            pass


BAD = [
    ({"MANYBENCH_LEASE__LENGHT": "3s"}, "$MANYBENCH_LEASE__LENGHT: unknown key lease.lenght"),
    ({"MANYBENCH_NOSUCH__THING": "3s"}, "$MANYBENCH_NOSUCH__THING: unknown key nosuch"),
    ({"MANYBENCH_NODE__CONNECT": "soon"}, "$MANYBENCH_NODE__CONNECT: node.connect: 'soon' is "
                                          "not a duration"),
    ({"MANYBENCH_NODE__CONNECT": "0"}, "node.connect: 0.0 is not a duration"),
    ({"MANYBENCH_NODE__CONNECT": "31d"}, "node.connect: '31d' is not a duration"),
    ({"MANYBENCH_NODE__CONNECT": "800h"}, "node.connect: duration '800h' is more than the limit"),
    ({"MANYBENCH_LEASE__RENEW": "12s"}, "lease.renew (12s, from $MANYBENCH_LEASE__RENEW) must "
                                        "be shorter than lease.length (10s)"),
    ({"MANYBENCH_NODE__KILL_GRACE": "1m"}, "node.kill_grace (1m, from "
                                           "$MANYBENCH_NODE__KILL_GRACE) must be shorter than "
                                           "engines.lost_grace"),
    ({"MANYBENCH_RUN__GC_PAUSE": "maybe"}, ("$MANYBENCH_RUN__GC_PAUSE: run.gc_pause: 'maybe' "
                                            "is not true or false")),
    ({"MANYBENCH_RUN__GC_PAUSE": "2"}, "run.gc_pause: 2.0 is not true or false"),
]


@pytest.mark.parametrize("env, said", BAD)
def test_a_bad_value_names_its_key_and_where_it_came_from(tmp_path, env, said):
    with pytest.raises(ConfigError) as e:
        read({"XDG_CONFIG_HOME": str(tmp_path), **env})     # no user file
    assert said in str(e.value)


@pytest.mark.parametrize("text, said", [
    ("lease:\n  length: [1\n", "not YAML (line 3)"),
    ("- 1\n- 2\n", "the file must be a mapping"),
    ("lease: 10s\n", "lease must be a mapping"),
    ("lease:\n  length: true\n", "lease.length: True is not a duration"),
])
def test_a_bad_user_file_is_named_with_what_is_wrong(tmp_path, text, said):
    path = tmp_path / "manybench.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as e:
        read({"MANYBENCH_CONFIG": str(path)})
    assert str(e.value).startswith(f"{path}: ") and said in str(e.value)


def test_a_named_user_file_that_is_not_there_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot be read"):
        read({"MANYBENCH_CONFIG": str(tmp_path / "nope.yaml")})


@pytest.mark.e2e
@pytest.mark.parametrize("env", [e for e, _ in BAD[:3]] + [{"MANYBENCH_LEASE__RENEW": "12s"}])
def test_the_command_line_says_a_bad_configuration_in_one_line_with_exit_2(tmp_path, env):
    done = subprocess.run([sys.executable, "-m", "manybench", "report", str(tmp_path)],
                          capture_output=True, text=True, env={**os.environ, **env},
                          cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr
    name = next(iter(env))
    assert lines[0].startswith("manybench: configuration: ") and name in lines[0]


@pytest.mark.e2e
@pytest.mark.parametrize("argv, env", [
    (["--version"], {"MANYBENCH_LEASE__LENGHT": "bad"}),   # never reads it
    (["report", "--help"], {}),                            # nothing overrides a default
])
def test_start_up_reads_no_yaml_unless_something_overrides_a_default(tmp_path, argv, env):
    """The command line's start-up stays cheap: YAML (~10 ms of cpu) is imported only when
    a file or a variable overrides a default, to check it before the command."""
    code = (f"import sys, runpy; sys.argv = ['manybench', *{argv!r}]\n"
            "try:\n    runpy.run_module('manybench', run_name='__main__')\n"
            "except SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m in ('yaml', 'jsonschema')))")
    clean = {k: v for k, v in os.environ.items()
             if not (k.startswith("MANYBENCH_") and "__" in k) and k != "MANYBENCH_CONFIG"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**clean, "XDG_CONFIG_HOME": str(tmp_path), **env})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_a_run_records_the_timings_it_changed():
    from manybench.inventory import environment
    assert config.overridden() == {} or os.path.isfile(config.user_file())
    with config.set({"lease.length": 3.0}):
        assert config.overridden()["lease.length"] == 3.0
        assert environment.collect()["timings"]["lease.length"] == 3.0


# -- values the nodes share with their coordinator -----------------------------------------

def test_a_nodes_lease_has_its_coordinators_length_from_the_start(monkeypatch):
    """The node's lease held from Start until the first renewal was 15 s where the
    coordinator's was 10 s; now the Start carries the coordinator's lease.length, and the
    node's own configuration does not decide it."""
    pytest.importorskip("distributed")
    from manybench.node import dask_plugin
    from manybench.node import protocol as P
    from manybench.security import auth
    monkeypatch.setattr(dask_plugin, "_popen_agent", lambda *a: None)
    with config.set({"lease.length": 99.0}):      # the node's own: not the one used
        plugin = dask_plugin.AgentPlugin(slots=1, node="n1")
        data = P.encode(P.Start("r1", "n1", 1, "/tmp", secret="s", lease_s=3.0))
        assert plugin._take(data, auth.tag(auth.derive("s", "call"), b"Start", data)) is None
    assert plugin.run == "r1" and plugin.lease.length == 3.0


def test_the_coordinators_lease_and_renewals_are_one_configuration():
    from manybench.engines.lease import LeaseRenewer
    from manybench.node.lease import Lease
    renewer = LeaseRenewer(lambda a, r: asyncio.sleep(0), list)
    assert renewer.lease_s == Lease().length == config.timing("lease.length")
    assert renewer.every_s == config.timing("lease.renew") < renewer.lease_s


def test_the_slots_inherit_the_configuration_read_before_their_fork(tmp_path, monkeypatch):
    """A slot never reads YAML itself (inside a phase it would cost ~10 ms of its cpu): the
    agent reads the configuration before it forks them."""
    from manybench.node.agent import Agent
    from manybench.node.protocol import Start
    monkeypatch.setattr(config, "_values", None)          # as in a fresh agent process
    read_at_fork = []
    fork = Agent._fork

    def _fork(self, i):
        read_at_fork.append(config._values is not None)
        return fork(self, i)
    monkeypatch.setattr(Agent, "_fork", _fork)
    agent = Agent.of(Start("r", "n", 2, str(tmp_path), kill_grace_s=7.0))
    try:
        agent.start()
    finally:
        agent.close()
    assert read_at_fork == [True, True]


def test_an_agent_kills_at_its_coordinators_grace_not_its_own():
    from manybench.node.agent import Agent
    from manybench.node.protocol import Start
    with config.set({"node.kill_grace": 1.0}):
        agent = Agent.of(Start("r", "n", 1, "/tmp", kill_grace_s=7.0))
        assert agent.kill_grace_s == 7.0


def test_a_runs_heartbeat_is_judged_stale_by_its_coordinators_bound(monkeypatch):
    """A reader whose own heartbeat.stale is shorter than the run's coordinator's does not
    call a live run killed."""
    from manybench.results import liveness
    from manybench.results.contract import RunInfo, RunNotes
    from manybench.run.heartbeat import stamp
    with config.set({"heartbeat.stale": 300.0}):
        notes = stamp(RunNotes())
    assert notes.heartbeat_stale_s == 300.0
    notes.host = "elsewhere"                      # no pid to look at: the heartbeat decides
    now = 10**12 * 1000
    notes.heartbeat_ns = now - 100 * 10**9        # 100 s old
    info = RunInfo.__new__(RunInfo)
    info.status, info.notes = "running", notes
    with config.set({"heartbeat.stale": 60.0}):   # the reader's own
        assert liveness.status_of(info, now) == "running"
        notes.heartbeat_stale_s = 0.0             # a run stored before the bound was
        assert liveness.status_of(info, now) == "killed"


# -- no timing left behind -------------------------------------------------------------------

# the tree this test is in, wherever in tests/ it sits
ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())
SRC = os.path.join(ROOT, "src", "manybench")
# module-level constants in seconds or ns that stay in the code: each defines a figure or a
# limit (docs/definitions.md, docs/plan.md), the same for every run, or is a fact of the
# machine; a user's file must not change what a figure means
DEFINITIONS = {
    "units.py": {"MAX_DURATION_S"},
    "node/telemetry.py": {"GUARD_NS", "BOUNDARY_NS"},
    "node/slot.py": {"SPIN_NS"},
    "node/spin_choice.py": {"WINDOW_NS", "FIRST_NS"},
    "node/lease.py": {"LATE_S"},
    "plan/observe.py": {"DEFAULT_SAMPLE_S", "DEFAULT_TELEMETRY_S", "DEFAULT_NOISE_S",
                        "MIN_INTERVAL_S"},
    "kernels/mpi_job.py": {"PAIR_NS"},
    "kernels/himeno.py": {"MIN_REHEARSAL_S"},
    "kernels/binding.py": {"MIN_CPU_NS"},
    "kernels/blas.py": {"TRIAL_NS"},
    "kernels/dgemm.py": {"CALIBRATE_NS"},
    "kernels/net.py": {"STREAM_DURATION_S"},
    "inventory/noise.py": {"DEFAULT_S", "INTERVAL_NS", "STALL_NS"},
    "results/liveness.py": {"START_SLACK_S"},
    "run/stalls.py": {"STALL_MIN_S"},
    "run/gaps.py": {"MARGIN_S", "EXACT_S"},
    "run/schedule.py": {"MIN_LEAD_NS", "MAX_LEAD_NS", "MARGIN_NS"},
    "run/coordinator.py": {"OVERLAP_LEAD_NS"},
    "run/placement.py": {"SETTLE_PER_SLOT_NS", "SETTLE_MAX_NS"},
    "analysis/late.py": {"LATE_NS"},
    "analysis/hints.py": {"STRAGGLE_S"},
}
_CONSTANT = re.compile(r"^\s*(_?[A-Z][A-Z0-9_]*(?:_S|_NS|_MS|TIMEOUT|_EVERY))\s*(?::[^=]*)?="
                       r"\s*[0-9]", re.M)


def test_every_timing_constant_is_configured_or_a_declared_definition():
    found: dict[str, set[str]] = {}
    for root, _, files in os.walk(SRC):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(root, name)
                names = set(_CONSTANT.findall(open(path).read()))
                if names:
                    found[os.path.relpath(path, SRC)] = names
    extra = {f: n - DEFINITIONS.get(f, set()) for f, n in found.items()}
    assert not {f: n for f, n in extra.items() if n}, (
        "a timing constant in the code: put it in config/manybench.yaml (and schema.yaml), "
        "or, if it defines a figure, in DEFINITIONS here")


def test_every_key_is_read_somewhere_and_every_key_read_exists():
    """A timing("...") with a typo would be a KeyError mid-run; a key no module reads is a
    setting that does nothing."""
    used = set()
    for root, _, files in os.walk(SRC):
        for name in files:
            if name.endswith(".py"):
                text = open(os.path.join(root, name)).read()
                used |= set(re.findall(r"""(?:timing|switch)\(["']([a-z_]+\.[a-z_]+)["']\)""",
                                       text))
    assert used == set(defaults())
