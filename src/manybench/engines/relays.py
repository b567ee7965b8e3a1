"""Which nodes relay which (issue 21: fan-out for the largest runs), and the rounds that make the
groups and measure their clocks.

Above AUTO_ABOVE nodes reached directly, the coordinator no longer talks to each node: the
nodes, in name order, are cut into groups of one relay and up to ceil(sqrt(N)) members, so
the coordinator handles about sqrt(N) channels and each relay about sqrt(N) (1,000 nodes: 31
relays of up to 32 members). `run --fanout N` sets the members per relay (2 and up), `off`
none, `auto` the above. Only nodes on direct channels group; a member its relay cannot reach
stays on its own channel, and the run is told why (a `fanout` warning).

Clocks: each relay measures its members' offsets against its own clock (SyncClocks); the
coordinator measures only relays and ungrouped nodes, and a member's offset against the
coordinator is its relay's plus its own against the relay, its error bound the sum of both.
"""
from __future__ import annotations

import math

from ..node.protocol import Clocks, Group, Grouped, Member, SyncClocks
from .direct import Fanout, NodeLost

AUTO_ABOVE = 128        # nodes: more than this and relays are chosen automatically


def per_relay_for(nodes: int, per_relay: int | None) -> int:
    """Members per relay for a run of `nodes` direct nodes: per_relay if given (0: no relays),
    else ceil(sqrt(nodes)) above AUTO_ABOVE nodes and none below."""
    if per_relay is not None:
        return per_relay
    return math.isqrt(nodes - 1) + 1 if nodes > AUTO_ABOVE else 0


def plan_groups(nodes: list[str], per_relay: int) -> dict[str, list[str]]:
    """relay -> its members: the nodes in order, cut into runs of one relay and per_relay
    members (a last node alone is no group)."""
    if per_relay < 1:
        return {}
    size = per_relay + 1
    chunks = (nodes[i:i + size] for i in range(0, len(nodes), size))
    return {c[0]: c[1:] for c in chunks if len(c) > 1}


def form_groups(fanout: Fanout, members: dict[str, Member], per_relay: int | None
                ) -> tuple[dict[str, list[str]], dict[str, str]]:
    """Make the groups among nodes on direct channels (members: where each one's channel
    and echo are): the groups formed, and every node left on its own channel with why."""
    planned = plan_groups(sorted(members), per_relay_for(len(members), per_relay))
    if not planned:
        return {}, {}
    fanout.send({r: Group({m: members[m] for m in ms}) for r, ms in planned.items()})
    fanout.wait(None)
    formed, left = {}, {}
    for relay, ms in planned.items():
        got = fanout.replies.get(relay)
        if not isinstance(got, Grouped):
            left.update({m: f"its relay {relay} could not form its group: {got}" for m in ms})
            continue
        left.update(got.failed)
        formed[relay] = [m for m in ms if m not in got.failed]
        fanout.group(relay, formed[relay])
    return {r: ms for r, ms in formed.items() if ms}, left


def relay_clocks(fanout: Fanout) -> tuple[dict[str, tuple[str, int, int]], dict[str, Exception]]:
    """One SyncClocks round to every live relay: member -> (its relay, its offset against
    the relay, bound), and every node lost on the way (a relay's error: the relay; a
    member whose echo failed: the member)."""
    relays = [r for r in fanout.groups if r in fanout.links]
    if not relays:
        return {}, {}
    fanout.send({r: SyncClocks() for r in relays})
    fanout.wait(None)
    measured, lost = {}, {}
    for relay, got in fanout.replies.items():
        if not isinstance(got, Clocks):
            lost[relay] = got if isinstance(got, Exception) else NodeLost(
                f"node {relay} lost: it answered SyncClocks with {type(got).__name__}")
            continue
        for m, (offset, error) in got.offsets.items():
            measured[m] = (relay, offset, error)
        for m, why in got.lost.items():
            lost[m] = NodeLost(f"node {m} lost: {why} (through relay {relay})")
    return measured, lost
