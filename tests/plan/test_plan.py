import os
import re
import textwrap

import pytest

from manybench.kernels import KERNELS, REQUIRED, Kernel, Param
from manybench.plan import PlanError, load_plan, parse_plan, parse_value

MINIMAL = """
[[task]]
name = "n"
kernel = "null"
"""


def problems(text, **kw):
    kw.setdefault("check_dirs", False)
    with pytest.raises(PlanError) as ei:
        parse_plan(textwrap.dedent(text), path="p.toml", **kw)
    assert str(ei.value) == "\n".join(ei.value.problems)
    return ei.value.problems


def one(probs, field):
    """The single problem naming `field` (as `: field: `)."""
    hits = [p for p in probs if f": {field}: " in p]
    assert len(hits) == 1, (field, probs)
    return hits[0]


def line_of(problem):
    m = re.match(r"p\.toml:(\d+): ", problem)
    return int(m.group(1)) if m else None


# ------------------------------------------------------------------ defaults and shape

def test_minimal_plan_defaults(tmp_path):
    f = tmp_path / "my-bench.toml"
    f.write_text(MINIMAL)
    plan = load_plan(f)
    assert plan.name == "my-bench"
    assert (plan.repeat, plan.workers, plan.order, plan.pin) == (1, [1], ["spread"], ["core"])
    assert plan.slots is None and plan.scratch is None and plan.keep is False
    assert plan.variants == [] and plan.source == MINIMAL and plan.path == str(f)
    t = plan.tasks[0]
    assert (t.name, t.kernel, t.params, t.command, t.workers, t.line) == ("n", "null", {}, None,
                                                                          None, 2)


def test_name_without_file_and_explicit():
    assert parse_plan(MINIMAL).name == "plan"
    assert parse_plan('name = "x"\n' + MINIMAL).name == "x"


def test_slots_give_default_workers_and_argument_wins():
    assert parse_plan("slots = 4\n" + MINIMAL).workers == [4]
    plan = parse_plan("slots = 4\n" + MINIMAL, slots=8)
    assert plan.slots == 8 and plan.workers == [8]


def test_full_plan_fields(tmp_path):
    plan = parse_plan(textwrap.dedent(f"""
        name = "io"
        repeat = 3
        scratch = "{tmp_path}"
        keep = true
        [placement]
        workers = [1, 2]
        order = "pack"
        pin = ["core", "none"]
        [[task]]
        name = "w"
        kernel = "io.write"
        size = "1GiB"
        block = ["64KiB", "1MiB"]
        timeout = "2m"
        env = {{ A = "1", B = 2 }}
        workers = 3
        [[task]]
        name = "dd"
        command = ["dd", "bs={{block}}", "of={{scratch}}/x"]
        block = "1M"
        shell = true
        metrics.rate = '(?P<value>[\\d.]+) MB/s'
        """))
    assert (plan.repeat, plan.workers, plan.order, plan.pin) == (3, [1, 2], ["pack"], ["core", "none"])
    assert plan.scratch == str(tmp_path) and plan.keep
    w, dd = plan.tasks
    assert w.params == {"size": "1GiB", "block": ["64KiB", "1MiB"]}
    assert (w.timeout, w.env, w.workers, w.kernel) == (120.0, {"A": "1", "B": "2"}, [3], "io.write")
    assert dd.kernel == "command" and dd.shell and dd.command == ["dd", "bs={block}", "of={scratch}/x"]
    assert dd.params == {"block": "1M"} and set(dd.metrics) == {"rate"}
    assert plan.raw["task"][0]["name"] == "w"


def test_dir_expands_environment_variables(tmp_path, monkeypatch):
    monkeypatch.setenv("MB_SCRATCH", str(tmp_path))
    plan = parse_plan('scratch = "$MB_SCRATCH"\n' + MINIMAL)
    assert plan.scratch == str(tmp_path)
    monkeypatch.delenv("MB_SCRATCH")
    assert "MB_SCRATCH is not set" in one(problems('scratch = "$MB_SCRATCH"\n' + MINIMAL,
                                                   check_dirs=True), "scratch")


# ------------------------------------------------------------------ problem reporting

def test_toml_syntax_error_keeps_line_and_column():
    probs = problems('repeat = 1\nname = "x\n')
    assert len(probs) == 1 and re.match(r"p\.toml:2:\d+: TOML syntax: ", probs[0])


def test_many_problems_all_reported_with_lines():
    probs = problems("""\
        repeat = 0
        tasks = 1
        [placement]
        workers = [1, 0]
        order = "spred"
        pin = 3
        colour = "red"

        [[task]]
        name = "w"
        kernel = "io.write"
        size = "1GiB"
        blok = "1MiB"
        block = ["64KiB", "1Mx"]

        [[task]]
        name = "dd"
        command = ["dd", "bs={block}", "count={cnt}"]
        block = "1M"
        """)
    expect = {"repeat": 1, "tasks": 2, "placement.workers": 4, "placement.order": 5,
              "placement.pin": 6, "placement.colour": 7, "task.w.blok": 13,
              "task.w.block": 14, "task.dd.command": 18}
    for field, line in expect.items():
        assert line_of(one(probs, field)) == line, field
    assert len(probs) == len(expect)
    assert "unknown field 'tasks'" in one(probs, "tasks") and "did you mean 'task'" in probs[1]
    assert "unknown field 'colour'" in one(probs, "placement.colour")
    assert "must be at least 1" in one(probs, "placement.workers")
    assert "spread, pack" in one(probs, "placement.order")
    assert "core, numa, none" in one(probs, "placement.pin")
    assert "unknown field 'blok' for kernel io.write (known: " in one(probs, "task.w.blok")
    assert "not a size" in one(probs, "task.w.block")
    assert "template names unknown parameter 'cnt'" in one(probs, "task.dd.command")
    assert [line_of(p) for p in probs] == sorted(line_of(p) for p in probs)


def test_no_task():
    assert "add at least one" in one(problems('name = "x"\n'), "task")
    assert "add at least one" in one(problems("task = []\n"), "task")


def test_task_without_usable_name_is_addressed_by_index():
    probs = problems(MINIMAL + '[[task]]\nkernel = "null"\n[[task]]\nname = "n"\nkernel = "x"\n')
    assert line_of(one(probs, "task[1].name")) == 5  # its [[task]] header
    assert "required" in one(probs, "task[1].name")
    assert "duplicate task name 'n'" in one(probs, "task[2].name")
    assert "unknown kernel 'x' (known: " in one(probs, "task[2].kernel")
    assert "io.write" in one(probs, "task[2].kernel")


def test_kernel_or_command_exactly_one():
    probs = problems('[[task]]\nname = "a"\nkernel = "null"\ncommand = ["x"]\n'
                     '[[task]]\nname = "b"\n')
    assert "not both" in one(probs, "task.a.kernel")
    assert "needs kernel" in one(probs, "task.b")


def test_line_omitted_when_unknown():
    probs = problems('task = [{ name = "a", kernel = "null", blok = 1 }]\n')
    assert one(probs, "task.a.blok").startswith("p.toml: task.a.blok: ")


def test_multiline_string_does_not_confuse_lines():
    probs = problems('''\
        [[task]]
        name = "a"
        command = ["sh", "-c", """
        x = 1
        [[task]]
        """]
        x = []
        ''')
    assert line_of(one(probs, "task.a.x")) == 7


# ------------------------------------------------------------------ kernel tasks

def test_kernel_param_values_and_empty_sweep():
    probs = problems("""\
        [[task]]
        name = "w"
        kernel = "io.write"
        size = ["1GiB", true]
        block = []
        direct = "yes"
        fsync = "sometimes"
        """)
    assert "expected a size" in one(probs, "task.w.size")
    assert "empty sweep" in one(probs, "task.w.block")
    assert "true or false" in one(probs, "task.w.direct")
    assert "end, never" in one(probs, "task.w.fsync")


def test_kernel_task_rejects_command_fields():
    probs = problems('[[task]]\nname = "w"\nkernel = "null"\nshell = true\nmetrics.x = "y"\n')
    assert "only for command tasks" in one(probs, "task.w.shell")
    assert "only for command tasks" in one(probs, "task.w.metrics")


def test_required_kernel_param(monkeypatch):
    k = Kernel(name="t.req", doc="", params={"n": Param("int", "", default=REQUIRED)},
               prepare=lambda c, p: None, run=lambda s, t, x: None)
    monkeypatch.setitem(KERNELS, "t.req", k)
    assert "missing" in one(problems('[[task]]\nname = "r"\nkernel = "t.req"\n'), "task.r.n")
    assert parse_plan('[[task]]\nname = "r"\nkernel = "t.req"\nn = 3\n').tasks[0].params == {"n": 3}


def test_kernel_check_reported_once_per_task():
    probs = problems("""\
        [[task]]
        name = "w"
        kernel = "io.write"
        block = ["4k", "64k", "1M"]
        [[task]]
        name = "m"
        kernel = "meta.mkdir"
        items = [1, 2]
        total = 10
        """)
    assert "give `size` or `duration`" in one(probs, "task.w.size")
    assert line_of(one(probs, "task.w.size")) == 1
    assert "exactly one of `items`" in one(probs, "task.m.items")
    assert len(probs) == 2


def test_kernel_check_sees_parsed_defaults():
    plan = parse_plan('[[task]]\nname = "r"\nkernel = "io.read"\nsize = "1M"\n')
    assert plan.tasks[0].params == {"size": "1M"}


def test_timeout_and_env():
    probs = problems("""\
        [[task]]
        name = "a"
        kernel = "null"
        timeout = "10q"
        env = { X = true }
        [[task]]
        name = "b"
        kernel = "null"
        timeout = 0
        """)
    assert "not a duration" in one(probs, "task.a.timeout")
    assert "strings" in one(probs, "task.a.env.X")
    assert "greater than zero" in one(probs, "task.b.timeout")


# ------------------------------------------------------------------ command tasks

def test_command_task_problems():
    probs = problems(r"""
        [[task]]
        name = "c"
        command = ["run", "{rank}", "{node}", "{bad.attr}", "{size}"]
        size = 1
        rank = 3
        opts = { a = 1 }
        sweep = []
        shell = "yes"
        metrics.a = '(unclosed'
        metrics.b = '(?P<val>\d+)'
        [[task]]
        name = "d"
        command = "dd if=/dev/zero"
        [[task]]
        name = "e"
        command = []
        """)
    cmd = [p for p in probs if ": task.c.command: " in p]
    assert len(cmd) == 1 and "not a plain parameter name" in cmd[0]
    assert "built-in template name" in one(probs, "task.c.rank")
    assert "value or a list of values" in one(probs, "task.c.opts")
    assert "empty sweep" in one(probs, "task.c.sweep")
    assert "true or false" in one(probs, "task.c.shell")
    assert "invalid regular expression" in one(probs, "task.c.metrics.a")
    assert "(?P<value>" in one(probs, "task.c.metrics.b")
    assert "non-empty list of strings" in one(probs, "task.d.command")
    assert "non-empty list of strings" in one(probs, "task.e.command")


def test_command_builtins_and_params_accepted():
    plan = parse_plan('[[task]]\nname = "c"\ncommand = ["x", "{{lit}}", "{scratch}/{rank}", '
                      '"{n}-{run}-{node}-{slot}-{workers}-{rep}-{phase}-{variant}-{task}"]\n'
                      'n = [1, 2]\n')
    assert plan.tasks[0].params == {"n": [1, 2]} and plan.tasks[0].kernel == "command"


# ------------------------------------------------------------------ directories and slots

def test_directories(tmp_path):
    missing = tmp_path / "nope"
    afile = tmp_path / "f"
    afile.write_text("")
    probs = problems(f"""\
        scratch = "{missing}"
        [[task]]
        name = "a"
        kernel = "io.write"
        size = "1M"
        dir = "{afile}"
        """, check_dirs=True)
    assert "directory does not exist" in one(probs, "scratch")
    assert "not a directory" in one(probs, "task.a.dir")
    assert line_of(one(probs, "task.a.dir")) == 6
    # the same plan is fine when directories are not checked (e.g. --dry-run elsewhere)
    parse_plan(f'scratch = "{missing}"\n' + MINIMAL, check_dirs=False)


def test_directory_not_writable(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir(mode=0o500)
    # root may write to any mode; a /proc process directory refuses even root
    target = "/proc/1" if os.geteuid() == 0 else str(ro)
    try:
        probs = problems(f'scratch = "{target}"\n' + MINIMAL, check_dirs=True)
        assert "directory is not writable" in one(probs, "scratch")
    finally:
        ro.chmod(0o700)


def test_directory_not_writable_reported(tmp_path, monkeypatch):
    # the same check as above, runnable as root: os.access is what the plan consults
    monkeypatch.setattr("manybench.plan.os.access", lambda path, mode: False)
    probs = problems(f'scratch = "{tmp_path}"\n' + MINIMAL, check_dirs=True)
    assert "directory is not writable" in one(probs, "scratch")
    assert line_of(one(probs, "scratch")) == 1


def test_workers_over_slots():
    text = """\
        slots = 4
        [placement]
        workers = [2, 8]
        [[task]]
        name = "a"
        kernel = "null"
        workers = [4, 16]
        """
    probs = problems(text)
    assert "8 workers but only 4 slots" in one(probs, "placement.workers")
    assert "16 workers but only 4 slots" in one(probs, "task.a.workers")
    assert line_of(one(probs, "task.a.workers")) == 7
    assert len(problems(text, slots=2)) == 2
    assert parse_plan(textwrap.dedent(text), slots=16).slots == 16


def test_slots_argument_must_be_positive():
    assert problems(MINIMAL, slots=0) == ["--slots: must be a positive integer, got 0"]


# ------------------------------------------------------------------ variants

def test_variants_valid():
    plan = parse_plan("""
        [[task]]
        name = "w"
        kernel = "io.write"
        size = "1M"
        [[variant]]
        name = "a"
        [[variant]]
        name = "b"
        env = { X = "1" }
        [variant.set]
        "task.w.block" = "4MiB"
        placement.pin = "none"
        """)
    a, b = plan.variants
    assert (a.name, a.set, a.env) == ("a", {}, {})
    assert b.set == {"task.w.block": "4MiB", "placement.pin": "none"} and b.env == {"X": "1"}


def test_variant_problems():
    probs = problems("""\
        [[task]]
        name = "w"
        kernel = "io.write"
        size = "1M"
        fsync = "end"
        [[variant]]
        name = "v"
        colour = 1
        [variant.set]
        "task.w.block" = "zz"
        repeat = 2
        "task.nosuch.x" = 1
        "task.w.size" = []
        [[variant]]
        name = "v"
        set = { "task.w.size" = 0, "task.w.kernel" = "io.read" }
        [[variant]]
        env = 3
        """)
    assert "unknown field 'colour'" in one(probs, "variant.v.colour")
    assert line_of(one(probs, "variant.v.set.task.w.block")) == 10
    assert "not a size" in one(probs, "variant.v.set.task.w.block")
    assert "cannot set 'repeat'" in one(probs, "variant.v.set.repeat")
    assert "no task named 'nosuch'" in one(probs, "variant.v.set.task.nosuch.x")
    assert "empty sweep" in one(probs, "variant.v.set.task.w.size")
    assert "duplicate variant name 'v'" in one(probs, "variant[1].name")
    # a problem the set causes elsewhere is still told, under the variant
    assert "with this variant, task.w.fsync: unknown field" in one(probs, "variant[1].set")
    assert "required" in one(probs, "variant[2].name")
    assert "a table" in one(probs, "variant[2].env")


# ------------------------------------------------------------------ --set overrides

def test_parse_value():
    assert parse_value("3") == 3 and parse_value("true") is True
    assert parse_value("[2,4]") == [2, 4] and parse_value('"x"') == "x"
    assert parse_value("1MiB") == "1MiB" and parse_value("a b") == "a b"
    assert parse_value("[64KiB, 1MiB]") == ["64KiB", "1MiB"]
    assert parse_value("1\nrepeat = 5") == "1\nrepeat = 5"


def test_overrides_applied_before_validation():
    text = """\
        [[task]]
        name = "w"
        kernel = "io.write"
        size = "1M"
        [[task]]
        name = "c"
        command = ["x", "{n}"]
        n = 1
        [[variant]]
        name = "fast"
        """
    plan = parse_plan(textwrap.dedent(text), overrides=[
        "repeat=3", "placement.workers=[2,4]", "task.w.block=1MiB", "task[1].n=[1, 2]",
        "placement.order=\"pack\"", "keep=true", "variant.fast.env.X=1",
        "variant.fast.set.task.w.direct=true", "name = spaced "])
    assert (plan.repeat, plan.workers, plan.order, plan.keep) == (3, [2, 4], ["pack"], True)
    assert plan.tasks[0].params["block"] == "1MiB" and plan.tasks[1].params["n"] == [1, 2]
    assert plan.variants[0].env == {"X": "1"}
    assert plan.variants[0].set == {"task.w.direct": True}
    assert plan.name == " spaced "
    assert plan.raw["placement"]["workers"] == [2, 4] and plan.raw["repeat"] == 3
    assert plan.source == textwrap.dedent(text)  # the file as written


def test_override_problems():
    probs = problems(MINIMAL, overrides=["repeat", "task.nosuch.x=1", "=3", "task.n.kernel.x=1",
                                         "placement.wrkers=2", "task.n.size=1M", "task[5].x=1"])
    assert "expected KEY=VALUE" in probs[0] and "repeat" in probs[0]
    assert probs[1].startswith("--set: task.nosuch.x: no task named 'nosuch'")
    assert "expected KEY=VALUE" in probs[2]
    assert probs[3] == "--set: task.n.kernel.x: 'kernel' is not a table"
    assert probs[4].startswith("--set: task[5].x: ")
    # fields the overrides broke are named, and marked, with no misleading line
    assert one(probs, "placement.wrkers").startswith("p.toml: placement.wrkers: unknown field")
    assert one(probs, "placement.wrkers").endswith("(from --set)")
    assert "unknown field 'size' for kernel null" in one(probs, "task.n.size")
    assert len(probs) == 7


def test_load_plan_unreadable(tmp_path):
    with pytest.raises(PlanError) as ei:
        load_plan(tmp_path / "missing.toml")
    assert "cannot read" in str(ei.value)


def test_order_and_pin_sweeps_are_lists_on_the_plan():
    plan = parse_plan(MINIMAL, check_dirs=False, overrides=[
        'placement.order=["spread", "pack"]', "placement.pin=[none, core]"])
    assert (plan.order, plan.pin) == (["spread", "pack"], ["none", "core"])
