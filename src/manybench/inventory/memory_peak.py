"""A node's populated memory channels and their transfer rate, from SMBIOS type 17 records.

Pure (bytes and dicts in, numbers out); environment.py reads /sys/firmware/dmi/entries/17-*/raw,
peaks.py turns channels x MT/s into mem_bw_mb_s.
"""
from __future__ import annotations

import re
from typing import Any


def parse_dmi_memory_device(raw: bytes) -> dict[str, Any] | None:
    """One SMBIOS Memory Device (type 17) structure: locator, bank, size_mb, speed_mt_s,
    configured_mt_s; None when it is not one or the slot is empty."""
    if len(raw) < 0x17 or raw[0] != 17:
        return None
    length = raw[1]
    strings = raw[length:].split(b"\0")

    def string(offset: int) -> str:
        i = raw[offset] if offset < length else 0
        return strings[i - 1].decode("ascii", "replace").strip() if 0 < i <= len(strings) else ""

    def word(offset: int) -> int:
        return int.from_bytes(raw[offset:offset + 2], "little") if offset + 2 <= length else 0

    def dword(offset: int) -> int:
        return int.from_bytes(raw[offset:offset + 4], "little") if offset + 4 <= length else 0

    size = word(0x0C)
    if size in (0, 0xFFFF):
        return None                          # no module installed, or unknown size
    if size == 0x7FFF:
        size_mb = dword(0x1C) & 0x7FFFFFFF
    else:
        size_mb = (size & 0x7FFF) // 1024 if size & 0x8000 else size
    speed, conf = word(0x15), word(0x20)
    if speed == 0xFFFF:
        speed = dword(0x54)
    if conf == 0xFFFF:
        conf = dword(0x58)
    return {"locator": string(0x10), "bank": string(0x11), "size_mb": size_mb,
            "speed_mt_s": speed or None, "configured_mt_s": conf or None}


_CHANNEL = re.compile(r"(?:channel|chan)[\s_-]*([A-Z0-9]+)", re.IGNORECASE)
_SOCKET = re.compile(r"(?:cpu|proc|socket|node|p)[\s_-]*(\d+)", re.IGNORECASE)
_DIMM_LETTER = re.compile(r"DIMM[\s_-]*([A-Z])\d", re.IGNORECASE)


def memory_channels(dimms: list[dict[str, Any]]) -> tuple[int | None, int | None, str]:
    """(populated channels, transfer rate MT/s, how known) from the installed DIMMs.

    A channel is counted only when the locators name it ("..._Channel2_..." in the bank
    locator, or "P1-DIMMA1"-style slot names: socket 1, channel A); several DIMMs on one
    channel share its bandwidth. The rate is the slowest configured speed (else rated speed).
    Unnamed channels give None: memory bandwidth is then unknown, not guessed.
    """
    if not dimms:
        return None, None, "SMBIOS memory devices not readable (root only; absent in many VMs)"
    rates = [d.get("configured_mt_s") or d.get("speed_mt_s") for d in dimms]
    rate = min(r for r in rates if r) if any(rates) else None
    channels = set()
    for d in dimms:
        text = f"{d.get('bank', '')} {d.get('locator', '')}"
        sock = _SOCKET.search(text)
        ch = _CHANNEL.search(text) or _DIMM_LETTER.search(d.get("locator", ""))
        if not ch:
            return None, rate, f"{len(dimms)} DIMMs, but their locators do not name channels"
        channels.add((sock.group(1) if sock else "", ch.group(1).upper()))
    return len(channels), rate, f"{len(dimms)} DIMMs on {len(channels)} channels (SMBIOS locators)"
