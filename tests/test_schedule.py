"""The T0 lead adapts to the dispatch times of earlier phases (run/schedule.py)."""
from __future__ import annotations

from manybench.run import schedule as S
from manybench.run.schedule import Scheduler

MS = 1_000_000


def phase(s: Scheduler, dispatch_ns: int, late: bool = False) -> None:
    """One observed phase whose last slot armed `dispatch_ns` after go was sent."""
    sent = 10_000 * MS
    t0 = sent + (dispatch_ns - 1 if late else dispatch_ns + 1)
    s.observe(sent, t0, [sent + dispatch_ns // 2, sent + dispatch_ns])


def test_first_lead_before_any_phase():
    assert Scheduler().lead_ns() == int(S.SAFETY * 5 * MS) + S.MARGIN_NS


def test_lead_follows_the_worst_recent_dispatch():
    s = Scheduler()
    phase(s, 3 * MS)
    assert s.lead_ns() == int(S.SAFETY * 3 * MS) + S.MARGIN_NS
    phase(s, 7 * MS)
    phase(s, 2 * MS)
    assert s.lead_ns() == int(S.SAFETY * 7 * MS) + S.MARGIN_NS   # the worst, not the last
    for _ in range(S.WINDOW - 2):          # the 7 ms phase is still one of the last WINDOW
        phase(s, 2 * MS)
    assert s.lead_ns() == int(S.SAFETY * 7 * MS) + S.MARGIN_NS
    phase(s, 2 * MS)                                             # and now it has aged out
    assert s.lead_ns() == int(S.SAFETY * 2 * MS) + S.MARGIN_NS


def test_lead_is_clamped():
    s = Scheduler()
    phase(s, 1000)                                 # 1 us dispatch: the floor holds
    assert s.lead_ns() == S.MIN_LEAD_NS
    assert Scheduler(min_lead_ns=0).lead_ns() > 0
    s = Scheduler()
    phase(s, 10 * S.MAX_LEAD_NS)                    # a pathological phase: the cap holds
    assert s.lead_ns() == S.MAX_LEAD_NS


def test_a_late_slot_doubles_the_next_lead_once_and_on_time_phases_undo_it():
    s = Scheduler()
    phase(s, 4 * MS)
    base = s.lead_ns()
    phase(s, 4 * MS, late=True)
    assert s.lead_ns() == int(S.SAFETY * 4 * MS * 2) + S.MARGIN_NS
    phase(s, 4 * MS)                                # on time: the boost halves back to 1
    assert s.lead_ns() == base
    phase(s, 4 * MS, late=True)
    phase(s, 4 * MS, late=True)                     # late again: still doubled, not 4x
    assert s.lead_ns() == int(S.SAFETY * 4 * MS * 2) + S.MARGIN_NS


def test_phases_without_armed_slots_change_nothing():
    s = Scheduler()
    s.observe(0, 10 * MS, [])
    assert not s.samples and s.lead_ns() == Scheduler().lead_ns()


def test_next_t0_is_now_plus_the_lead():
    s = Scheduler()
    phase(s, 3 * MS)
    assert s.next_t0(now=123 * MS) == 123 * MS + s.lead_ns()
    before = S.now_ns()
    t0 = s.next_t0()
    assert before + s.lead_ns() <= t0 <= S.now_ns() + s.lead_ns()
