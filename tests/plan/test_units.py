"""Sizes are read as fio reads them; durations as people write them."""
from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from manybench.units import parse_duration, parse_size

K, M, G = 1024, 1024**2, 1024**3


@pytest.mark.parametrize("text,want", [
    ("4k", 4 * K), ("4kb", 4 * K), ("4KB", 4 * K), ("4kB", 4 * K), ("4K", 4 * K),
    ("4KiB", 4 * K), ("4kib", 4 * K), ("1M", M), ("1mb", M), ("1MiB", M), ("2g", 2 * G),
    ("1.5k", 1536), ("512", 512), ("512b", 512), ("512B", 512), (" 64 KiB ", 64 * K),
    (4096, 4096), (0, 0)])
def test_sizes_are_powers_of_1024_whatever_the_case_or_b(text, want):
    assert parse_size(text) == want


@pytest.mark.parametrize("text", ["4kk", "k", "4 x", "1.1k", "-1", "4kbb", "4ib", True, None,
                                  -5, 4.5])
def test_nonsense_sizes_are_refused(text):
    with pytest.raises(ValueError):
        parse_size(text)


def test_never_silently_decimal():
    # what SI would read as 4000 or 10^6 is 4096 and 2^20 here, as in fio
    assert {parse_size(t) for t in ("4kB", "4KB", "4kb")} == {4096}
    assert parse_size("1MB") == 2**20


@pytest.mark.e2e
@pytest.mark.parametrize("text", ["4k", "4kb", "4KB", "64kB", "1m", "1MB"])
def test_sizes_agree_with_fio(tmp_path, text):
    """fio (kb_base = 1024, its default) moves exactly as many bytes as we read."""
    if not shutil.which("fio"):
        pytest.skip("fio is not installed (Debian package fio)")
    out = subprocess.run(["fio", "--name=x", f"--filename={tmp_path / 'f'}", "--rw=write",
                          f"--size={text}", "--bs=4k", "--output-format=json"],
                         capture_output=True, text=True, check=True).stdout
    moved = json.loads(out[out.index("{"):])["jobs"][0]["write"]["io_bytes"]
    assert moved == parse_size(text)


@pytest.mark.parametrize("text,want", [("10s", 10.0), ("250ms", 0.25), ("2m", 120.0),
                                       ("1h", 3600.0), ("5us", 5e-6), (3, 3.0), ("1.5", 1.5)])
def test_durations(text, want):
    assert parse_duration(text) == pytest.approx(want)
