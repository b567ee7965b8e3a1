"""The phase loop: place, prepare, pick T0, release, collect, store — one phase at a time.

Every finished phase is committed before the next starts, so a crash, kill or Ctrl-C keeps
everything measured so far; the run row says how the run ended.
"""
from __future__ import annotations

import os
import secrets
import signal
import sys
import time
from dataclasses import dataclass

from . import environment
from .clock import Scheduler, now_ns
from .engines.base import Engine, Node
from .kernels import Result
from .model import Phase, Plan
from .placement import SlotPlace, assign, oversubscribed
from .progress import RunProgress
from .record import Record
from .store import Store

EXIT_OK, EXIT_FAILED, EXIT_INTERRUPTED = 0, 1, 130


def new_run_id(name: str) -> str:
    """Sortable and unique: plan name, UTC time, a few random hex digits."""
    return f"{name}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{secrets.token_hex(2)}"


@dataclass
class Outcome:
    run_id: str
    status: str          # finished | failed | interrupted | aborted
    exit_code: int
    failed: int          # records whose status is not ok


def _record(run: str, phase: Phase, node: Node, place: SlotPlace, rank: int, t0: int,
            res: Result) -> Record:
    """A slot's result as a record, its stamps moved into the coordinator's timebase."""
    off = node.offset_ns
    metrics = dict(res.metrics)
    metrics.update(clock_offset_ns=off, clock_error_ns=node.error_ns)
    extra = dict(res.extra)
    if res.armed_ns:
        extra["armed_ns"] = res.armed_ns - off
    extra["rank"] = rank
    return Record(
        run=run, phase=phase.index, task=phase.task.name, kernel=phase.kernel,
        variant=phase.variant, rep=phase.rep, workers=phase.workers, node=node.name,
        slot=place.slot, cpu=place.cpu, t0_ns=t0,
        start_ns=res.start_ns - off if res.start_ns else 0,
        end_ns=res.end_ns - off if res.end_ns else 0,
        elapsed_s=res.elapsed_ns / 1e9, ops=res.ops, bytes=res.bytes, status=res.status,
        error=res.error, params={k: v for k, v in phase.params.items() if v is not None},
        metrics=metrics, hist=res.hist, extra=extra)


class Coordinator:
    def __init__(self, plan: Plan, phases: list[Phase], outdir: str, engine: Engine,
                 argv: list[str], slots: int | None = None, progress: bool | None = None) -> None:
        self.plan, self.phases, self.outdir, self.engine = plan, phases, outdir, engine
        self.argv, self.slots, self.show_progress = argv, slots, progress
        self.scheduler = Scheduler()
        self.failed = 0
        self.current: tuple | None = None

    def slot_count(self) -> int:
        """This machine: the plan's largest worker count unless `slots` fixes it."""
        return self.slots or self.plan.slots or max((p.workers for p in self.phases), default=1)

    def run(self) -> Outcome:
        os.makedirs(self.outdir, exist_ok=True)
        run_id = new_run_id(self.plan.name)
        store = Store(self.outdir)
        default_dir = self.plan.scratch or os.path.join(os.path.abspath(self.outdir), "scratch")
        os.makedirs(default_dir, exist_ok=True)
        nslots = self.slot_count()
        notes = {"slots": nslots, "phases": len(self.phases)}
        store.begin_run(run_id, self.plan, self.argv, environment.collect(), notes)
        status, code = "aborted", EXIT_FAILED
        previous = signal.signal(signal.SIGTERM, _raise_interrupt)
        try:
            nodes = self.engine.start(run_id, nslots, default_dir)
            cpus = sum(len(n.cpus) for n in nodes)
            notes.update(nodes=[n.name for n in nodes], cpus=cpus,
                         oversubscribed=any(oversubscribed(n.slots, n.cpus) for n in nodes))
            store.update_notes(run_id, notes)
            if notes["oversubscribed"]:
                print(f"note: {nslots} slots on {cpus} cpus: oversubscribed, slots sleep until "
                      "T0 without spinning", file=sys.stderr)
            with RunProgress(len(self.phases), self.show_progress) as bar:
                for phase in self.phases:
                    bar.point(phase.label)
                    t0, records = self._run_phase(run_id, phase, nodes, bar)
                    store.write_phase(run_id, phase, t0, records)
                    self.failed += sum(r.status != "ok" for r in records)
                    bar.advance()
            status = "finished" if self.failed == 0 else "failed"
            code = EXIT_OK if self.failed == 0 else EXIT_FAILED
        except KeyboardInterrupt:
            status, code = "interrupted", EXIT_INTERRUPTED
            self._save_interrupted(store, run_id)
            self.engine.abort(self.plan.keep)
        except BaseException:
            self.engine.abort(self.plan.keep)
            store.end_run(run_id, "aborted")
            store.close()
            raise
        else:
            self.engine.close(self.plan.keep)
        finally:
            signal.signal(signal.SIGTERM, previous)
        store.end_run(run_id, status)
        store.close()
        return Outcome(run_id, status, code, self.failed)

    def _run_phase(self, run_id: str, phase: Phase, nodes: list[Node],
                   bar: RunProgress) -> tuple[int, list[Record]]:
        capacity = {n.name: n.slots for n in nodes}
        work = assign(phase.workers, phase.order, phase.pin, capacity,
                      {n.name: n.cpus for n in nodes})
        prepared = now_ns()
        self.engine.prepare(phase, work, bar.tick)
        if not self.scheduler.samples:
            # no go has been timed yet: a round trip to every slot is the best first guess
            self.scheduler.samples.append(now_ns() - prepared)
        t0 = self.scheduler.next_t0()
        self.current = (phase, nodes, work, t0)   # what Ctrl-C must still save
        sent = now_ns()
        self.engine.go(t0)
        while not self.engine.poll(0.2):
            bar.tick()
        results = self.engine.results()
        armed = [r.armed_ns - n.offset_ns for n in nodes
                 for r in results.get(n.name, {}).values() if r.armed_ns and r.status == "ok"]
        self.scheduler.observe(sent, t0, armed)
        records = self._records(run_id, phase, nodes, work, t0, results)
        self.current = None
        return t0, records

    def _records(self, run_id: str, phase: Phase, nodes: list[Node],
                 work: dict[str, list[tuple[SlotPlace, int]]], t0: int,
                 results: dict[str, dict[int, Result]], missing: str = "") -> list[Record]:
        out = []
        for node in nodes:
            for place, rank in work.get(node.name, []):
                res = results.get(node.name, {}).get(place.slot)
                if res is None:
                    res = Result(status="error", error=missing or "no result")
                out.append(_record(run_id, phase, node, place, rank, t0, res))
        return out

    def _save_interrupted(self, store: Store, run_id: str) -> None:
        """Keep what the interrupted phase measured; slots without a result say so."""
        if self.current is None:   # interrupted before T0 was set: nothing was measured
            return
        phase, nodes, work, t0 = self.current
        try:
            results = self.engine.results()
        except Exception:
            results = {}
        records = self._records(run_id, phase, nodes, work, t0, results, "interrupted")
        store.write_phase(run_id, phase, t0, records, status="interrupted")
        self.failed += sum(r.status != "ok" for r in records)


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
