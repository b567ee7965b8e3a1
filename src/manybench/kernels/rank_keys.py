"""A parallel task's job secrets, derived from the run's key so that only the run's slots
know them, and the checks that use them.

The agent holds the run's secret (Start.secret; the local engine draws one too) and hands
its slots a key derived from it (run_key: an HMAC with a label, so neither a slot nor a rank
ever holds the secret itself). Every slot of a job derives the same three values from that
key and the job's run, phase and number, on whatever node it runs:

  name   the job's socket prefix, "manybench.<32 hex>": its slots listen on "\\0<name>.<rank>"
         in the abstract namespace. Nobody without the key can bind it first; it still shows
         in /proc/net/unix once bound, so the slot also checks who connects (rank_link.py).
  token  what each rank says in its hello, given to the ranks through the launcher's
         environment by name only (readable by their owner, /proc/PID/environ), never in an
         argv (readable by everyone, /proc/PID/cmdline).
  abort  the key of the job's abort messages (the job's first slot telling the others that
         the job will not start): a line carries its HMAC, never the key.
"""
from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

RUN_LABEL = b"manybench rank link"
NAME_HEX = 32      # 128 bits of the name: not guessable


def run_key(secret: str) -> str:
    """The slots' key for a run with this secret (a fresh random one when the run has none:
    then only jobs inside this agent's node can agree on their values)."""
    if not secret:
        secret = secrets.token_hex(16)
    return hmac.new(secret.encode(), RUN_LABEL, hashlib.sha256).hexdigest()


def _mac(key: bytes, data: bytes) -> str:
    return hmac.new(key, data, hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class JobKeys:
    name: str      # the job's socket prefix
    token: str     # its ranks' proof of membership
    abort: bytes   # its abort messages' key

    @classmethod
    def of(cls, key: str, run: str, phase: int, job: int) -> JobKeys:
        """The job's values from the run's slot key (SlotContext.job_key)."""
        if not key:
            raise ValueError("no key for the job's rank links (SlotContext.job_key)")
        k = key.encode()
        where = f"{run}\0{phase}\0{job}".encode()
        return cls(name="manybench." + _mac(k, b"name\0" + where)[:NAME_HEX],
                   token=_mac(k, b"token\0" + where),
                   abort=bytes.fromhex(_mac(k, b"abort\0" + where)))

    def token_ok(self, said: bytes) -> bool:
        """Whether a rank's hello holds the job's token (compared in constant time)."""
        return hmac.compare_digest(said, self.token.encode())

    def abort_line(self, why: str) -> bytes:
        """The line that tells a slot of the job that it will not start: "abort MAC WHY"."""
        text = why.replace("\n", " ").replace("\r", " ").encode(errors="replace")
        return b"abort " + _mac(self.abort, text).encode() + b" " + text + b"\n"

    def abort_why(self, line: bytes) -> str | None:
        """WHY of an "abort MAC WHY" line (no newline) whose MAC is the job's, else None."""
        parts = line.split(b" ", 2)
        if len(parts) < 2 or parts[0] != b"abort":
            return None
        text = parts[2] if len(parts) > 2 else b""
        if not hmac.compare_digest(parts[1], _mac(self.abort, text).encode()):
            return None
        return text.decode(errors="replace")


def phase_token(key: str, use: str, run: str, phase: int, *parts: object) -> bytes:
    """What a phase's slots that talk to each other (a net pair, an io group) prove to each
    other before T0: an HMAC under the run's slot key (SlotContext.job_key), so no other
    user can join the pair and feed the timed loop; 32 bytes."""
    if not key:
        raise ValueError("no key for the phase's peers (SlotContext.job_key)")
    where = "\0".join(map(str, (use, run, phase, *parts))).encode()
    return hmac.new(key.encode(), b"peers\0" + where, hashlib.sha256).digest()

