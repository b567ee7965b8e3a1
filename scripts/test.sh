#!/usr/bin/env bash
# Installs everything the test suite needs, then runs all of it.
#   system tools from Debian packages (fio, numactl, faketime, ...), the package itself
#   (its build compiles the C kernels) with its test extras, then pytest; with no arguments,
#   then the C's tests under AddressSanitizer and UBSan, and its fuzzers (clang-14).
set -euo pipefail
cd "$(dirname "$0")/.."

DEBIAN_PACKAGES="fio strace time numactl faketime hyperfine iproute2 procps psmisc openssh-server openssh-client openssl slurm-wlm munge libopenblas0 iperf3 qperf chromium charliecloud-runtime busybox-static gridengine-master gridengine-exec gridengine-client bwa bowtie2 samtools hpcc openmpi-bin libopenmpi-dev mpich libmpich-dev lammps clang-14 libclang-rt-14-dev qemu-user"
missing=""
for p in $DEBIAN_PACKAGES; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  # gridengine's postinst creates the cell "default" (scripts/sge-local.sh configures it)
  echo "gridengine-common shared/gridengineconfig boolean true" | $SUDO debconf-set-selections
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

PY="${PYTHON:-python3}"
# A build/ left by an in-place build would be packed into the wheel as it is, stale
# modules and all: pip must build from the sources.
rm -rf build
"$PY" -m pip install -q --disable-pip-version-check '.[test]'
# Run from the tests against the installed package (not src/), as users get it; -rs lists
# every skip and why (with MANYBENCH_REQUIRE=all, as .ci/run sets, a skip fails instead);
# f and E keep pytest's default list of failures and errors, which a bare -rs replaces.
# The tests run on several workers (pytest-xdist): most of their time is spent waiting on
# the processes they start, so more workers than cpus pays; tests that must not overlap share
# an xdist group (tests/conftest.py). MANYBENCH_TEST_WORKERS=0 runs them in this one process.
# Tests marked `alone` measure cpu or time in a way the others' load would skew: they run
# after the parallel pass, one at a time. Exit 5 of a pass is "nothing selected" (arguments
# that name only tests of the other pass).
# 3, not 4: on 4 a fresh-clone CI took 6 min 59 s against 7 min 42 s, but the next run on 4 timed
# out a Ctrl-C test across namespace nodes (its cause is not known: the "event loop stalled
# 5 s" in its log was a false alarm, fixed in node/worker.py; it failed once on 3 as well)
WORKERS="${MANYBENCH_TEST_WORKERS:-3}"
# The first pass writes the files that hold the `alone` tests it left out (tests/conftest.py);
# run with no arguments, the second collects only those, not all ~130 modules again.
alone_files="$(mktemp)"
trap 'rm -f "$alone_files"' EXIT
status=0
MANYBENCH_ALONE=skip MANYBENCH_ALONE_FILES="$alone_files" "$PY" -m pytest -q -rfEs \
  -p no:cacheprovider -n "$WORKERS" --dist loadgroup "$@" || status=$?
[ "$status" = 5 ] && status=0
alone=0
files=("$@")
# no list (no alone test seen, or the first pass ended early): all of them, as asked
[ $# -eq 0 ] && [ -s "$alone_files" ] && mapfile -t files <"$alone_files"
MANYBENCH_ALONE=only "$PY" -m pytest -q -rfEs -p no:cacheprovider "${files[@]}" || alone=$?
[ "$alone" = 5 ] && alone=0
# The whole suite (no arguments) also runs the C's tests under the sanitizers
# (scripts/sanitized.sh) and fuzzes its wire decoder and libmbrank's lines (scripts/fuzz.sh)
sanitized=0
fuzzed=0
if [ $# -eq 0 ]; then
  started=$SECONDS
  bash scripts/sanitized.sh || sanitized=$?
  echo "sanitized pass: $((SECONDS - started)) s"
  started=$SECONDS
  bash scripts/fuzz.sh || fuzzed=$?
  echo "fuzzers: $((SECONDS - started)) s"
fi
for s in "$status" "$alone" "$sanitized" "$fuzzed"; do
  [ "$s" != 0 ] && exit "$s"
done
exit 0
