"""The connections a slot's listening socket takes (a rank's socket, an abort port), heard
side by side without waiting on any: each gets mpi.doorway_hello (config/) and LINE_MAX for
its first line, PEERS_MAX at once, so a silent, slow or endless peer holds nothing and is
dropped. What a first line means is the caller's to judge (rank_link.py).

Also what a slot knows of a Unix peer from the kernel: its uid and pid (SO_PEERCRED, taken
at its connect, not from anything it says) and whether it descends from a process.
"""
from __future__ import annotations

import os
import socket
import struct
import time
from dataclasses import dataclass
from typing import Callable

from ..config import timing

LINE_MAX = 4096     # a first line longer than this is no peer of ours (mbrank.c's LINE)
PEERS_MAX = 32      # peers heard at once: the oldest is dropped for a new one
ANCESTRY_MAX = 64   # parents followed up from a process looking for an ancestor
_CREDS = struct.Struct("3i")


@dataclass
class Peer:
    sock: socket.socket
    until: float        # monotonic: when it must have said its first line
    pid: int = 0        # from SO_PEERCRED (Unix sockets), else 0
    buf: bytes = b""    # what it said after its first line


def same_user(conn: socket.socket) -> int | None:
    """A Unix peer's pid when it runs as this process's user (its effective uid at its
    connect, from the kernel), else None."""
    pid, uid, _ = _CREDS.unpack(conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                _CREDS.size))
    return pid if uid == os.geteuid() else None


def anyone(conn: socket.socket) -> int | None:
    return 0


def parent(pid: int) -> int:
    """A process's parent pid (/proc/<pid>/stat); 0 when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def descends(pid: int, ancestor: int) -> bool:
    """Whether process `pid` descends from process `ancestor` (> 1)."""
    if ancestor <= 1:
        return False
    for _ in range(ANCESTRY_MAX):
        pid = parent(pid)
        if pid == ancestor:
            return True
        if pid <= 1:
            return False
    return False


class Doorway:
    def __init__(self, server: socket.socket,
                 admit: Callable[[socket.socket], int | None] = anyone) -> None:
        """server: listening; admit(conn): the peer's pid when it may speak, None when it is
        closed unread (same_user for a rank's socket)."""
        server.setblocking(False)
        self.server = server
        self.admit = admit
        self.peers: list[Peer] = []    # oldest first
        self.refused = 0               # peers closed unread, unheard or for what they said

    def socks(self) -> list[socket.socket]:
        """What to select on: the listening socket and every peer still to be heard."""
        return [self.server, *(p.sock for p in self.peers)]

    def heard(self, ready: list) -> list[tuple[Peer, bytes]]:
        """Take the new connections and what the peers in `ready` (from a select on socks())
        said: each peer whose first line is complete, with it (no newline), leaves the
        doorway (its socket is the caller's); peers past their time are dropped."""
        now = time.monotonic()
        if self.server in ready:
            self._accept(now)
        out = []
        for peer in list(self.peers):
            if peer.sock in ready:
                try:
                    chunk = peer.sock.recv(LINE_MAX)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    chunk = b""
                if not chunk:
                    self._drop(peer)
                    continue
                peer.buf += chunk
                if b"\n" in peer.buf:
                    self.peers.remove(peer)
                    line, _, peer.buf = peer.buf.partition(b"\n")
                    out.append((peer, line))
                    continue
            if now >= peer.until or len(peer.buf) >= LINE_MAX:
                self._drop(peer)
        return out

    def _accept(self, now: float) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:       # none left (EAGAIN), or no descriptor for one
                return
            pid = self.admit(conn)
            if pid is None:
                conn.close()
                self.refused += 1
                continue
            conn.setblocking(False)
            if len(self.peers) >= PEERS_MAX:
                self._drop(self.peers[0])
            # a peer's time from its connect to its first line: libmbrank takes
            # microseconds, but a rank starved of cpu (a node's ranks busy-polling in
            # MPI_Init) may take seconds; a silent peer holds only a place among PEERS_MAX
            self.peers.append(Peer(conn, now + timing("mpi.doorway_hello"), pid))

    def refuse(self, peer: Peer, why: bytes = b"") -> None:
        """Close a peer heard and not taken, telling it `why` (a line) when given."""
        if why:
            try:
                peer.sock.send(why, socket.MSG_DONTWAIT | socket.MSG_NOSIGNAL)
            except OSError:
                pass
        peer.sock.close()
        self.refused += 1

    def _drop(self, peer: Peer) -> None:
        self.peers.remove(peer)
        self.refuse(peer)

    def close(self) -> None:
        """Close every peer still to be heard (not the listening socket)."""
        for peer in self.peers:
            peer.sock.close()
        self.peers = []
