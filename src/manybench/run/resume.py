"""`manybench run --resume DIR`: continue the directory's latest run, interrupted or killed,
from its first missing phase, into the same run id (as ReFrame and JUBE users restart long
campaigns).

The plan must be the one the run started with: the same TOML text and the same --set
overrides (the validated plan compared as a whole), else nothing runs (exit 2, the reason
named). Without a PLAN argument the stored plan text is used; without --set (--slots), the
stored run's (its options as parsed, kept in the run's row: cli/run_options.py). Phases
stored `ok` are kept; every other phase (the interrupted one, those never reached) runs now
and replaces what was there.
"""
from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass

from ..model import Phase, Plan
from ..plan import PlanError, parse_plan
from ..plan.expand import Remaining, expand
from ..results.contract import PhaseStatus, RunInfo, RunStatus
from ..results.schema import SchemaError
from ..results.store import Store, db_problem

RESUMABLE = (RunStatus.INTERRUPTED, RunStatus.KILLED, RunStatus.ABORTED)


class ResumeError(Exception):
    """Why the run cannot be resumed (exit 2)."""


@dataclass
class Resume:
    info: RunInfo           # the stored run (its status as a reader tells it)
    done: set[int]          # phase indices stored ok: kept
    failed: int             # records of the kept phases whose status is not ok


def latest_run(directory: str) -> tuple[RunInfo, Resume]:
    """The directory's latest run and what of it is kept; ResumeError when there is none or
    it cannot be resumed."""
    try:
        with Store(directory, readonly=True) as st:
            runs = st.runs()
            if not runs:
                raise ResumeError(f"--resume {directory}: no run stored there")
            info = runs[-1]
            phases = st.phases(info.run_id)
            done = {p.index for p in phases if p.status == PhaseStatus.OK}
            failed = sum(n for phase, n in st.not_ok(info.run_id).items() if phase in done)
    except OSError as e:
        raise ResumeError(f"--resume {directory}: no results there ({e})") from None
    except SchemaError as e:                    # damaged, foreign or too new: it says which
        raise ResumeError(f"--resume {directory}: cannot read its results: {e}") from None
    except sqlite3.Error as e:                  # locked, say: for how long it was waited on
        raise ResumeError(f"--resume {directory}: cannot read its results: "
                          f"{db_problem(e)}") from None
    if info.status not in RESUMABLE:
        why = ("its coordinator is still running" if info.status == RunStatus.RUNNING else
               "nothing is left to run")
        raise ResumeError(f"--resume {directory}: run {info.run_id} {info.status}: {why} "
                          f"(resumable: {', '.join(RESUMABLE)})")
    return info, Resume(info, done, failed)


def load(resume: Resume, directory: str, plan_path: str | None, overrides: tuple[str, ...],
         slots: int | None) -> tuple[Plan, list[Phase], Resume]:
    """The plan to resume the stored run (latest_run's) with, given its --set and --slots
    (the command line decides them: cli/launch.py), its phases still to run, and the run."""
    info = resume.info
    if plan_path is None:
        text, where = info.plan_source, f"{directory} (run {info.run_id})"
    else:
        try:
            with open(plan_path, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as e:
            raise ResumeError(f"{plan_path}: cannot read the plan: {e}") from None
        where = plan_path
    plan = parse_plan(text, where, overrides, slots=slots)   # PlanError: exit 2 as for run
    check_same(plan, info)
    phases = Remaining(expand(plan), resume.done)   # still lazy: produced as the run goes
    return plan, phases, resume


def check_same(plan: Plan, info: RunInfo) -> None:
    """ResumeError naming what changed when the plan is not the run's."""
    if (plan.source or "") != info.plan_source:
        raise ResumeError(f"--resume: the plan changed since run {info.run_id} started (its "
                          "text differs): resume with the same plan file, or start a new run")
    now = json.loads(json.dumps(plan.raw or {}))
    if now != info.plan_raw:
        keys = sorted(k for k in set(now) | set(info.plan_raw)
                      if now.get(k) != info.plan_raw.get(k))
        raise ResumeError(f"--resume: the plan changed since run {info.run_id} started "
                          f"(--set gives other values for: {', '.join(keys)}): resume with "
                          "the run's own --set")


__all__ = ["PlanError", "Resume", "ResumeError", "load"]
