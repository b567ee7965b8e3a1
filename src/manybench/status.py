"""A record's status, named once: what became of one slot's work in one phase.

A str enum, as dask/distributed's Status: each member is its text, equal to it and stored
and sent as it, so stored runs, the wire and code comparing with the text keep working.
The run's and a phase's statuses and the warning kinds are results/contract.py's.
"""
from __future__ import annotations

from enum import Enum


class TextEnum(str, Enum):
    """A str enum shown as its text: "ok", not "Status.OK", in messages, f-strings and JSON."""
    __str__ = str.__str__
    __format__ = str.__format__


class Status(TextEnum):
    """A record's (the records table's `status`)."""
    OK = "ok"              # the work ran: its figures count
    ERROR = "error"        # the kernel or its command failed (`error` says why)
    TIMEOUT = "timeout"    # killed after the task's timeout
    LOST = "lost"          # its node stopped answering: no result came back


# OK's plain text, for comparisons over many records or slots (`status.count(OK_TEXT)` over
# a phase's 64,000, `r.status == OK_TEXT` over a run's records): statuses decoded from the
# wire or read from the store are plain str, and a plain str compares with them on str's
# fast path (an interned one by identity). The member, a str subclass, takes the generic one
# (count: 35x slower on interned text, 25% on decoded), and `Status.OK` is an attribute
# lookup on the enum's class (Python 3.11: 5x the cost of the comparison itself)
OK_TEXT: str = Status.OK.value
