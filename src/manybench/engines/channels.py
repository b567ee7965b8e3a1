"""What every engine whose nodes run agents reached over channels shares: one round of
typed requests to the nodes at a time (engines/direct.Fanout: direct channels, a Dask
worker's relay), the phase's prepare, go and results, a variant's commands, snapshots, and
the nodes lost on the way.

A subclass brings the nodes up (start: the node list, each node's clock offset, the Start of
its agent, the channels added to self.fanout) and ends them (close, abort); it may watch its
nodes another way while a phase waits (_check_workers). DaskEngine (Dask finds, starts and
watches the nodes) and SimulatedEngine (nodes simulated in a few local processes, for the
coordinator's cost at scale) are the two.
"""
from __future__ import annotations

import time
from typing import Any, Callable

from ..results.contract import WarningKind
from .. import timebase
from ..config import timing
from ..node.arrays import SlotResults
from ..node.clock import Offset
from ..node.procs import open_files
from ..status import Status
from ..node.protocol import (CommandsDone, Connect, Connected, Finished, Member, Prepare,
                             Prepared, Request, Run, RunCommands, SnapshotTaken, TakeSnapshot,
                             WirePhase, encode_with, pack_value)
from ..node.wire_types import Result
from .base import Engine, EngineConfig, Node, Work, with_go
from .direct import Fanout, NodeLost
from .relays import form_groups, relay_clocks


class ChannelEngine(Engine):
    def __init__(self, fanout: Fanout, config: EngineConfig = EngineConfig()) -> None:
        super().__init__(config)
        self.fanout = fanout
        self.rows: dict[str, list] = {}     # telemetry received with results, not yet taken
        self.lost: dict[str, str] = {}      # node -> why
        self.pending = False                # a phase's Run sent, its replies not all in
        self.deadline: float | None = None
        self.work: Work = {}
        self.phase: WirePhase | None = None
        self.prepared = False
        self.failed: dict[str, dict[int, Result]] = {}
        self.done: dict[str, SlotResults] = {}
        self.checked = 0.0                  # monotonic time of the last _check_workers
        self.packed: dict[str, tuple[list, bytes]] = {}   # node -> its work, packed

    @staticmethod
    def open_files_for(nodes: int) -> None:
        """Raise this process's open-file limit for a socket (and an echo) per node, up to the
        hard limit: 1,000 nodes reached directly at start need more than the usual 1,024."""
        open_files(3 * nodes + 256)

    # -- relays and clocks --------------------------------------------------------------------
    def form_groups(self, on_own: dict[str, Member]) -> None:
        """Relays for the largest runs (engines/relays.py: when, and who relays whom) among
        the nodes on channels of their own (on_own: how a relay reaches each); how each node
        is reached goes in its inventory."""
        formed, left = form_groups(self.fanout, on_own, self.config.per_relay)
        by_name = {n.name: n for n in self.nodes}
        for relay, members in formed.items():
            by_name[relay].inventory["relay_for"] = members
            for m in members:
                by_name[m].inventory["channel"] = f"through relay {relay}"
        for m, why in left.items():
            self.add_warning(WarningKind.FANOUT, m, f"node {m} is reached on its own channel, not through a "
                      f"relay: {why}")

    def compose_clocks(self, measure: Callable[[Node], Offset]) -> None:
        """Re-estimate every live node's clock offset: relays measure their members (one
        round), the coordinator the relays and every other node (measure: Cristian, best of
        many exchanges); a member's offset is its relay's plus its own against the relay,
        and so is its bound."""
        through, lost = relay_clocks(self.fanout)
        for name, err in lost.items():
            self._lose(name, err)
        for n in self.nodes:
            if n.name in self.lost or n.name in through or n.name in self.fanout.via:
                continue
            try:
                o = measure(n)
            except OSError as e:
                self._lose(n.name, NodeLost(f"node {n.name} lost: clock echo failed: {e}"))
                continue
            # measured against the wall clock; offsets are from the coordinator's clock
            n.offset_ns, n.error_ns = o.offset_ns + timebase.stepped_ns(), o.error_ns
        by_name = {n.name: n for n in self.nodes}
        for name, relay in self.fanout.via.items():
            if name in self.lost:
                continue
            if relay in self.lost or name not in through:
                self._lose(name, NodeLost(f"node {name} lost: its relay {relay} was lost"))
                continue
            _, offset, error = through[name]
            node, r = by_name[name], by_name[relay]
            node.offset_ns, node.error_ns = r.offset_ns + offset, r.error_ns + error

    def _envelopes(self, reqs: dict[str, Request]) -> dict[str, bytes]:
        """The envelopes of requests that carry a node's assignments (Prepare, Run): the
        same list comes phase after phase of a placement (run/coordinator._work caches it),
        so it is packed once per node and reused while it holds the same assignments (most
        of a Run's bytes, and of the coordinator's time to send a go to 1,000 nodes)."""
        out = {}
        for n, req in reqs.items():
            work = getattr(req, "work", None)
            if type(work) is not list:
                continue
            got = self.packed.get(n)
            if got is None or got[0] != work:      # identity first, element by element
                got = self.packed[n] = (list(work), pack_value(work))
            out[n] = encode_with(req, {"work": got[1]})
        return out

    def _round(self, reqs: dict[str, Request]) -> dict[str, Any]:
        """One request to each node, direct or relayed: every reply (or why there is none)."""
        self.fanout.send(reqs)
        self.fanout.wait(None)
        return self.fanout.replies

    # -- one phase ----------------------------------------------------------------------
    def _prepare(self, phase: WirePhase, work: Work, tick: Callable[[], None]
                 ) -> dict[str, dict[int, dict]]:
        self.phase, self.work, self.done, self.failed = phase, work, {}, {}
        self.prepared = not with_go(phase)
        published: dict[str, dict[int, dict]] = {}
        if self.prepared:
            replies = self._live_round(lambda n: Prepare(phase, work[n]), tick)
            for n, r in replies.items():
                self.failed[n], published[n] = dict(r.failed), r.published
                self.notices += r.notices
        return published

    def _connect(self, peers: dict[int, dict], tick: Callable[[], None]) -> None:
        for n, r in self._live_round(lambda n: Connect(peers), tick).items():
            self.failed[n] = {**self.failed.get(n, {}), **dict(r.failed)}

    def _live_round(self, request: Callable[[str], Request],
                    tick: Callable[[], None]) -> dict[str, Prepared | Connected]:
        """One request to every live node of the phase, ticking the progress bar while the
        replies come; a node that fails to answer is lost. The answers of the others."""
        live = [n for n in self.work if n not in self.lost]
        if not live:
            return {}
        reqs = {n: request(n) for n in live}
        self.fanout.send(reqs, self._envelopes(reqs))
        while not self.fanout.wait(0.2):
            tick()
        out = {}
        for n, r in self.fanout.replies.items():
            if isinstance(r, Exception):
                self._lose(n, r)
            else:
                out[n] = r
                took = self.fanout.answered_at.get(n, self.fanout.sent_at) - self.fanout.sent_at
                self.waited[n] = self.waited.get(n, 0.0) + took
        return out

    def _go(self, t0_by_node: dict[str, int]) -> None:
        phase = None if self.prepared else self.phase
        reqs: dict[str, Request] = {n: Run(t0_by_node[n], self.work[n], phase)
                                    for n in self.work if n not in self.lost}
        self.deadline = None
        timeout = self.phase.task.timeout if self.phase else None
        if timeout is not None:
            lead = max(0.0, (self.t0_ns - timebase.now_ns()) / 1e9)
            # a node silent this long past the task's timeout is lost
            self.deadline = time.monotonic() + lead + timeout + timing("engines.lost_grace")
        self.fanout.send(reqs, self._envelopes(reqs))
        self.pending = bool(reqs)

    def poll(self, timeout: float) -> bool:
        if not self.pending:
            return True
        if not self.fanout.wait(timeout):
            if self.deadline is not None and time.monotonic() > self.deadline:
                for n in list(self.fanout.waiting):
                    self._lose(n, NodeLost(f"node {n} lost: no answer past the timeout"))
            # now and then, not every poll, ask whoever watches the nodes which are alive
            # (Dask: the scheduler's answer describes every worker, a large message at 64 nodes)
            elif time.monotonic() - self.checked >= timing("engines.check_workers"):
                self.checked = time.monotonic()
                self._check_workers()
            if not self.fanout.wait(0):
                return False
        self.pending = False
        for n, r in self.fanout.replies.items():
            if isinstance(r, Finished):
                self.answered[n] = timebase.of_mono(round(self.fanout.answered_at[n] * 1e9))
                self.done[n] = r.results
                self.notices += r.notices
                self.rows.setdefault(n, []).extend(r.telemetry)
            else:
                self._lose(n, r)
        return True

    # -- between phases: setup, teardown, provenance ------------------------------------
    def _every_live_node(self, req: Request) -> dict[str, Any]:
        """The same request to every live node at once; who does not answer is lost."""
        live = [n.name for n in self.nodes if n.name not in self.lost]
        out = {}
        for n, r in (self._round({n: req for n in live}) if live else {}).items():
            if isinstance(r, Exception):
                self._lose(n, r)
            else:
                out[n] = r
        return out

    def _run_commands(self, req: RunCommands) -> dict[str, CommandsDone]:
        return self._every_live_node(req)

    def _snapshot(self, dirs: list[str] | dict[str, str], programs: list[str]
                  ) -> dict[str, dict]:
        got = self._every_live_node(TakeSnapshot(dirs, list(programs)))
        return {n: r.data for n, r in got.items() if isinstance(r, SnapshotTaken)}

    def lost_nodes(self) -> dict[str, str]:
        return dict(self.lost)

    def _lose(self, node: str, err: BaseException) -> None:
        self.lost.setdefault(node, str(err) if isinstance(err, NodeLost) else f"node {node}: {err}")
        self.fanout.lose(node, err if isinstance(err, Exception) else NodeLost(str(err)))

    def _telemetry(self) -> dict[str, list]:
        out, self.rows = self.rows, {}
        return out

    def _results(self) -> dict[str, SlotResults | dict[int, Result]]:
        out: dict[str, SlotResults | dict[int, Result]] = {}
        for n, assigned in self.work.items():
            done = self.done.get(n)
            if done is not None and not self.failed.get(n) and len(done) == len(assigned):
                out[n] = done              # every slot answered its go: the arrays as sent
                continue
            got = {**self.failed.get(n, {}), **(dict(done) if done is not None else {})}
            for a in assigned:
                if a.place.slot not in got and n in self.lost:
                    got[a.place.slot] = Result(status=Status.LOST, error=self.lost[n])
            out[n] = got
        return out

    def _check_workers(self) -> None:
        """Lose the nodes known to be gone though their channels have not closed (Dask: its
        scheduler dropped their workers). Nothing to check by default."""
