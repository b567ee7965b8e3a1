"""Variants' setup and teardown on the nodes, and the provenance snapshots around them.

A variant's `setup` commands run on every node before its first phase (plan/expand.py runs
a variant with setup as one block), its `teardown` after its last, each as the variant's
vars fill their templates. The node's state is captured before and after each (a tuned
profile, THP, a mount: inventory's snapshot), and the commands' output is stored with the
run. A setup that fails (a command exits non-zero, times out or is missing) stops only its
variant: its phases are recorded as errors naming the command, and its teardown still runs
to undo what the setup did.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..config import timing
from ..engines.base import Engine
from ..model import Phase, Plan, Variant
from ..plan.expand import distinct
from ..node.protocol import CommandsDone, RunCommands
from ..templates import render


@dataclass
class StepResult:
    ok: bool
    error: str = ""      # why it failed: node, command, exit status, stderr's last line


def provenance(plan: Plan, phases: list[Phase], default_dir: str
               ) -> tuple[dict[str, str], list[str]]:
    """What the snapshots look at: every directory the plan's work touches, by a stable name
    (a task's, a variant's, the default scratch, a NUMA node's), and the programs it runs
    (commands, wraps, setups)."""
    dirs: dict[str, str] = {"scratch": default_dir}
    programs: list[str] = []
    for ph in distinct(phases):     # one phase per point
        for p in ph.members or [ph]:
            d = p.params.get("dir")
            if d:
                dirs.setdefault(f"task {p.task.name}" + (f" [{p.variant}]" if p.variant else ""),
                                d)
            if p.task.command:
                programs.append(p.task.command[0])
            if p.wrap:
                programs.append(p.wrap[0])
            if p.task.launcher:    # a parallel task's MPI: its package and version on record
                programs.append(_launcher_program(p.task.launcher))
    for v in plan.variants:
        programs += [argv[0] for argv in v.setup + v.teardown if argv]
    for numa, d in plan.resources.get("scratch", {}).items():
        dirs[f"scratch numa{numa}"] = d
    # a template ({image}) cannot be looked up before it is filled in
    return dirs, [p for p in dict.fromkeys(programs) if "{" not in p]


def _launcher_program(name: str) -> str:
    """The program a plan's `launcher` names ("auto": the one found here, if any)."""
    if name != "auto":
        return name
    from ..launchers import LauncherError, program   # noqa: PLC0415
    try:
        return program(name)
    except LauncherError:
        return "{auto}"      # nothing to look up: dropped with the templates below


class Setups:
    """Which variant's setup is in force, switching on phase boundaries."""

    def __init__(self, plan: Plan, engine: Engine, run_id: str, save,
                 dirs: dict[str, str] | None = None, programs: list[str] | None = None
                 ) -> None:
        self.variants = {v.name: v for v in plan.variants}
        self.engine, self.run_id, self.save = engine, run_id, save
        self.dirs, self.programs = dirs or {}, programs or []
        self.active = ""              # the variant whose setup is in force
        self.failed: dict[str, str] = {}

    def before(self, phase: Phase) -> str:
        """Make the phase's variant the one set up; "" when its phase may run, else why not."""
        name = phase.variant
        if name in self.failed:
            return self.failed[name]
        if name != self.active:
            self._teardown(self.active)
            self.active = name
            v = self.variants.get(name)
            if v is not None and v.setup:
                res = self._step(v, "setup")
                if not res.ok:
                    self.failed[name] = res.error
                    self._teardown(name)      # undo what the setup did before it failed
                    self.active = ""
        return self.failed.get(name, "")

    def finish(self) -> None:
        """After the last phase (or an interruption): tear down what is set up."""
        self._teardown(self.active)
        self.active = ""

    def _teardown(self, name: str) -> None:
        v = self.variants.get(name)
        if v is not None and v.teardown:
            self._step(v, "teardown")

    def _step(self, v: Variant, step: str) -> StepResult:
        # {node} is left for each node to fill in
        argvs = [[render(a, {**v.vars, "variant": v.name, "run": self.run_id, "node": "{node}"})
                  for a in argv] for argv in getattr(v, step)]
        expected = {n.name for n in self.engine.nodes} - set(self.engine.lost_nodes())
        done = self.engine.run_commands(RunCommands(
            commands=argvs, env=dict(v.env), timeout=timing("run.setup_timeout"),
            dirs=self.dirs, programs=self.programs))
        self.save(v.name, step, done)
        missing = sorted(expected - set(done))
        if missing:
            return StepResult(False, f"variant {v.name}: {step}: node {missing[0]} did not "
                                     "answer")
        for node, d in done.items():
            bad = first_failure(d)
            if bad:
                return StepResult(False, f"variant {v.name}: {step} failed on node {node}: "
                                         f"{bad}")
        return StepResult(True)


def first_failure(done: CommandsDone) -> str:
    """The first failed command of a node, in one line; "" when all succeeded."""
    for out in done.outputs:
        if out.timed_out:
            return f"`{' '.join(out.argv)}` timed out"
        if out.exit_status != 0:
            tail = (out.stderr or out.stdout or "").strip().splitlines()
            return f"`{' '.join(out.argv)}` exit status {out.exit_status}" + (
                f": {tail[-1][:200]}" if tail else "")
    return ""
