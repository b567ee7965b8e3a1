#!/usr/bin/env bash
# The C under AddressSanitizer and UndefinedBehaviorSanitizer: builds the extension, mbkernel
# and libmbrank.so with MANYBENCH_SANITIZE=1 (setup.py) into a venv of its own in a temporary
# directory (never over the real install), then runs the tests that drive the C with the
# sanitizers' runtimes preloaded into every process they start (the Python processes load the
# extension, MPI ranks libmbrank.so). A report ends the process that made it (no recovery) and
# is written to a file; any report, from any process, fails this pass and is printed.
#   bash scripts/sanitized.sh                   the C tests below
#   bash scripts/sanitized.sh tests/kernels/test_x.py those instead (pytest's arguments)
set -euo pipefail
cd "$(dirname "$0")/.."

PY="${PYTHON:-python3}"
CC_="${CC:-gcc}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# the sources copied: neither this build nor the real one may find the other's objects in build/
mkdir "$work/tree" "$work/reports"
cp -r setup.py pyproject.toml README.md src "$work/tree/"
"$PY" -m venv --system-site-packages "$work/venv"
MANYBENCH_SANITIZE=1 "$work/venv/bin/pip" install -q --disable-pip-version-check --no-deps \
  "$work/tree"

# gcc's runtimes, the ones the build linked
asan="$("$CC_" -print-file-name=libasan.so)"
ubsan="$("$CC_" -print-file-name=libubsan.so)"
if [ ! -e "$asan" ] || [ ! -e "$ubsan" ]; then
  echo "sanitized.sh: $CC_ has no libasan/libubsan (Debian gcc ships them)" >&2
  exit 2
fi
# detect_leaks=0: CPython keeps objects to its end, and every one would be reported;
# verify_asan_link_order=0: kernels/mpi_job.py puts libmbrank.so ahead of the runtime in a
# rank's LD_PRELOAD (the runtime still comes before libc, so it works);
# PYTHONMALLOC=malloc: Python's objects from malloc, so a reference the C drops too soon is a
# use-after-free that AddressSanitizer sees (pymalloc's pools would hide it)
ASAN_OPTIONS="detect_leaks=0:verify_asan_link_order=0:log_path=$work/reports/asan"
export ASAN_OPTIONS="$ASAN_OPTIONS:suppressions=$PWD/scripts/sanitized.supp"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$work/reports/ubsan"
export PYTHONMALLOC=malloc
export LD_PRELOAD="$asan:$ubsan${LD_PRELOAD:+:$LD_PRELOAD}"

# the sanitized build is the one these tests import, or they test nothing new
"$work/venv/bin/python" -c '
import sys
from manybench import _native
if _native.build_info()["sanitize"] != "address,undefined":
    sys.exit(f"sanitized.sh: the extension imported is not sanitized: {_native.__file__}")'

# The tests that drive the C: the extension's calls, the wire codec, records, the kernels,
# spawn, mbkernel (wrapped kernels, on the host) and libmbrank.so (MPI ranks). Left out: the
# two that need mbkernel static (in a busybox image; refused as an MPI rank), which a
# sanitized build cannot be, and the `alone` ones (races of MPI ranks' timing, which the
# sanitizers' slowdown skews; the rank's C runs in the others too).
TESTS=(tests/kernels/test_native.py tests/node/test_wire.py tests/node/test_codec.py tests/kernels/test_c_input_checks.py
       tests/results/test_record_native.py tests/kernels/test_meta.py tests/kernels/test_randio.py tests/kernels/test_kernels.py
       tests/kernels/test_stream_himeno.py tests/kernels/test_dgemm.py tests/kernels/test_net.py tests/kernels/test_pagecache.py
       tests/kernels/test_hostile_scratch.py tests/kernels/test_wrap.py tests/kernels/test_parallel.py
       tests/kernels/test_rank_lines.py
       --deselect tests/kernels/test_wrap.py::test_charliecloud_runs_a_command_and_builtin_kernels
       --deselect tests/kernels/test_parallel.py::test_a_statically_linked_program_is_refused)
[ $# -gt 0 ] && TESTS=("$@")
status=0
MANYBENCH_ALONE=skip MANYBENCH_ALONE_FILES='' "$work/venv/bin/python" -m pytest -q -rfEs \
  -p no:cacheprovider -n "${MANYBENCH_TEST_WORKERS:-3}" --dist loadgroup "${TESTS[@]}" || status=$?
reports=("$work"/reports/*)
if [ -e "${reports[0]}" ]; then
  for r in "${reports[@]}"; do
    echo "---- sanitizer report: $(basename "$r")"
    cat "$r"
  done
  echo "sanitized.sh: ${#reports[@]} sanitizer report(s), above" >&2
  [ "$status" = 0 ] && status=1
fi
exit "$status"
