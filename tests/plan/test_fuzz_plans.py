"""Plan fuzzer (issue 11): valid plans mutated at random (fields dropped, duplicated and
retyped; huge, negative and NaN numbers; deep nesting; odd strings; broken TOML text), each
through `manybench run --dry-run`. Every outcome must be exit 0, or exit 2 with one problem
per line naming the plan file (and the field where there is one): never a traceback, never
a hang.

Seeded, so a failure reproduces: MANYBENCH_FUZZ_SEED=N picks another seed (a failing case's
message gives its seed, case number and plan text), MANYBENCH_FUZZ_CASES=N runs more.
"""
from __future__ import annotations

import copy
import json
import math
import os
import random
import signal
import textwrap
import traceback
from importlib import resources
from typing import Any

import pytest
from click.testing import CliRunner

from manybench.cli import main

from conftest import run_cli

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

SEED = int(os.environ.get("MANYBENCH_FUZZ_SEED", "11"))
CASES = int(os.environ.get("MANYBENCH_FUZZ_CASES", "600"))
CASE_TIMEOUT_S = 20   # a hang fails the case instead of the whole run

# Valid plans that reach most of the format: every kind of task, sweeps, variants with set,
# env, vars and setup, a concurrent group, a reference, placement axes.
SEEDS = [textwrap.dedent(s) for s in (
    """
    name = "io"
    repeat = 2
    [placement]
    workers = [1, 2]
    order = "spread"
    pin = "core"
    [[task]]
    name = "write"
    kernel = "io.write"
    size = "1MiB"
    block = ["64KiB", "1MiB"]
    [[task]]
    name = "read"
    kernel = "io.read"
    size = "1MiB"
    file = "io.dat"
    [[task]]
    name = "rand"
    kernel = "io.randread"
    size = "1MiB"
    iodepth = [1, 4]
    ops = 100
    """,
    """
    name = "cmds"
    [[task]]
    name = "sleep"
    command = ["sleep", "{nap}"]
    nap = ["0", "0.01"]
    timeout = "5s"
    env = { A = "1", B = 2 }
    metrics.rate = '(?P<value>[\\d.]+) MB/s'
    [[task]]
    name = "sh"
    command = ["echo {word}"]
    shell = true
    word = "hi"
    [[variant]]
    name = "a"
    env = { MODE = "a" }
    [[variant]]
    name = "b"
    set = { "task.sleep.nap" = "0.02" }
    vars = { image = "x" }
    """,
    """
    name = "mixed"
    baseline = "plain"
    [placement]
    workers = 2
    pin = ["core", "none"]
    cpus = 1
    [[task]]
    name = "sync"
    kernel = "null"
    [[task]]
    name = "lat"
    kernel = "net.pingpong"
    msg_size = [8, "1KiB"]
    iterations = 100
    peer_timeout = "5s"
    [[task]]
    name = "mkdir"
    kernel = "meta.mkdir"
    total = 200
    [[task]]
    name = "w"
    kernel = "io.write"
    size = "256KiB"
    [[concurrent]]
    name = "both"
    tasks = ["mkdir", "w"]
    [[variant]]
    name = "plain"
    [[variant]]
    name = "bound"
    bind = "core"
    [reference]
    "sync.sync_overhead_us" = { value = 100.0, lower = -0.5, upper = 2.0 }
    """,
    """
    repeat = 3
    [[task]]
    name = "stream"
    kernel = "mem.stream"
    elements = 100000
    ntimes = [2, 3]
    [[task]]
    name = "himeno"
    kernel = "cpu.himeno"
    grid = "XS"
    iterations = 2
    [[task]]
    name = "dgemm"
    kernel = "cpu.dgemm"
    n = 64
    seconds = "0.1s"
    """,
)] + [resources.files("manybench").joinpath("demo.toml").read_text()]

ODD_STRINGS = ["", " ", "../../x", "/etc/passwd", "a/b", "..", ".", "{", "}", "{nope}",
               "{{}}", "\u0000", "\n", "x" * 5000, "é😀", "$HOME/x", "~", "-1", "nan", "1e999",
               "1GiB", "10s", "99999999999PiB", "0-99999999", "1" + "0" * 400, "core", "true", "'", '"', "\\"]
ODD_NUMBERS = [0, -1, 1, 2, 3, 10**30, 10**400, 2**63, -(2**63), 2**31, 100000000, 1.5, -0.0,
               float("nan"), float("inf"), float("-inf"), 1e308]
# names over the byte limit in fewer characters than it (a file system counts bytes)
MULTIBYTE = ["é" * 100, "é" * 101, "é" * 150, "😀" * 50, "😀" * 51, "名" * 67, "名" * 80]
WARMUPS = [0, 1, 3, 1000, 100001, 100000000, 10**30, -1, 1.5, True, "2"]
TYPOS = {"timeout": "timout", "parse": "parser", "workers": "worker", "kernel": "kernal",
         "command": "cmd", "block": "blok", "size": "sise", "name": "nmae", "repeat": "repeats"}


# -- a small TOML writer: every value inline, so any nesting can be written ----------------

def _key(k: str) -> str:
    return k if k and all(c.isalnum() or c in "-_" for c in k) else json.dumps(k)


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v)     # JSON's escapes are TOML basic-string escapes
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_key(k)} = {_value(x)}" for k, x in v.items()) + "}"
    return json.dumps(str(v))


def dumps(raw: dict) -> str:
    return "".join(f"{_key(k)} = {_value(v)}\n" for k, v in raw.items())


# -- mutations --------------------------------------------------------------------------

def _containers(node: Any, path: tuple = ()) -> list[tuple[tuple, Any]]:
    out = []
    if isinstance(node, (dict, list)):
        out.append((path, node))
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for k, v in items:
            out.extend(_containers(v, path + (k,)))
    return out


def _odd_value(rng: random.Random, old: Any) -> Any:
    pick = rng.random()
    if pick < 0.3:
        return rng.choice(ODD_NUMBERS)
    if pick < 0.55:
        return rng.choice(ODD_STRINGS)
    if pick < 0.65:
        return rng.choice([True, False])
    if pick < 0.75:                       # retyped: wrapped in a list or a table
        return [old] if rng.random() < 0.5 else {"x": old}
    if pick < 0.85:                       # deep nesting
        v: Any = old
        for _ in range(rng.choice([5, 40, 150])):
            v = [v] if rng.random() < 0.5 else {"a": v}
        return v
    if pick < 0.92:
        return []
    return {}


def mutate(raw: dict, rng: random.Random) -> dict:
    """One to three random changes, anywhere in the plan."""
    for _ in range(rng.randint(1, 3)):
        conts = [c for c in _containers(raw) if len(c[0]) < 40]   # nesting grows, bounded
        path, node = rng.choice(conts)
        op = rng.random()
        if isinstance(node, dict):
            keys = list(node)
            if not keys or op < 0.1:
                node[rng.choice(list(TYPOS.values()) + ["extra", "kernel", "command"])] = \
                    _odd_value(rng, 1)
            elif op < 0.3:
                del node[rng.choice(keys)]
            elif op < 0.4:                  # a field copied into another table
                k = rng.choice(keys)
                other = rng.choice(conts)[1]
                if isinstance(other, dict):    # copies: a table never holds itself
                    other[k] = copy.deepcopy(node[k])
                else:
                    other.append(copy.deepcopy(node[k]))
            elif op < 0.5:                  # a typo of a field's name
                k = rng.choice(keys)
                node[TYPOS.get(k, k + "x")] = node.pop(k)
            else:
                k = rng.choice(keys)
                node[k] = _odd_value(rng, node[k])
        elif isinstance(node, list):
            if not node or op < 0.2:
                node.append(_odd_value(rng, 1))
            elif op < 0.4:
                node.pop(rng.randrange(len(node)))
            elif op < 0.55:
                node.append(copy.deepcopy(node[rng.randrange(len(node))]))  # duplicated
            else:
                i = rng.randrange(len(node))
                node[i] = _odd_value(rng, node[i])
    return raw


def observe_or_name(raw: dict, rng: random.Random) -> dict:
    """A warm-up count or a multibyte name, on the plan, a task or a variant: the fields that
    escaped the limits once (a warm-up expanded before it was counted; a name bounded in
    characters, not bytes)."""
    tables = [raw] + [t for key in ("task", "variant") if isinstance(raw.get(key), list)
                      for t in raw[key] if isinstance(t, dict)]
    table = rng.choice(tables)
    if rng.random() < 0.5 and (table is raw or table in raw.get("task", [])):
        table["warmup"] = rng.choice(WARMUPS)
    else:
        table["name"] = rng.choice(MULTIBYTE)
    return raw


def text_mutate(text: str, rng: random.Random) -> str:
    """Broken TOML: truncated, a line doubled or dropped, a character flipped."""
    lines = text.splitlines(keepends=True)
    op = rng.random()
    if op < 0.25:
        return text[:rng.randrange(len(text))]
    if op < 0.5 and lines:
        i = rng.randrange(len(lines))
        return "".join(lines[:i + 1] + lines[i:])
    if op < 0.75 and lines:
        i = rng.randrange(len(lines))
        return "".join(lines[:i] + lines[i + 1:])
    i = rng.randrange(len(text))
    return text[:i] + rng.choice("[]{}=\"'#\n.,") + text[i + 1:]


SET_KEYS = ["repeat", "name", "slots", "placement.workers", "placement.bind", "placement.cpus",
            "task[0].size", "task[0].timeout", "task[0].command", "task[1].workers",
            "variant[0].set", "task.nosuch.x", "task[9].x", "", "=", "task..x", "task[-1].x"]
SET_VALUES = ["nan", "inf", "-1", "0", "[]", "{}", "1e999", "[1,", "99999999999999999999",
              '"../x"', "[2, 3]", "{ cpus = \"0-99999999\" }", "true", "", "1" * 400]


def cases(n: int, seed: int) -> list[tuple[str, list[str]]]:
    """(plan text, extra command-line arguments: --set overrides) per case."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        base = rng.choice(SEEDS)
        if rng.random() < 0.15:
            text = text_mutate(base, rng)
        elif rng.random() < 0.2:
            text = dumps(observe_or_name(tomllib.loads(base), rng))
        else:
            text = dumps(mutate(tomllib.loads(base), rng))
        args: list[str] = []
        if rng.random() < 0.1:
            args = ["--set", f"{rng.choice(SET_KEYS)}={rng.choice(SET_VALUES)}"]
        out.append((text, args))
    return out


# -- the property -------------------------------------------------------------------------

class _Hang(Exception):
    pass


def _alarm(signum, frame):
    raise _Hang()


def check_outcome(code: int, output: str, path: str, where: str) -> None:
    assert "Traceback" not in output, where + output
    assert code in (0, 2), f"{where}exit {code}\n{output}"
    if code == 2:
        problems = [ln for ln in output.splitlines() if ln.strip()]
        assert problems, where + "exit 2 without a message"
        for ln in problems:   # each problem names the plan file (or the --set) and a field
            assert ln.startswith((path, "manybench: ", "--set")), where + output


def test_the_writer_round_trips_every_seed():
    for s in SEEDS:
        raw = tomllib.loads(s)
        assert tomllib.loads(dumps(raw)) == raw


def test_every_seed_plan_is_valid(tmp_path):
    for i, text in enumerate(SEEDS):
        plan = tmp_path / f"seed{i}.toml"
        plan.write_text(text)
        res = CliRunner().invoke(main, ["run", str(plan), "--dry-run"])
        assert res.exit_code == 0, res.output


def test_mutated_plans_exit_0_or_2_naming_the_problem(tmp_path):
    runner = CliRunner()
    plan = tmp_path / "fuzz.toml"
    previous = signal.signal(signal.SIGALRM, _alarm)
    seen = {0: 0, 2: 0}
    try:
        for n, (text, args) in enumerate(cases(CASES, SEED)):
            where = f"seed {SEED} case {n} {args}:\n{text[:3000]}\n---\n"
            plan.write_text(text)
            signal.alarm(CASE_TIMEOUT_S)
            try:
                res = runner.invoke(main, ["run", str(plan), "--dry-run", *args])
            except _Hang:
                pytest.fail(where + f"no outcome within {CASE_TIMEOUT_S} s")
            finally:
                signal.alarm(0)
            if isinstance(res.exception, _Hang):
                pytest.fail(where + f"no outcome within {CASE_TIMEOUT_S} s")
            if res.exception is not None and not isinstance(res.exception, SystemExit):
                pytest.fail(where + "".join(traceback.format_exception(res.exception)))
            check_outcome(res.exit_code, res.output, str(plan), where)
            seen[res.exit_code] += 1
    finally:
        signal.signal(signal.SIGALRM, previous)
    # the mutations must reach both outcomes, or the fuzzer tests nothing
    assert seen[0] > CASES // 20 and seen[2] > CASES // 4, seen


@pytest.mark.e2e
def test_a_few_mutated_plans_through_the_real_command_line(tmp_path):
    """As a user runs it: a separate process, its stderr, its exit status."""
    for n, (text, args) in enumerate(cases(6, SEED + 1)):
        plan = tmp_path / f"fuzz{n}.toml"
        plan.write_text(text)
        res = run_cli("run", str(plan), "--dry-run", *args, timeout=60)
        where = f"seed {SEED + 1} case {n} {args}:\n{text[:3000]}\n---\n"
        check_outcome(res.returncode, res.stderr if res.returncode else res.stdout,
                      str(plan), where)


def test_the_fuzzer_reaches_warmups_and_multibyte_names():
    texts = [t for t, _ in cases(CASES, SEED)]
    assert sum("warmup = " in t for t in texts) > CASES // 40
    assert sum(any(json.dumps(n)[1:-1] in t for n in MULTIBYTE) for t in texts) > CASES // 40
