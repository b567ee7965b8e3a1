"""Text from outside (what a command printed, what a plan or a node named) shown on a terminal
as text, never as control: its control characters are written as escapes (ESC as `\\x1b`),
so a command's `ESC ] 0; title BEL` cannot set the window's title nor `ESC [2J` clear the
screen. Newlines and tabs are kept (they lay out, they do not command).

Applied where text leaves for a terminal: `echo` for the command line's messages, and
report/terminal.py's view (every report, `compare`) and run/progress.py's line. Stored data,
JSON and Parquet keep the text as it was; the HTML report escapes for HTML.
"""
from __future__ import annotations

import re

import click

# C0 controls but newline and tab, DEL and C1 (0x9b is a CSI to some terminals), the
# bidirectional controls (Unicode's Bidi_Control: they reorder what is shown, "Trojan
# source"), and lone surrogates (bytes that were no UTF-8: no terminal encoding takes them)
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e"
                      "\u2066-\u2069\ud800-\udfff]")


def _escape(m: re.Match) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def printable(text: str) -> str:
    """text with its control characters written as escapes (`\\x1b`, `\\u202e`)."""
    return _CONTROL.sub(_escape, text)


def echo(message: str = "", err: bool = False, nl: bool = True) -> None:
    """click.echo of a message that may hold text from outside, escaped."""
    click.echo(printable(message), err=err, nl=nl)
