"""The keys of a record's `extra`, each declared once with its meaning: what kernels, slots
and the run put beside a record's figures (stored as JSON; `export` writes it after every
other column, results/frames.py). Writers and readers name a key by its constant here.

A kernel's facts (the BLAS, the I/O engine, the MPI transport: kernels/facts.py) are keys of
`extra` too, declared with the kernel that writes them (Kernel.facts) with their label and
note; every other key is declared here. Keys are plain str: they are looked up in every
record's dict, 64,000 a phase at the largest (run/coordinator.py).
"""
from __future__ import annotations

EXTRA_KEYS: dict[str, str] = {}   # key -> what it holds


def _key(name: str, meaning: str) -> str:
    EXTRA_KEYS[name] = meaning
    return name


# a command's or a launcher's output, its tails (kernels/command.py TAIL_BYTES): exported as
# columns of their own (results/frames.py EXTRA_COLUMNS)
STDOUT = _key("stdout", "the tail of the command's (a parallel job's launcher's) standard "
                        "output")
STDERR = _key("stderr", "the tail of the command's (a parallel job's launcher's) standard "
                        "error")
ARGV = _key("argv", "the command line the command task (or the job's launcher) ran")
MISSING_METRICS = _key("missing_metrics", "the task's metrics whose regex matched nothing "
                                          "in the output: a missing-metric warning each")
# what the run stamps on every record (run/outcome.py, records.c's slot_extra)
RANK = _key("rank", "the slot's rank in the phase (its worker number)")
ARMED_NS = _key("armed_ns", "when the slot began waiting for T0 (its wall clock), when "
                            "known: armed after T0, it started late (analysis/late.py)")
# warnings found in a slot, told by the run (run/coordinator.py): [[kind, text], ...]
WARNINGS = _key("warnings", "[kind, text] pairs the kernel or its slot found (a WarningKind "
                            "each): stored as the run's warnings, kept in the record too")
# a parser's size-indexed tables (OSU, IMB): stored as the series table's rows, not in extra
SERIES = _key("series", "the tables a parser read from the output (Series.to_json()): "
                        "stored as `series` rows (results/record_rows.py), not kept here")
# parallel jobs (kernels/mpi_record.py, kernels/mpi_phase.py)
JOB = _key("job", "the parallel job the rank's record belongs to")
TRANSPORT = _key("transport", "how the rank's MPI library said it carried its messages "
                              "(kernels/mpi_transport.py parse): the job's first record "
                              "sums them up as mpi_transport")
RANK_FAILURES = _key("rank_failures", "what the launcher said of each failed rank, by "
                                      "\"rank N\" or \"pid P\": the failed ranks' errors "
                                      "name it")
# kernels' own, not facts
FILE = _key("file", "the file an I/O kernel's slot wrote or read")
SUBMIT_CALLS = _key("submit_calls", "the system calls that handed I/Os to the kernel (what "
                                    "`batch` really did: io.randread, io.randwrite)")
CACHE_DROPS = _key("cache_drops", "page cache drops inside the window, as fio's "
                                  "invalidate (io.randread, io.randwrite)")
BLAS_TRIALS = _key("blas_trials", "blas = \"best\": each library tried before T0 and its "
                                  "rate (cpu.dgemm)")
