"""mem.stream's default array size: STREAM's rule ("each array must be at least 4 times the
size of the available cache memory") against the node's caches read from sysfs, each shared
instance once; `elements` still overrides; the record says the size and why. Counts only:
the topology is a fake sysfs tree, the arrays are never allocated."""
from __future__ import annotations

import pytest

from manybench.inventory.caches import cache_total, node_caches
from manybench.kernels import KERNELS, stream


def fake_sysfs(root, cpus: int, caches: list[tuple[int, str, str, str]]):
    """caches: (level, type, size, shared_cpu_list template with {c} for a private one)."""
    for c in range(cpus):
        for i, (level, kind, size, shared) in enumerate(caches):
            d = root / f"cpu{c}" / "cache" / f"index{i}"
            d.mkdir(parents=True)
            (d / "level").write_text(f"{level}\n")
            (d / "type").write_text(f"{kind}\n")
            (d / "size").write_text(f"{size}\n")
            (d / "shared_cpu_list").write_text(shared.format(c=c) + "\n")
    (root / "cpufreq").mkdir()   # not a cpu
    return str(root)


ZEN5_2CPU = [(1, "Data", "48K", "{c}"), (1, "Instruction", "32K", "{c}"),
             (2, "Unified", "1024K", "{c}"), (3, "Unified", "32768K", "0-1")]


def test_shared_cache_counted_once_instruction_caches_not_at_all(tmp_path):
    caches = node_caches(fake_sysfs(tmp_path, 2, ZEN5_2CPU))
    assert [(c.level, c.size, c.cpus) for c in caches] == [
        (1, 48 * 1024, (0,)), (1, 48 * 1024, (1,)), (2, 1024 ** 2, (0,)), (2, 1024 ** 2, (1,)),
        (3, 32 * 1024 ** 2, (0, 1))]
    assert cache_total(caches) == 2 * 48 * 1024 + 2 * 1024 ** 2 + 32 * 1024 ** 2


def test_default_elements_follow_streams_rule(tmp_path):
    caches = node_caches(fake_sysfs(tmp_path, 2, ZEN5_2CPU))
    n, why = stream.elements_of({}, caches)
    total = cache_total(caches)
    assert 8 * n >= 4 * total                # each array at least 4x the caches, LLC among them
    assert 8 * n >= 4 * 32 * 1024 ** 2
    assert n % 1_000_000 == 0 and 8 * (n - 1_000_000) < 4 * total   # the least whole million
    assert n == 18_000_000 and "STREAM's rule" in why and "L3 1 x 32768 KiB" in why


def test_two_sockets_sum_their_last_level_caches(tmp_path):
    # 2 packages x 4 cpus, each package one 40 MiB L3: STREAM's "two Xeon E5's" example
    two = [(2, "Unified", "2048K", "{c}"), (3, "Unified", "40960K", "0-3")]
    root = tmp_path / "a"
    for c in range(8):
        for i, (level, kind, size, shared) in enumerate(two):
            d = root / f"cpu{c}" / "cache" / f"index{i}"
            d.mkdir(parents=True)
            (d / "level").write_text(str(level))
            (d / "type").write_text(kind)
            (d / "size").write_text(size)
            (d / "shared_cpu_list").write_text(
                shared.format(c=c) if level < 3 else ("0-3" if c < 4 else "4-7"))
    caches = node_caches(str(root))
    assert sum(c.size for c in caches if c.level == 3) == 2 * 40 * 1024 ** 2
    n, _ = stream.elements_of({}, caches)
    assert 8 * n >= 4 * (8 * 2048 + 2 * 40960) * 1024


def test_small_caches_keep_streams_default(tmp_path):
    caches = node_caches(fake_sysfs(tmp_path, 1, [(2, "Unified", "512K", "0")]))
    n, why = stream.elements_of({}, caches)
    assert n == 10_000_000 and "STREAM's default" in why


def test_unknown_caches_keep_streams_default(tmp_path):
    assert node_caches(str(tmp_path / "none")) == ()
    assert stream.elements_of({}, ()) == (10_000_000, "STREAM's default (the node's caches "
                                                      "are not known)")


def test_elements_given_override_the_rule(tmp_path):
    caches = node_caches(fake_sysfs(tmp_path, 2, ZEN5_2CPU))
    assert stream.elements_of({"elements": 5000}, caches) == (5000, "elements given")


def test_record_says_the_size_and_why(tmp_path):
    extra = stream.sizing(18_000_000, "STREAM's rule: x")
    assert extra["stream_elements"] == 18_000_000
    assert extra["stream_array_bytes"] == 144_000_000
    assert extra["stream_sizing"].startswith("18,000,000 elements = 144.0 MB per array")
    names = {f.name for f in KERNELS["mem.stream"].facts}
    assert {"stream_sizing", "stream_elements", "stream_array_bytes"} <= names


def test_default_is_the_rule_not_a_fixed_count():
    assert KERNELS["mem.stream"].params["elements"].default is None


def test_a_run_records_its_sizing(tmp_path):
    pytest.importorskip("manybench._native")
    from builders import ctx_for, run_kernel
    r = run_kernel("mem.stream", ctx_for(tmp_path), {"elements": 2000, "ntimes": 2})
    assert r.status == "ok", r.error
    assert r.extra["stream_elements"] == 2000 and "elements given" in r.extra["stream_sizing"]


def test_inside_a_wrap_the_record_says_the_same(tmp_path):
    """mbkernel gets the elements; the record made from its result says why as a plain run's."""
    from builders import ctx_for
    sa = KERNELS["mem.stream"].standalone
    d = {"start_ns": 1, "end_ns": 2, "elapsed_ns": 1, "armed_ns": 0, "ops": 8, "bytes": 0,
         "errno": 0, "times_ns": [[1, 1]] * 4}
    given = sa.args(ctx_for(tmp_path), {"elements": 3000, "ntimes": 2})
    assert sa.finish(d, given).extra["stream_sizing"].endswith("elements given")
    n, why = stream.elements_of({})
    ruled = {"elements": n, "threads": 1, "ntimes": 2, "given": 0}
    assert sa.finish(d, ruled).extra["stream_sizing"].endswith(why)
