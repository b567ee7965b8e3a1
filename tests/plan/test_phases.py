import json
import textwrap

from manybench.plan.expand import describe, expand
from manybench.plan import parse_plan


def plan_of(text, **kw):
    kw.setdefault("check_dirs", False)
    return parse_plan(textwrap.dedent(text), **kw)


def summary(phases, *params):
    return [(p.task.name, p.variant, p.rep, p.workers, *(p.params.get(k) for k in params))
            for p in phases]


def test_single_phase_with_defaults_filled_and_parsed():
    (ph,) = expand(plan_of("""
        [[task]]
        name = "w"
        kernel = "io.write"
        size = "1GiB"
        duration = "2s"
        """))
    assert (ph.index, ph.kernel, ph.variant, ph.rep, ph.workers, ph.order, ph.pin) == (
        0, "io.write", "", 0, 1, "spread", "core")
    assert ph.params == {"size": 2**30, "duration": 2.0, "block": 2**20, "file": "io.dat",
                         "direct": False, "fsync": "end", "wear_out": False,
                         "fallocate": True, "dir": None}
    assert ph.env == {} and ph.task.name == "w"


def test_sweep_product_params_outer_workers_innermost():
    phases = expand(plan_of("""
        [placement]
        workers = [1, 2]
        [[task]]
        name = "w"
        kernel = "io.write"
        size = ["1MiB", "2MiB"]
        block = ["4k", "64k"]
        """))
    got = [(p.params["size"] >> 20, p.params["block"] >> 10, p.workers) for p in phases]
    assert got == [(1, 4, 1), (1, 4, 2), (1, 64, 1), (1, 64, 2),
                   (2, 4, 1), (2, 4, 2), (2, 64, 1), (2, 64, 2)]
    assert [p.index for p in phases] == list(range(8))


def test_declaration_order_decides_the_outer_axis():
    phases = expand(plan_of("""
        [[task]]
        name = "w"
        kernel = "io.write"
        block = ["4k", "64k"]
        size = ["1MiB", "2MiB"]
        """))
    assert [p.params["block"] >> 10 for p in phases] == [4, 4, 64, 64]


def test_order_and_pin_sweeps_sit_between_params_and_workers():
    phases = expand(plan_of("""
        [placement]
        workers = [1, 2]
        order = ["spread", "pack"]
        pin = "none"
        [[task]]
        name = "n"
        kernel = "null"
        """))
    assert [(p.order, p.pin, p.workers) for p in phases] == [
        ("spread", "none", 1), ("spread", "none", 2), ("pack", "none", 1), ("pack", "none", 2)]


def test_repeats_are_consecutive_per_point_and_tasks_in_plan_order():
    phases = expand(plan_of("""
        repeat = 2
        [[task]]
        name = "a"
        kernel = "null"
        workers = [1, 3]
        [[task]]
        name = "b"
        kernel = "null"
        """))
    assert summary(phases) == [("a", "", 0, 1), ("a", "", 1, 1), ("a", "", 0, 3), ("a", "", 1, 3),
                               ("b", "", 0, 1), ("b", "", 1, 1)]


def test_variants_interleave_a_b_a_b():
    phases = expand(plan_of("""
        repeat = 2
        [placement]
        workers = [1, 2]
        [[task]]
        name = "w"
        kernel = "io.write"
        size = "1M"
        env = { T = "task", X = "task" }
        [[variant]]
        name = "A"
        [[variant]]
        name = "B"
        env = { X = "B" }
        set = { "task.w.block" = "4MiB", "placement.pin" = "none" }
        """))
    assert summary(phases, "block") == [
        ("w", "A", 0, 1, 2**20), ("w", "B", 0, 1, 4 * 2**20),
        ("w", "A", 1, 1, 2**20), ("w", "B", 1, 1, 4 * 2**20),
        ("w", "A", 0, 2, 2**20), ("w", "B", 0, 2, 4 * 2**20),
        ("w", "A", 1, 2, 2**20), ("w", "B", 1, 2, 4 * 2**20)]
    assert {p.pin for p in phases if p.variant == "A"} == {"core"}
    assert {p.pin for p in phases if p.variant == "B"} == {"none"}
    assert phases[0].env == {"T": "task", "X": "task"}
    assert phases[1].env == {"T": "task", "X": "B"}
    assert phases[1].task.params["block"] == "4MiB" and "block" not in phases[0].task.params


def test_variant_with_more_points_lines_up_by_position():
    phases = expand(plan_of("""
        [[task]]
        name = "n"
        kernel = "null"
        [[variant]]
        name = "A"
        [[variant]]
        name = "B"
        set = { "placement.workers" = [1, 2] }
        """))
    assert [(p.variant, p.workers) for p in phases] == [("A", 1), ("B", 1), ("B", 2)]


def test_point_key_is_stable_and_distinguishes_variants():
    phases = expand(plan_of("""
        repeat = 2
        [[task]]
        name = "w"
        kernel = "io.write"
        size = "1M"
        [[variant]]
        name = "A"
        [[variant]]
        name = "B"
        """))
    a0, b0, a1, b1 = phases
    assert a0.point == a1.point and b0.point == b1.point and a0.point != b0.point
    key = json.loads(a0.point)
    assert key == {"task": "w", "variant": "A", "workers": 1, "order": "spread", "pin": "core",
                   "params": a0.params, "pair": 0}
    assert json.loads(b0.point)["pair"] == 0    # the phases a comparison sets side by side
    again = expand(plan_of("""
        repeat = 2
        [[task]]
        name = "w"
        kernel = "io.write"
        size = "1M"
        [[variant]]
        name = "A"
        [[variant]]
        name = "B"
        """))
    assert [p.point for p in again] == [p.point for p in phases]


def test_command_task_params_as_given_and_swept():
    phases = expand(plan_of("""
        [[task]]
        name = "dd"
        command = ["dd", "bs={block}", "count={n}"]
        block = ["1M", "4M"]
        n = 64
        workers = 2
        """))
    assert [(p.kernel, p.params["block"], p.params["n"], p.workers) for p in phases] == [
        ("command", "1M", 64, 2), ("command", "4M", 64, 2)]


def test_task_workers_override_plan_workers_and_dir_resolution(tmp_path):
    phases = expand(plan_of(f"""
        scratch = "{tmp_path}"
        [placement]
        workers = [8]
        [[task]]
        name = "a"
        kernel = "meta.mkdir"
        items = 10
        workers = [1, 2]
        dir = "/elsewhere"
        [[task]]
        name = "b"
        kernel = "null"
        """))
    assert [(p.task.name, p.workers, p.params["dir"]) for p in phases] == [
        ("a", 1, "/elsewhere"), ("a", 2, "/elsewhere"), ("b", 8, str(tmp_path))]
    assert phases[0].params["items"] == 10 and phases[0].params["unique"] is False
    assert "total" not in phases[0].params  # unset optional, no default


def test_overrides_reach_the_phases():
    plan = plan_of("""
        [[task]]
        name = "w"
        kernel = "io.write"
        size = "1M"
        """, overrides=["placement.workers=[2,4]", "task.w.block=[64KiB, 1MiB]", "repeat=2"])
    assert [(p.params["block"], p.workers, p.rep) for p in expand(plan)] == [
        (65536, 2, 0), (65536, 2, 1), (65536, 4, 0), (65536, 4, 1),
        (2**20, 2, 0), (2**20, 2, 1), (2**20, 4, 0), (2**20, 4, 1)]


def test_describe_one_line_per_phase_human_units():
    phases = expand(plan_of("""
        [[task]]
        name = "w"
        kernel = "io.write"
        size = "1GiB"
        block = ["64KiB", "1MiB"]
        duration = "1500ms"
        [[variant]]
        name = "fast"
        """))
    text = describe(phases)
    lines = text.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("#0") and "w" in lines[0] and "[fast]" in lines[0]
    assert "block=64KiB" in lines[0] and "size=1GiB" in lines[0] and "block=1MiB" in lines[1]
    assert "duration=1.500s" in lines[0] and "workers=1" in lines[0] and "rep=0" in lines[0]
    assert "spread/core" in lines[0]
    assert "[" not in describe(expand(plan_of('[[task]]\nname = "n"\nkernel = "null"\n')))
    assert describe([]) == "(no phases)"


def test_label_shows_sizes_and_durations_in_human_form():
    ph = expand(plan_of("""
        [[task]]
        name = "w"
        kernel = "io.write"
        size = "1GiB"
        block = "64KiB"
        duration = "1500ms"
        [[variant]]
        name = "fast"
        """))[0]
    assert ph.label.startswith("w [fast] ")
    assert "size=1GiB" in ph.label and "block=64KiB" in ph.label
    assert "duration=1.500s" in ph.label and ph.label.endswith(" workers=1")
    assert "dir=" not in ph.label
