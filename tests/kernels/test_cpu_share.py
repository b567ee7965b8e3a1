"""How busy a record's allowed cpus were (/proc/stat over its window) and the two flags it
decides (kernels/binding.py): cpu-bound at its pin (it used them up) or at a shared pin
(others took a share of them)."""
from __future__ import annotations

import os
import subprocess

import pytest

from waits import wait_for
from manybench.kernels.binding import (MIN_STAT_TICKS, busy_figure, cpu_bound, cpu_shared,
                                       cpu_ticks, others_took, stat_text)
from manybench.node.cpu_others import SHOWN, lineage, named, running_on

#        user nice system idle iowait irq softirq steal guest guest_nice
STAT = """cpu  300 0 100 500 20 5 5 10 50 0
cpu0 100 0 50 300 10 0 0 5 50 0
cpu1 200 0 50 200 10 5 5 5 0 0
intr 1 2 3
"""


def _later(text: str, cpu: int, busy: int, idle: int) -> str:
    """text with `busy` ticks of user time and `idle` of idle added to one cpu."""
    out = []
    for line in text.splitlines():
        name, *v = line.split()
        if name == f"cpu{cpu}":
            v[0], v[3] = str(int(v[0]) + busy), str(int(v[3]) + idle)
        out.append(" ".join([name, *v]))
    return "\n".join(out) + "\n"


def test_busy_ticks_are_every_field_but_idle_and_iowait_and_guest_time_is_counted_once():
    # cpu0: user 100 + system 50 + steal 5 (guest 50 is inside user already)
    assert cpu_ticks(STAT, (0,)) == (155, 155 + 300 + 10)
    assert cpu_ticks(STAT, (0, 1)) == (155 + 265, 155 + 265 + 500 + 20)
    assert cpu_ticks(STAT, (2,)) is None                  # a cpu /proc/stat does not list


def test_the_busy_share_is_of_the_allowed_cpus_only_over_the_window():
    after = _later(_later(STAT, 1, 40, 0), 0, 0, 40)      # cpu1 all busy, cpu0 all idle
    assert busy_figure(STAT, after, "1") == {"cpus_busy_share": 1.0}
    assert busy_figure(STAT, after, "0") == {"cpus_busy_share": 0.0}
    assert busy_figure(STAT, after, "0-1") == {"cpus_busy_share": 0.5}


def test_a_window_of_too_few_ticks_or_unreadable_text_says_nothing():
    short = _later(STAT, 1, MIN_STAT_TICKS - 1, 0)
    assert busy_figure(STAT, short, "1") == {}
    assert busy_figure(STAT, _later(STAT, 1, MIN_STAT_TICKS, 0), "1") == {"cpus_busy_share": 1.0}
    assert busy_figure("", _later(STAT, 1, 40, 0), "1") == {}
    assert busy_figure(STAT, _later(STAT, 1, 40, 0), "not a list") == {}


def test_this_machine_s_stat_reads():
    assert cpu_ticks(stat_text(), (0,)) is not None


@pytest.mark.parametrize("own, busy, bound, shared", [
    (0.97, None, True, False),     # no busy share read: today's flag from its own use
    (0.97, 0.99, True, False),     # alone at its pin, used it all
    (0.85, 0.93, True, False),     # its cpus full, others took less than a tenth: its own
    (0.50, 1.00, False, True),     # others took half: a shared pin
    (0.12, 0.95, False, True),
    (0.30, 0.40, False, False),    # its cpus half idle: neither
    (0.50, None, False, False),
])
def test_a_saturated_cpu_is_flagged_as_its_own_or_shared_never_both(own, busy, bound, shared):
    m = {"cpus_used_share": own, **({} if busy is None else {"cpus_busy_share": busy})}
    assert (cpu_bound(m), cpu_shared(m)) == (bound, shared)
    if busy is not None:
        assert others_took(m) == pytest.approx(max(0.0, busy - own))


def test_what_runs_on_a_cpu_is_named_leaving_out_the_run_s_own(tmp_path):
    cpu = max(os.sched_getaffinity(0))
    loop = subprocess.Popen(["sh", "-c", "while :; do :; done"])
    try:
        os.sched_setaffinity(loop.pid, {cpu})
        seen = wait_for(lambda: [n for n in running_on({cpu}, lineage(os.getpid()))
                                 if n == f"sh (pid {loop.pid})"], "the loop seen on its cpu")
        assert seen
        assert f"(pid {loop.pid})" not in " ".join(running_on({cpu}, lineage(loop.pid)))
        assert os.getpid() in lineage(loop.pid) and 1 in lineage(os.getpid())
    finally:
        loop.kill()
        loop.wait()


def test_a_long_list_of_others_is_cut_to_a_few_and_a_count():
    names = [f"p (pid {i})" for i in range(SHOWN + 3)]
    assert named(names) == ", ".join(names[:SHOWN]) + ", 3 more"
    assert named(names[:2]) == "p (pid 0), p (pid 1)" and named([]) == ""
