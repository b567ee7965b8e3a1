"""The OSU and IMB parsers on real outputs (tests/fixtures/osu, tests/fixtures/imb: README
there says which versions and commands made them); expected values read from the files."""
from __future__ import annotations

import os

import pytest

from suite_paths import TESTS

from manybench.parsers import PARSERS, ParseError, parse_output

HERE = str(TESTS)


def _read(kind: str, name: str) -> str:
    with open(os.path.join(HERE, "fixtures", kind, name)) as f:
        return f.read()


def _series(tables: list, name: str) -> dict[float, float]:
    [s] = [t for t in tables if t.name == name]
    return dict(s.points)


def test_registered() -> None:
    assert "osu" in PARSERS and "imb" in PARSERS


def test_osu_latency_53_table_from_zero_bytes() -> None:
    m, t = parse_output("osu", _read("osu", "osu_latency_5.3_openmpi_np2.txt"), "")
    assert m["latency_us"] == 0.15 and m["latency_max_size_us"] == 359.36
    assert (m["min_size_bytes"], m["max_size_bytes"], m["sizes"]) == (0, 4194304, 24)
    assert m["version"] == "5.3"
    [s] = t
    assert (s.name, s.unit, s.x_unit) == ("osu_latency", "us", "bytes")
    pts = dict(s.points)
    assert pts[0] == 0.15 and pts[8192] == 2.52 and pts[1048576] == 81.33


def test_osu_bw_peak_is_not_the_last_row() -> None:
    text = _read("osu", "osu_bw_5.3_openmpi_np2.txt")
    m, t = parse_output("osu", text, "")
    assert m["bandwidth_mb_s"] == 13273.27              # 2097152 bytes
    assert m["bandwidth_max_size_mb_s"] == 13223.59     # 4194304 bytes
    assert _series(t, "osu_bw")[2097152] == 13273.27
    assert t[0].unit == "MB/s" and "latency_us" not in m


def test_osu_bibw_74_datatype_line() -> None:
    m, t = parse_output("osu", _read("osu", "osu_bibw_7.4_mpich_np2.txt"), "")
    assert t[0].name == "osu_bibw" and _series(t, "osu_bibw")[1] == 17.31
    assert m["version"] == "7.4" and m["sizes"] == 17


@pytest.mark.parametrize("name,test,first,last", [
    ("osu_bcast_5.3_openmpi_np2.txt", "osu_bcast", 0.15, 6.58),
    ("osu_allgather_7.4_mpich_np2.txt", "osu_allgather", 0.35, 15.14),
    ("osu_allreduce_7.4_mpich_np2.txt", "osu_allreduce", 0.49, 26.90),
    ("osu_alltoall_5.3_openmpi_np2.txt", "osu_alltoall", 0.20, 7.92),
])
def test_osu_collectives(name: str, test: str, first: float, last: float) -> None:
    m, t = parse_output("osu", _read("osu", name), "")
    assert [s.name for s in t] == [test]
    assert m["latency_us"] == first and m["latency_max_size_us"] == last


def test_osu_full_columns_and_tail_latencies() -> None:
    _, t = parse_output("osu", _read("osu", "osu_allreduce-f_5.3_openmpi_np2.txt"), "")
    assert [s.name for s in t] == ["osu_allreduce", "osu_allreduce.min", "osu_allreduce.max",
                                   "osu_allreduce.iterations"]
    assert _series(t, "osu_allreduce.max")[8192] == 5.71
    assert _series(t, "osu_allreduce.iterations")[65536] == 100
    assert t[3].unit == "count"
    _, t = parse_output("osu", _read("osu", "osu_latency-z_7.4_mpich_np2.txt"), "")
    assert [s.name for s in t] == ["osu_latency", "osu_latency.p50", "osu_latency.p90",
                                   "osu_latency.p99"]
    assert _series(t, "osu_latency.p99")[1024] == 0.48


def test_osu_two_tests_in_one_output() -> None:
    text = (_read("osu", "osu_latency_7.4_mpich_np2.txt")
            + _read("osu", "osu_bw_7.4_mpich_np2.txt"))
    m, t = parse_output("osu", text, "")
    assert m["latency_us"] == 0.18 and m["osu_bw_bandwidth_mb_s"] == 10501.54
    assert [s.name for s in t] == ["osu_latency", "osu_bw"]


def test_osu_refuses_other_output() -> None:
    with pytest.raises(ParseError, match="OSU MPI"):
        PARSERS["osu"]("Usage: osu_latency [options]\n", "")
    with pytest.raises(ParseError, match="no size table"):
        PARSERS["osu"]("# OSU MPI Latency Test v7.4\n# Datatype: MPI_CHAR.\n", "")


def test_imb_openmpi_every_benchmark() -> None:
    m, t = parse_output("imb", _read("imb", "IMB-MPI1_2021.11_openmpi_np2.txt"), "")
    assert m["version"] == "2021.11"
    assert m["pingpong_latency_us"] == 0.12 and m["pingpong_bandwidth_mb_s"] == 9906.16
    assert (m["bcast_t_min_us"], m["bcast_t_max_us"], m["bcast_t_avg_us"]) == (0.07, 0.24, 0.16)
    assert m["allreduce_t_avg_us"] == 0.24          # 4 bytes: the smallest above 0
    assert m["alltoall_processes"] == 2
    names = {s.name for s in t}
    for bench in ("Bcast", "Allgather", "Allreduce", "Alltoall"):
        assert {f"{bench}.t_min", f"{bench}.t_max", f"{bench}.t_avg",
                f"{bench}.repetitions"} <= names
    assert _series(t, "PingPong.mbytes_s")[65536] == 9906.16
    assert _series(t, "PingPong.repetitions")[65536] == 640
    assert _series(t, "Allgather.t_avg")[4096] == 2.85


def test_imb_mpich() -> None:
    m, t = parse_output("imb", _read("imb", "IMB-MPI1_2021.11_mpich_np2.txt"), "")
    assert m["alltoall_t_avg_max_size_us"] == 9.05
    assert _series(t, "Alltoall.t_max")[16384] == 7.13


def test_imb_several_process_counts() -> None:
    m, t = parse_output("imb", _read("imb", "IMB-MPI1_2021.11_openmpi_np3.txt"), "")
    assert m["allreduce_processes"] == 3 and m["allreduce_t_avg_us"] == 3.72
    assert _series(t, "Allreduce.t_avg")[512] == 6.21
    assert _series(t, "Allreduce.t_avg[np=2]")[512] == 3.50
    assert m["pingpong_processes"] == 2 and m["pingpong_latency_us"] == 1.96


def test_imb_refuses_other_output() -> None:
    with pytest.raises(ParseError, match="Benchmarking"):
        PARSERS["imb"]("# OSU MPI Latency Test v7.4\n", "")


@pytest.mark.parametrize("parser", sorted(PARSERS))
def test_every_other_parser_refuses_osu_and_imb(parser: str) -> None:
    for kind in ("osu", "imb"):
        if parser == kind:
            continue
        for name in sorted(os.listdir(os.path.join(HERE, "fixtures", kind))):
            if name.endswith(".md"):
                continue
            out = _read(kind, name)
            with pytest.raises(ParseError):
                PARSERS[parser](out, out)
