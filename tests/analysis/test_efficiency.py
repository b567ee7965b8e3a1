"""Peaks (flops per cycle, clocks, memory, overrides) and efficiency / share on synthetic data."""
from __future__ import annotations

import struct

import pytest

from manybench.inventory import cpu_peak as C
from manybench.inventory import memory_peak as M
from manybench.inventory import peaks as P
from manybench.analysis import summarize
from manybench.analysis.efficiency import NodePeaks, cores_used, evaluate, threads_per_slot
from manybench.report import render_text
from manybench.results.store import Store
from builders import S, T, pinfo, rec


def cpuinfo(vendor: str, family: int, model: int, name: str, flags: str, cpus: int = 2,
            mhz: float = 1200.0) -> str:
    block = (f"processor\t: {{i}}\nvendor_id\t: {vendor}\ncpu family\t: {family}\n"
             f"model\t\t: {model}\nmodel name\t: {name}\ncpu MHz\t\t: {mhz}\n"
             f"flags\t\t: {flags}\n\n")
    return "".join(block.format(i=i) for i in range(cpus))


X86 = "fpu sse sse2 ssse3 sse4_1 sse4_2 avx"
SKX_GOLD = cpuinfo("GenuineIntel", 6, 85, "Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz",
                   X86 + " fma avx2 avx512f avx512dq avx512cd avx512bw avx512vl")
SKX_SILVER = cpuinfo("GenuineIntel", 6, 85, "Intel(R) Xeon(R) Silver 4114 CPU @ 2.20GHz",
                     X86 + " fma avx2 avx512f")
ZEN1 = cpuinfo("AuthenticAMD", 23, 1, "AMD EPYC 7501 32-Core Processor", X86 + " fma avx2")
ZEN2 = cpuinfo("AuthenticAMD", 23, 49, "AMD EPYC 7742 64-Core Processor", X86 + " fma avx2")
ZEN4 = cpuinfo("AuthenticAMD", 25, 17, "AMD EPYC 9654 96-Core Processor",
               X86 + " fma avx2 avx512f avx512dq")
SANDY = cpuinfo("GenuineIntel", 6, 45, "Intel(R) Xeon(R) CPU E5-2680 0 @ 2.70GHz", X86)
NOFMA = cpuinfo("CentaurHauls", 6, 15, "VIA Nano", "fpu sse sse2 ssse3")
GENERIC_FMA = cpuinfo("CentaurHauls", 7, 59, "ZHAOXIN KaiXian KX-7000", X86 + " fma avx2")
NEOVERSE_N1 = ("processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd evtstrm aes crc32 atomics\n"
               "CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x3\n"
               "CPU part\t: 0xd0c\nCPU revision\t: 1\n\n")


@pytest.mark.parametrize("text, arch, simd_bits, units, width, fma, fpc", [
    (SKX_GOLD, "Skylake-SP Gold 6148", 512, 2, 512, True, 32),
    (SKX_SILVER, "Skylake-SP Silver 4114", 512, 1, 512, True, 16),   # the seed's 16 flops
    (ZEN1, "Zen/Zen+", 256, 2, 128, True, 8),
    (ZEN2, "Zen 2", 256, 2, 256, True, 16),
    (ZEN4, "Zen 4", 512, 2, 256, True, 16),      # AVX-512 on 256-bit pipes
    (SANDY, "Sandy Bridge", 256, 2, 256, False, 8),  # add + multiply, no FMA
    (NEOVERSE_N1, "Neoverse N1", 128, 2, 128, True, 8),
])
def test_flops_per_cycle_of_known_families(text, arch, simd_bits, units, width, fma, fpc):
    f = C.core_flops(text)
    assert (f.microarch, f.simd_bits, f.units, f.width_bits, f.fma) == (arch, simd_bits, units,
                                                                          width, fma)
    assert f.flops_per_cycle == fpc
    assert f.assumption is None                  # known: no assumption stated


def test_unknown_cpus_state_their_assumption():
    nofma = C.core_flops(NOFMA)
    assert (nofma.fma, nofma.units, nofma.width_bits, nofma.flops_per_cycle) == (False, 2, 128, 4)
    assert "assumed no FMA" in nofma.assumption
    gen = C.core_flops(GENERIC_FMA)
    assert (gen.fma, gen.units, gen.width_bits, gen.flops_per_cycle) == (True, 1, 256, 8)
    assert "assumed 1 FMA pipe" in gen.assumption
    # a Skylake-SP whose VM hides AVX-512: the pipes' width is capped by what the ISA offers
    masked = C.core_flops(SKX_GOLD.replace(" avx512f", " x"))
    assert (masked.width_bits, masked.flops_per_cycle) == (256, 16)


def test_simd_width_from_flags():
    assert C.simd({"sse2", "avx", "avx2", "avx512f"}) == (512, "avx512f")
    assert C.simd({"sse2", "avx"}) == (256, "avx")
    assert C.simd({"sse2"}) == (128, "sse2")
    assert C.simd({"asimd", "sve"}, sve_bits=512) == (512, "sve")
    assert C.simd({"asimd"}) == (128, "asimd")


def test_parse_cpuinfo_reads_the_first_block_and_every_clock():
    info = C.parse_cpuinfo(cpuinfo("GenuineIntel", 6, 85, "x", "sse2", cpus=3, mhz=999.5))
    assert (info["vendor"], info["family"], info["model"], info["arch"]) == ("GenuineIntel", 6, 85, "x86")
    assert info["mhz"] == [999.5] * 3
    arm = C.parse_cpuinfo(NEOVERSE_N1)
    assert (arm["arch"], arm["implementer"], arm["part"]) == ("arm", 0x41, 0xd0c)


def test_frequencies_sources_in_order():
    name = "Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz"
    assert C.frequencies(name, [1200.0], 2_400_000, 3_700_000, "intel_pstate")[:4:2] == (2.4, 3.7)
    base, src, mx, msrc = C.frequencies(name, [1200.0])
    assert (base, src, mx) == (2.4, "model name", None) and "unknown" in msrc
    base, src, _, _ = C.frequencies("AMD EPYC 7742", [1500.0, 3100.0])
    assert base == 3.1 and "cpu MHz" in src
    base, src, mx, _ = C.frequencies("AMD EPYC 7742", [], None, 2_250_000, "acpi-cpufreq")
    assert (base, mx) == (2.25, None) and "acpi-cpufreq" in src
    assert C.frequencies(None, [])[0] is None


def test_peak_formulas_and_overrides():
    # the seed's Xeon Platinum 8180 pair: 56 cores at 2.3 GHz (AVX-512 all-core turbo)
    d = {"cores": 56, "base_ghz": 1.7, "max_ghz": 2.3, "dp_flops_per_cycle": 32,
         "mem_channels": 12, "mem_mt_s": 2666}
    p = P.derive(d)
    assert p.get("dp_gflops") == pytest.approx(56 * 1.7 * 32)
    assert p.get("dp_gflops_max") == pytest.approx(56 * 2.3 * 32)
    assert p.get("mem_bw_mb_s") == 12 * 2666 * 8
    assert p.basis["dp_gflops"] == "56 cores x 1.7 GHz x 32 flops/cycle"
    # unknown inputs: unknown outputs, never guessed
    q = P.derive({"cores": 4, "dp_flops_per_cycle": 16})
    assert q.get("dp_gflops") is None and q.get("mem_bw_mb_s") is None
    assert "base_ghz" in q.basis["dp_gflops"] and "[peaks]" in q.basis["mem_bw_mb_s"]
    # [peaks] wins: an input feeds the formula, an output replaces it, a metric is passed on
    r = P.derive(d, ("[peaks]", {"cores": 28, "mem_bw_mb_s": 128000, "mb_s": 750}))
    assert r.get("dp_gflops") == pytest.approx(28 * 1.7 * 32)
    assert r.get("mem_bw_mb_s") == 128000 and r.basis["mem_bw_mb_s"] == "[peaks]"
    assert r.metric_peaks() == {"mb_s": 750}
    s = P.derive(d, ("MANYBENCH_PEAKS", {"dp_gflops": 1000}), ("[peaks]", {"dp_gflops": 2150.4}))
    assert s.get("dp_gflops") == 2150.4 and s.basis["dp_gflops"] == "[peaks]"


def test_for_run_layers_stored_env_then_plan():
    stored = P.derive({"cores": 8, "base_ghz": 2.0, "dp_flops_per_cycle": 16},
                      ("MANYBENCH_PEAKS", {"mem_bw_mb_s": 50000})).as_dict()
    env = {"physical_cores": 8, "peaks": stored}
    p = P.for_run(env, {"dp_gflops": 300})
    assert p.get("dp_gflops") == 300 and p.get("mem_bw_mb_s") == 50000
    assert P.for_run(env).get("dp_gflops") == 256
    # a run stored before peaks existed still has its core count
    old = P.for_run({"physical_cores": 4}, {"dp_gflops": 100})
    assert old.get("cores") == 4 and old.get("dp_gflops") == 100
    assert P.parse_env_override("dp_gflops=2150.4, mb_s=750;bad=x neg=-1") == {
        "dp_gflops": 2150.4, "mb_s": 750}


def dimm(locator: str, bank: str, size_mb: int, speed: int, configured: int) -> bytes:
    body = bytearray(0x22)
    body[0], body[1] = 17, 0x22
    struct.pack_into("<H", body, 0x0C, size_mb)
    body[0x10], body[0x11] = 1, 2
    struct.pack_into("<H", body, 0x15, speed)
    struct.pack_into("<H", body, 0x20, configured)
    return bytes(body) + locator.encode() + b"\0" + bank.encode() + b"\0\0"


def test_memory_channels_from_smbios():
    raws = [dimm(f"P{s}-DIMM{c}1", f"P{s}_Node{s}_Channel{c}_Dimm0", 16384, 2933, 2666)
            for s in (1, 2) for c in "ABCDEF"]
    dimms = [M.parse_dmi_memory_device(r) for r in raws]
    assert dimms[0] == {"locator": "P1-DIMMA1", "bank": "P1_Node1_ChannelA_Dimm0",
                        "size_mb": 16384, "speed_mt_s": 2933, "configured_mt_s": 2666}
    channels, rate, _ = M.memory_channels(dimms)
    assert (channels, rate) == (12, 2666)
    # an empty slot is no DIMM; locators without channels leave the bandwidth unknown
    assert M.parse_dmi_memory_device(dimm("A1", "x", 0, 0, 0)) is None
    unnamed = [M.parse_dmi_memory_device(dimm("A1", "Not Specified", 8192, 3200, 3200))]
    assert M.memory_channels(unnamed)[0] is None
    assert M.memory_channels([])[0] is None


# -- efficiency on synthetic records --------------------------------------------------------
def point_records(phase: int, point: str, task: str, metric: str, per_slot: list[float],
                  nodes: list[str], params: dict | None = None, kernel: str = "command"):
    """One phase of `len(per_slot)` slots: slot i on nodes[i] reporting per_slot[i]."""
    t0 = T + phase * S
    w = len(per_slot)
    recs = []
    for i, v in enumerate(per_slot):
        r = rec(phase, i, t0, t0, t0 + S, task=task, kernel=kernel, workers=w,
                params=dict(params or {}), metrics={metric: v})
        r.node = nodes[i]
        recs.append(r)
    return recs, pinfo(phase, point, task=task, kernel=kernel, workers=w, params=params, t0=t0)


def build(*phases):
    records, infos = [], []
    for recs, info in phases:
        records += recs
        infos.append(info)
    return records, infos


def test_dgemm_efficiency_scales_peak_to_cores_used():
    # node: 4 cores, dp_gflops 400 -> 100 GFLOPS per core
    pk = P.derive({"cores": 4, "base_ghz": 2.5, "dp_flops_per_cycle": 40})
    assert pk.get("dp_gflops") == 400
    records, infos = build(
        point_records(0, "one", "dgemm", "gflops", [80.0], ["a"]),              # 1 core
        point_records(1, "one", "dgemm", "gflops", [90.0], ["a"]),
        point_records(2, "two", "dgemm", "gflops", [70.0, 80.0], ["a", "a"],   # 2 x 3 threads
                      params={"threads": 3}),                                  # capped at 4
        point_records(3, "all", "dgemm", "gflops", [300.0], ["a"], params={"threads": 0}))
    eff = evaluate(summarize(records, infos), records, pk)
    one = eff["one"].efficiency
    assert (one.metric, one.peak_name, one.peak, one.phases) == ("gflops", "dp_gflops", 100, 2)
    assert one.measured == 80.0 and one.ratio == pytest.approx(0.8)  # nearest-rank medians
    two = eff["two"].efficiency
    assert two.measured == 150.0 and two.peak == 400 and two.ratio == pytest.approx(150 / 400)
    assert eff["all"].efficiency.peak == 400                        # threads = 0: all cores
    assert eff["one"].share is None                                 # one node: no share


def test_each_node_is_measured_against_its_own_peaks():
    # a: 4 cores x 100 GFLOPS, 6 channels; b: 8 cores x 50 GFLOPS, 2 channels (a smaller box)
    a = P.derive({"cores": 4, "base_ghz": 2.5, "dp_flops_per_cycle": 40, "mem_channels": 6,
                  "mem_mt_s": 2000})
    b = P.derive({"cores": 8, "base_ghz": 2.5, "dp_flops_per_cycle": 20, "mem_channels": 2,
                  "mem_mt_s": 2000})
    peaks = NodePeaks(default=a, by_node={"a": a, "b": b})
    records, infos = build(
        point_records(0, "d", "dgemm", "gflops", [90.0, 40.0], ["a", "b"], kernel="cpu.dgemm",
                      params={"threads": 2}),
        point_records(1, "s", "stream", "triad_mb_s", [80000.0, 20000.0], ["a", "b"],
                      kernel="mem.stream"))
    eff = evaluate(summarize(records, infos), records, peaks)
    d = eff["d"].efficiency
    assert d.peak == 2 * 100 + 2 * 50 and d.ratio == pytest.approx(130 / 300)
    assert "each node's own" in d.rule
    s = eff["s"].efficiency
    assert s.peak == 6 * 2000 * 8 + 2 * 2000 * 8 and s.ratio == pytest.approx(100000 / 128000)
    # taken as alike (the coordinator's peaks everywhere), the same phases read differently
    alike = evaluate(summarize(records, infos), records, a)
    assert alike["d"].efficiency.peak == 400 and alike["s"].efficiency.peak == 2 * 96000


def test_threads_and_cores_used():
    assert threads_per_slot({"threads": 4}, 8) == 4
    assert threads_per_slot({"threads": 0}, 8) == 8 and threads_per_slot({"threads": "2"}, 8) == 2
    # undeclared: a kernel's own default (cpu.dgemm runs 1), a command's none (its cpus tell)
    assert threads_per_slot({}, 8, "cpu.dgemm") == 1 and threads_per_slot({}, 8) is None
    recs, _ = point_records(0, "p", "t", "gflops", [1.0] * 6, ["a", "a", "a", "b", "b", "b"],
                            params={"threads": 2})
    four = P.derive({"cores": 4})
    assert cores_used(recs, four) == 8         # 6 cores wanted per node, 4 there, 2 nodes


def test_stream_efficiency_uses_memory_peak_per_node():
    pk = P.derive({"mem_channels": 6, "mem_mt_s": 2666})   # 127,968 MB/s per node
    records, infos = build(
        point_records(0, "s1", "stream", "triad_mb_s", [30000.0, 34000.0], ["a", "a"],
                      kernel="mem.stream"),
        point_records(1, "s2", "stream", "triad_mb_s", [60000.0, 64000.0], ["a", "b"],
                      kernel="mem.stream"))
    eff = evaluate(summarize(records, infos), records, pk)
    assert eff["s1"].efficiency.ratio == pytest.approx(64000 / 127968)
    assert eff["s2"].efficiency.peak == 2 * 127968
    assert eff["s2"].efficiency.ratio == pytest.approx(124000 / (2 * 127968))
    # without a memory peak there is nothing to compare with
    none = evaluate(summarize(records, infos), records, P.derive({}))
    assert none["s1"].efficiency is None


def test_direct_metric_and_aggregate_peaks():
    pk = P.derive({}, ("[peaks]", {"mb_s": 750, "w.bandwidth_mb_s": 500}))
    records, infos = build(point_records(0, "dev", "dd", "mb_s", [300.0, 400.0], ["a", "a"]))
    # io.write: 2 slots x 100 MB in 1 s -> aggregate bandwidth 200 MB/s
    t0 = T + 5 * S
    io = [rec(5, s, t0, t0, t0 + S, task="w", kernel="io.write", workers=2, bytes=100_000_000,
              ops=10) for s in range(2)]
    records += io
    infos.append(pinfo(5, "w", task="w", kernel="io.write", workers=2, t0=t0))
    eff = evaluate(summarize(records, infos), records, pk)
    assert eff["dev"].efficiency.measured == 700 and eff["dev"].efficiency.ratio == pytest.approx(700 / 750)
    w = eff["w"].efficiency
    assert (w.metric, w.peak_name, w.measured) == ("bandwidth_mb_s", "w.bandwidth_mb_s", 200)
    assert w.ratio == pytest.approx(0.4)


def test_multi_node_share_as_the_himeno_seed():
    # the seed: 28 cores on one node gave 48504.2478304 MFLOPS, 56 on two gave 80951.0242042
    one, two = 48504.2478304, 80951.0242042
    # 28 x 2.7 GHz x 32 DP flops; Himeno's are single precision: x 64
    pk = P.derive({}, ("[peaks]", {"dp_gflops": 2419.2, "sp_gflops": 4838.4, "cores": 28}))
    records, infos = build(
        point_records(0, "h28", "himeno", "mflops", [one / 28] * 28, ["a"] * 28,
                      kernel="cpu.himeno"),
        point_records(1, "h56", "himeno", "mflops", [two / 56] * 56, ["a"] * 28 + ["b"] * 28,
                      kernel="cpu.himeno"),
        point_records(2, "h30", "himeno", "mflops", [1.0] * 30, ["a"] * 20 + ["b"] * 10,
                      kernel="cpu.himeno"))
    eff = evaluate(summarize(records, infos), records, pk)
    h56 = eff["h56"]
    assert (h56.nodes, h56.per_node) == (2, 28)
    assert h56.share.single_point == "h28" and h56.share.nodes == 2
    assert h56.share.ratio == pytest.approx(two / (2 * one))          # 83.4% as in the seed
    assert round(h56.share.ratio * 100, 1) == 83.4
    # efficiency of mflops against the SP peak of the cores used, x 1000
    assert eff["h28"].efficiency.peak == pytest.approx(4838.4e3)
    assert eff["h56"].efficiency.peak == pytest.approx(2 * 4838.4e3)
    assert eff["h56"].efficiency.ratio == pytest.approx(two / (2 * 4838.4e3))
    # uneven spread (20 + 10): no share
    assert eff["h30"].share is None and eff["h30"].per_node is None


# -- the report shows efficiency only where a peak applies ----------------------------------
def _eff_store(tmp_path) -> None:
    """hpl at 1 and 2 nodes against a 400 GFLOPS peak per node; dd with no peak for it."""
    from manybench.model import Phase, Plan, TaskSpec
    env = {"hostname": "n1", "physical_cores": 4,
           "peaks": P.derive({"cores": 4, "base_ghz": 2.5, "dp_flops_per_cycle": 40}).as_dict()}
    hpl = TaskSpec("hpl", "command", {}, command=["xhpl"], parse="hpl")
    dd = TaskSpec("dd", "command", {}, command=["dd"])
    plan = Plan(name="eff", tasks=[hpl, dd], raw={"peaks": {"mb_s": 750}})
    st = Store(tmp_path)
    st.begin_run("r1", plan, [], env, {})
    layouts = [("h1", hpl, "gflops", [300.0], ["a"]), ("h2", hpl, "gflops", [280.0, 290.0], ["a", "b"]),
               ("d1", dd, "latency_us", [5.0], ["a"])]
    for i, (point, spec, metric, vals, nodes) in enumerate(layouts):
        recs, _ = point_records(i, point, spec.name, metric, vals, nodes, params={"threads": 4})
        for r in recs:
            r.run = "r1"
        st.write_phase("r1", Phase(i, spec, "command", "", 0, len(vals), "spread", "core",
                                   {"threads": 4}, point), T + i * S, recs)
    st.end_run("r1", "finished")
    st.close()


def test_report_shows_efficiency_and_share_only_where_they_apply(tmp_path):
    _eff_store(tmp_path)
    text = render_text(tmp_path, width=250, all_columns=True)
    hpl_part, dd_part = text.split("hpl (command)")[1].split("dd (command)")
    assert "efficiency" in hpl_part and "75.0% (300 of 400 GFLOPS)" in hpl_part   # 300 / 400
    assert "71.2% (570 of 800 GFLOPS)" in hpl_part                                 # 570 / 800
    assert "share of" in hpl_part and "95.0% of 2 x 300" in hpl_part         # 570 / 600
    assert "efficiency" not in dd_part and "share of" not in dd_part         # no peak for it
    assert "peaks" in text and "dp_gflops 400 GFLOPS" in text and "mb_s 750 ([peaks])" in text


@pytest.mark.e2e
def test_metrics_asks_for_the_columns_a_narrow_terminal_leaves_out(tmp_path):
    """The footer of a narrow table names efficiency and points to --metrics: efficiency and
    share are names it takes, and give their columns; a task without them says so."""
    from conftest import run_cli
    _eff_store(tmp_path)
    narrow = render_text(tmp_path, width=60)
    left = narrow.split("not shown at this width: ")[1].split(" (report --metrics")[0]
    assert "efficiency" in left.split(), narrow
    text = render_text(tmp_path, width=250, figures=["efficiency", "share"])
    hpl_part, dd_part = text.split("hpl (command)")[1].split("\ndd")   # dd's title wraps
    assert "75% of 400 GFLOPS" in hpl_part and "95% of 2 x 300 GFLOPS" in hpl_part, text
    assert hpl_part.index("efficiency") < hpl_part.index("share of")     # in the order asked
    assert "not measured by this task: efficiency, share" in dd_part
    res = run_cli("report", str(tmp_path), "--metrics", "share,gflops")
    assert res.returncode == 0, res.stderr
    assert "95% of 2 x 300 GFLOPS" in res.stdout
    bad = run_cli("report", str(tmp_path), "--metrics", "efficency")
    assert bad.returncode == 2 and "efficiency, share" in bad.stderr   # named among the known


def test_a_cpu_the_table_does_not_know_is_measured_and_says_so():
    # one core measured: 58.7 GFLOPS of 256-bit FMA (512-bit no faster) at 3.66 GHz
    m = C.Measured(3.66, {64: 0.0, 128: 29.3, 256: 58.7, 512: 58.6})
    assert m.best() == (256, 58.7) and m.flops_per_cycle() == 16
    gen = C.core_flops(GENERIC_FMA, measured=m)
    assert (gen.units, gen.width_bits, gen.flops_per_cycle) == (2, 256, 16)
    assert gen.assumption.startswith("measured on one core: 58.7 GFLOPS of 256-bit FMA")
    assert C.core_flops(ZEN4, measured=C.Measured(3.0, {256: 12.0})).flops_per_cycle == 16
    assert C.core_flops(GENERIC_FMA, measured=C.Measured(3.0, {})).assumption.startswith(
        "assumed")      # nothing measured: the assumption, stated


def test_a_measured_busy_clock_replaces_the_idle_cpu_mhz():
    base, src, mx, msrc = C.frequencies("AMD EPYC", [2596.0], measured_ghz=3.66)
    assert (base, mx) == (3.66, 3.66) and src.startswith("measured") and "not the rated" in src
    # cpufreq's figures win over the measurement
    base, src, mx, _ = C.frequencies("x", [1.0], 2_400_000, 3_700_000, "intel_pstate",
                                     measured_ghz=3.0)
    assert (base, mx, src) == (2.4, 3.7, "cpufreq base_frequency")


def test_the_probe_agrees_with_the_table_on_a_known_cpu():
    native = pytest.importorskip("manybench._native", reason="the C kernels are not built")
    with open("/proc/cpuinfo") as f:
        info = C.parse_cpuinfo(f.read())
    table = C.core_flops(info)
    if table.assumption or info["arch"] != "x86":
        pytest.skip("this cpu is not in the table (or not x86): nothing to compare with")
    m = C.Measured(native.probe_clock(1_000_000, 40),
                   dict(zip((64, 128, 256, 512), native.probe_fma(1_000_000, 40))))
    # the same flops per cycle, whatever the clock: both are measured on this core
    assert m.flops_per_cycle() == table.flops_per_cycle


def test_efficiency_above_100_percent_is_a_wrong_peak(tmp_path):
    recs, phases = [], []
    for i in range(3):
        t0 = T + i * 10 * S
        recs.append(rec(i, 0, t0, t0, t0 + S, kernel="cpu.dgemm", workers=1,
                        metrics={"gflops": 55.0}))
        phases.append(pinfo(i, "p", kernel="cpu.dgemm", workers=1, t0=t0))
    pts = summarize(recs, phases)
    low = NodePeaks(P.derive({"cores": 2, "base_ghz": 2.3, "dp_flops_per_cycle": 16}))
    [e] = evaluate(pts, recs, low).values()
    assert e.efficiency.ratio > 1 and e.efficiency.above_peak
    right = NodePeaks(P.derive({"cores": 2, "base_ghz": 3.66, "dp_flops_per_cycle": 16}))
    [e] = evaluate(pts, recs, right).values()
    assert not e.efficiency.above_peak


def test_share_of_one_mpi_job_over_every_worker():
    """ranks = "workers": the job over 2 nodes is compared with the 1-rank job on one node
    (ranks differ as the workers do); the job's figure is on its rank-0 record alone."""
    records, infos = build(
        point_records(0, "j1", "himeno", "mflops", [100.0], ["a"], params={"ranks": 1},
                      kernel="mpi"),
        point_records(1, "j2", "himeno", "mflops", [180.0, 0.0], ["a", "b"],
                      params={"ranks": 2}, kernel="mpi"))
    del records[-1].metrics["mflops"]                 # rank 1 of the job: no job figure
    eff = evaluate(summarize(records, infos), records, P.derive({}))
    assert eff["j2"].share is not None and eff["j2"].share.single_point == "j1"
    assert eff["j2"].share.ratio == pytest.approx(180 / (2 * 100))
