"""Bad input stays inside its bounds (issue 11, items 2, 6 and 7's plan checks): a plan's
files stay in the slot's scratch, numbers are bounded at plan check, malformed plans are
exit 2 with the field named, never a traceback or a hang."""
from __future__ import annotations

import textwrap

import pytest
from click.testing import CliRunner

from manybench.cli import main
from manybench.kernels import KERNELS
from manybench.kernels.base import KernelError, SlotContext

from conftest import run_cli


def dry_run(tmp_path, text: str, *args: str):
    """`manybench run --dry-run` in process: (exit code, stderr + stdout)."""
    plan = tmp_path / "plan.toml"
    plan.write_text(textwrap.dedent(text))
    res = CliRunner().invoke(main, ["run", str(plan), "--dry-run", *args])
    assert res.exception is None or isinstance(res.exception, SystemExit), \
        "".join(__import__("traceback").format_exception(res.exception))
    return res.exit_code, res.output


def refused(tmp_path, text: str, field: str, *words: str) -> str:
    code, out = dry_run(tmp_path, text)
    assert code == 2, out
    assert f": {field}: " in out, out
    assert "Traceback" not in out
    for w in words:
        assert w in out, out
    return out


# -- item 2: nothing escapes --------------------------------------------------------------

@pytest.mark.parametrize("name", ["/tmp/victim", "../../x", "..", "a/b", ""])
def test_io_file_must_stay_in_the_slots_scratch(tmp_path, name):
    for kernel, extra in (("io.write", ""), ("io.read", ""), ("io.randwrite", 'size = "1MiB"')):
        refused(tmp_path, f"""
            [[task]]
            name = "w"
            kernel = "{kernel}"
            file = "{name}"
            size = "1MiB"
            """ if kernel != "io.randwrite" else f"""
            [[task]]
            name = "w"
            kernel = "{kernel}"
            file = "{name}"
            {extra}
            """, "task.w.file", "file name")


def test_io_write_refuses_a_symlink_planted_in_scratch(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious")
    scratch = tmp_path / "slot"
    scratch.mkdir()
    (scratch / "io.dat").symlink_to(victim)
    ctx = SlotContext(run="r", node="n", slot=0, rank=0, workers=1, cpu=-1,
                      scratch=str(scratch), shared=str(tmp_path / "shared"))
    for kname in ("io.write", "io.read", "io.randwrite"):
        (scratch / "rand.dat").unlink(missing_ok=True)
        (scratch / "rand.dat").symlink_to(victim)
        with pytest.raises(KernelError, match="symbolic link"):
            KERNELS[kname].prepare(ctx, {"size": 8192, "block": 4096})
    assert victim.read_text() == "precious"


def test_a_kernel_refuses_a_file_outside_scratch_even_without_plan_check(tmp_path):
    ctx = SlotContext(run="r", node="n", slot=0, rank=0, workers=1, cpu=-1,
                      scratch=str(tmp_path / "slot"), shared=str(tmp_path / "shared"))
    victim = tmp_path / "victim"
    victim.write_text("precious")
    with pytest.raises(KernelError, match="file"):
        KERNELS["io.write"].prepare(ctx, {"size": 4096, "file": str(victim)})
    assert victim.read_text() == "precious"


@pytest.mark.parametrize("name", ["a/b", "../../escape", "..", ".", "x\\u0000y", "a\\nb"])
def test_a_plan_name_that_would_escape_the_results_directory_is_refused(tmp_path, name):
    refused(tmp_path, f"""
        name = "{name}"
        [[task]]
        name = "n"
        kernel = "null"
        """, "name", "directory name")


@pytest.mark.e2e
def test_a_refused_name_creates_nothing_outside(tmp_path):
    plan = tmp_path / "p.toml"
    plan.write_text('name = "../escaped"\n[[task]]\nname = "n"\nkernel = "null"\n')
    res = run_cli("run", str(plan), "-q", cwd=tmp_path)   # default -o: results/<name>
    assert res.returncode == 2, res.stderr
    assert "name" in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / "escaped").exists()
    assert not (tmp_path / "manybench-results").exists()


# -- item 6: numbers bounded before the run ------------------------------------------------

@pytest.mark.parametrize("task, field", [
    ('command = ["true"]\ntimeout = inf', "timeout"),
    ('command = ["true"]\ntimeout = nan', "timeout"),
    ('command = ["true"]\ntimeout = "99999999h"', "timeout"),
    ('command = ["true"]\ntimeout = 1' + "0" * 400, "timeout"),
    ('kernel = "io.write"\nsize = 1000000000000000000000000000000', "size"),
    ('kernel = "io.write"\nsize = "99999999PiB"', "size"),
    ('kernel = "io.write"\nsize = "1' + "0" * 400 + '"', "size"),
    ('kernel = "io.write"\nduration = nan', "duration"),
    ('kernel = "io.write"\nduration = inf', "duration"),
    ('kernel = "net.pingpong"\npeer_timeout = nan', "peer_timeout"),
    ('kernel = "net.pingpong"\npeer_timeout = inf', "peer_timeout"),
    ('kernel = "net.pingpong"\nport = 70000', "port"),
    ('kernel = "mem.stream"\nthreads = 10000000000', "threads"),
    ('kernel = "cpu.dgemm"\nalpha = nan', "alpha"),
    ('kernel = "cpu.dgemm"\nbeta = -inf', "beta"),
])
def test_numbers_out_of_bounds_are_refused_at_plan_check(tmp_path, task, field):
    refused(tmp_path, '[[task]]\nname = "t"\n' + task + "\n", f"task.t.{field}")


def test_a_huge_repeat_is_counted_not_expanded(tmp_path):
    # 100,000,000 phases would exhaust memory: the count is refused before expanding
    refused(tmp_path, """
        repeat = 100000000
        [[task]]
        name = "n"
        kernel = "null"
        """, "repeat", "100,000,000 phases")


def test_a_huge_sweep_is_refused_before_its_points_are_checked(tmp_path):
    sweep = "[" + ", ".join(str(4096 * (i + 1)) for i in range(1000)) + "]"
    refused(tmp_path, f"""
        [placement]
        workers = [1, 2]
        [[task]]
        name = "w"
        kernel = "io.write"
        size = {sweep}
        block = {sweep}
        """, "task.w", "phases")


@pytest.mark.parametrize("where", ["[placement]\nworkers = 100000000",
                                   "[placement]\nworkers = [1, 100000000]",
                                   "slots = 100000000"])
def test_a_huge_worker_count_is_refused_not_hung(tmp_path, where):
    field = "slots" if where.startswith("slots") else "placement.workers"
    refused(tmp_path, where + '\n[[task]]\nname = "n"\nkernel = "null"\n', field,
            "100,000")


def test_repeat_over_its_limit_is_refused(tmp_path):
    refused(tmp_path, 'repeat = 1000001\n[[task]]\nname = "n"\nkernel = "null"\n', "repeat")


# -- item 7: a named problem instead of a traceback ----------------------------------------

def test_metrics_that_is_not_a_table_is_named(tmp_path):
    refused(tmp_path, """
        [[task]]
        name = "c"
        command = ["true"]
        metrics = "x"
        """, "task.c.metrics", "table")


@pytest.mark.parametrize("text", [
    "x = " + "{a = " * 500 + "1" + "}" * 500,
    "x = " + "[" * 500 + "]" * 500,
    "x = " + "{a = " * 60 + "1" + "}" * 60,
])
def test_deep_nesting_is_refused(tmp_path, text):
    code, out = dry_run(tmp_path, text + '\n[[task]]\nname = "n"\nkernel = "null"\n')
    assert code == 2 and "nested" in out and "plan.toml" in out, out


@pytest.mark.parametrize("typo, meant", [("timout", "timeout"), ("parser", "parse"),
                                         ("metric", "metrics"), ("envs", "env")])
def test_a_typo_of_a_task_field_is_not_taken_as_a_template_parameter(tmp_path, typo, meant):
    refused(tmp_path, f"""
        [[task]]
        name = "c"
        command = ["true"]
        {typo} = "1s"
        """, f"task.c.{typo}", f"did you mean {meant!r}", "{" + typo + "}")


def test_a_template_parameter_the_command_uses_is_accepted(tmp_path):
    code, out = dry_run(tmp_path, """
        [[task]]
        name = "c"
        command = ["sleep", "{nap}"]
        nap = ["0", "0.01"]
        """)
    assert code == 0, out


# -- item 7: checks that can run in --dry-run do ----------------------------------------

def test_threads_beyond_a_pinned_slots_cpus_are_refused_at_dry_run(tmp_path):
    refused(tmp_path, """
        [[task]]
        name = "s"
        kernel = "mem.stream"
        threads = 4
        """, "task.s.threads", 'pin = "core"')
    code, out = dry_run(tmp_path, """
        [placement]
        pin = "none"
        [[task]]
        name = "s"
        kernel = "mem.stream"
        threads = 4
        """)
    assert code == 0, out


def test_an_odd_worker_count_for_net_is_refused_at_dry_run(tmp_path):
    refused(tmp_path, """
        [placement]
        workers = [2, 3]
        [[task]]
        name = "p"
        kernel = "net.pingpong"
        """, "placement.workers", "even")
    refused(tmp_path, """
        [[task]]
        name = "p"
        kernel = "net.stream"
        workers = 1
        duration = "1s"
        """, "task.p.workers", "even")


def test_direct_with_an_unaligned_block_is_refused_at_dry_run(tmp_path):
    refused(tmp_path, """
        [[task]]
        name = "w"
        kernel = "io.write"
        size = "1MiB"
        block = 1000
        direct = true
        """, "task.w.block", "4096")


def test_a_command_missing_from_path_is_refused_locally_and_warned_on_a_cluster(tmp_path):
    text = """
        [[task]]
        name = "c"
        command = ["no-such-program-manybench", "x"]
        """
    refused(tmp_path, text, "task.c.command", "no-such-program-manybench", "PATH")
    code, out = dry_run(tmp_path, """
        [[task]]
        name = "c"
        command = ["true"]
        env = { PATH = "/nonexistent" }
        """)
    assert code == 2 and "'true'" in out, out   # the task's own PATH is the one looked in


@pytest.mark.e2e
def test_a_command_missing_from_path_is_only_warned_on_a_cluster(tmp_path):
    """On a cluster the nodes may have it: a warning, before the dry run reaches the cluster
    (which it now does, so an unreachable scheduler ends it with exit 2)."""
    plan = tmp_path / "c.toml"
    plan.write_text('[[task]]\nname = "c"\ncommand = ["no-such-program-manybench", "x"]\n')
    import dask
    import distributed  # noqa: F401  (its defaults first: set() before them, the block's end
    #                    deleted the whole "distributed" key, a later Security() KeyError)
    with dask.config.set({"distributed.comm.timeouts.connect": "2s"}):   # not 30 s
        res = CliRunner().invoke(main, ["run", str(plan), "--dry-run", "--scheduler",
                                        "tls://127.0.0.1:9"])
    assert "warning:" in res.output and "no-such-program-manybench" in res.output
    assert res.exit_code == 2 and "cannot reach the Dask scheduler" in res.output, res.output


@pytest.mark.parametrize("bind, key", [('{ cpus = "0-99999999" }', "cpus"),
                                       ("{ cpus = [0, 99999999] }", "cpus"),
                                       ('{ mems = "0-99999999" }', "mems")])
def test_a_huge_cpu_list_is_refused_not_expanded(tmp_path, bind, key):
    refused(tmp_path, f"""
        [placement]
        bind = {bind}
        [[task]]
        name = "n"
        kernel = "null"
        """, f"placement.bind.{key}", "cpu")


def test_set_into_an_entry_that_is_not_a_table_is_named(tmp_path):
    # found by the fuzzer: --set task[1].workers when task[1] is `true` was a TypeError
    code, out = dry_run(tmp_path, """
        task = [{ name = "n", kernel = "null" }, true]
        """, "--set", "task[1].workers=2")
    assert code == 2 and "--set" in out and "task[1]" in out, out


# -- issue 18 item 5: warm-up counted, names bounded in bytes ------------------------------

def test_a_task_warmup_past_the_repeat_limit_is_refused_before_expanding(tmp_path):
    # expanding 100,000,000 warm-up phases took minutes and gigabytes
    refused(tmp_path, '[[task]]\nname = "n"\nkernel = "null"\nwarmup = 100000000\n',
            "task.n.warmup")


def test_warmup_counts_towards_the_phase_limit(tmp_path):
    # 12 worker counts x (100,000 warm-up + 1) = 1,200,012 phases: over the 1,000,000 limit
    out = refused(tmp_path, """
        warmup = 100000
        [placement]
        workers = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]
        [[task]]
        name = "n"
        kernel = "null"
        """, "warmup", "1,200,012 phases")
    assert "1,000,000" in out


def test_a_task_warmup_counts_for_that_task_alone(tmp_path):
    code, out = dry_run(tmp_path, """
        [[task]]
        name = "a"
        kernel = "null"
        warmup = 2
        [[task]]
        name = "b"
        kernel = "null"
        """)
    assert code == 0 and "4 phases" in out, out


@pytest.mark.parametrize("table, prefix", [("", "name"), ("task", "task.0.name"),
                                           ("variant", "variant.0.name")])
def test_a_name_is_bounded_in_bytes_not_characters(tmp_path, table, prefix):
    long = "é" * 150     # 150 characters, 300 bytes: a file name holds at most 255 bytes
    if table == "":
        text = f'name = "{long}"\n[[task]]\nname = "n"\nkernel = "null"\n'
    elif table == "task":
        text = f'[[task]]\nname = "{long}"\nkernel = "null"\n'
    else:
        text = f'[[task]]\nname = "n"\nkernel = "null"\n[[variant]]\nname = "{long}"\n'
    code, out = dry_run(tmp_path, text)
    assert code == 2 and "bytes" in out and "300" in out, out


@pytest.mark.e2e
def test_a_multibyte_name_within_the_byte_limit_runs(tmp_path):
    name = "é" * 100     # 200 bytes
    res = run_cli("run", "-o", str(tmp_path / "out"), "--set", f'name="{name}"',
                  _null_plan(tmp_path))
    assert res.returncode == 0, res.stderr


def _null_plan(tmp_path) -> str:
    p = tmp_path / "null.toml"
    p.write_text('[[task]]\nname = "n"\nkernel = "null"\n')
    return str(p)


# -- issue 28, item 10: every value is one the wire carries, checked at plan check ----------

WIRE_CASES = [   # (a command task's parameter, words of the message)
    ("x = 18446744073709551616", ("18446744073709551616", "-2**63", "2**64 - 1")),   # 2**64
    ("x = -9223372036854775809", ("-9223372036854775809", "2**64 - 1")),             # -2**63-1
    ("x = [1, 18446744073709551616]", ("18446744073709551616",)),    # inside a sweep
    ("x = 1979-05-27T07:32:00Z", ("date or time", "quote")),       # TOML's datetimes
    ("x = 07:32:00", ("date or time",)),
    ('x = "a\\u0000b"', ("NUL",)),
]


@pytest.mark.parametrize("param, words", WIRE_CASES)
def test_a_value_the_wire_cannot_carry_is_refused_at_plan_check(tmp_path, param, words):
    refused(tmp_path, f'[[task]]\nname = "t"\ncommand = ["echo", "{{x}}"]\n{param}\n',
            "task.t.x", *words)


def test_the_wires_integer_bounds_pass(tmp_path):
    code, out = dry_run(tmp_path, '[[task]]\nname = "t"\ncommand = ["echo", "{x}", "{y}"]\n'
                                  'x = 18446744073709551615\ny = -9223372036854775808\n')
    assert code == 0, out


@pytest.mark.parametrize("where, field", [
    ('[[task]]\nname = "t"\nkernel = "null"\nenv = {A = 18446744073709551616}', "task.t.env.A"),
    ('[[task]]\nname = "t"\nkernel = "null"\n[[variant]]\nname = "v"\n'
     'vars = {a = 18446744073709551616}', "variant.v.vars.a"),
    ('[[task]]\nname = "t"\ncommand = ["echo", "{x}"]\nx = 1\n[[variant]]\nname = "v"\n'
     'set = {"task.t.x" = 1979-05-27}', "variant.v.set"),
])
def test_a_value_the_wire_cannot_carry_is_refused_wherever_it_is(tmp_path, where, field):
    code, out = dry_run(tmp_path, where + "\n")
    assert code == 2 and f": {field}" in out and "Traceback" not in out, out


def test_a_set_value_that_is_no_utf8_is_refused(tmp_path):
    """A --set VALUE from bytes that are no UTF-8 (a lone surrogate in Python's argv) crashed
    the run with a traceback when it was stored or sent."""
    code, out = dry_run(tmp_path, '[[task]]\nname = "t"\ncommand = ["echo", "{x}"]\nx = 1\n',
                        "--set", "task.t.x=a\udcffb")
    assert code == 2 and "task.t.x" in out and "UTF-8" in out and "(from --set)" in out, out


@pytest.mark.e2e
@pytest.mark.parametrize("value", ["18446744073709551616", "-9223372036854775809"])
def test_a_run_with_a_value_the_wire_cannot_carry_is_refused_not_aborted(tmp_path, value):
    """It passed --dry-run and crashed the real run with two tracebacks (OverflowError in
    msgpack), the run stored `aborted`."""
    plan = tmp_path / "p.toml"
    plan.write_text(f'[[task]]\nname = "t"\ncommand = ["echo", "{{x}}"]\nx = {value}\n')
    res = run_cli("run", str(plan), "-o", str(tmp_path / "res"), "-q")
    assert res.returncode == 2, res.stderr
    assert ": task.t.x: " in res.stderr and "Traceback" not in res.stderr, res.stderr
    assert not (tmp_path / "res" / "results.db").exists()
