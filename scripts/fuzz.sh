#!/usr/bin/env bash
# Fuzzes the C that reads what a peer sends: the wire decoder's hooks (kernels/native/wire.c,
# through node/codec.py) and the lines libmbrank.so reads from its slot (mbrank.c), each with
# libFuzzer under AddressSanitizer and UndefinedBehaviorSanitizer (clang-14 and
# libclang-rt-14-dev, Debian), from seeds made of real frames and lines and cut-short copies
# (fuzz/seeds.py). A crash, a sanitizer report or a hang fails the run; its input is left in
# fuzz/findings/TARGET/ and printed here (base64).
#   bash scripts/fuzz.sh                 both targets, RUNS inputs each (100000)
#   RUNS=1000000 bash scripts/fuzz.sh    longer
#   bash scripts/fuzz.sh wire            one target (wire, rank)
#   KEEP=1 bash scripts/fuzz.sh          keeps the build, seeds, corpus and logs (it says where)
set -euo pipefail
cd "$(dirname "$0")/.."

PY="${PYTHON:-python3}"
CLANG="${CLANG:-clang-14}"
RUNS="${RUNS:-100000}"
NATIVE=src/manybench/kernels/native
work="$(mktemp -d)"
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
[ -n "${KEEP:-}" ] && echo "fuzz.sh: working in $work"
if ! command -v "$CLANG" >/dev/null; then
  echo "fuzz.sh: $CLANG not found (Debian clang-14, libclang-rt-14-dev)" >&2
  exit 2
fi

# stack-depth: a deeper stack counts as new, which leads mutations to nest deeper (the wire's
# stack overflow of nested shared objects was found so, in 50,000 inputs, with the fix undone)
FLAGS=(-g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined
       -fsanitize-coverage=stack-depth -fno-sanitize-recover=all -I "$NATIVE")
# the interpreter to embed: the one that runs the tests, its headers and libpython
read -r inc libdir ldlib < <("$PY" -c 'import sysconfig as s
print(s.get_config_var("INCLUDEPY"), s.get_config_var("LIBDIR"), s.get_config_var("LDLIBRARY"))')
pylib="${ldlib#lib}"; pylib="${pylib%.so*}"; pylib="${pylib%.a}"

build() {   # target -> $work/target
  case "$1" in
    wire) "$CLANG" "${FLAGS[@]}" -I "$inc" fuzz/wire_decode.c "$NATIVE/wire.c" -o "$work/wire" \
            -L "$libdir" -Wl,-rpath,"$libdir" -l"$pylib" -lm -ldl ;;
    rank) "$CLANG" "${FLAGS[@]}" fuzz/rank_lines.c "$NATIVE/mbtransport.c" "$NATIVE/timing.c" \
            "$NATIVE/numa.c" -o "$work/rank" -ldl ;;
  esac
}

targets=("$@")
[ $# -eq 0 ] && targets=(wire rank)
status=0
for t in "${targets[@]}"; do
  started=$SECONDS
  build "$t"
  PYTHONPATH="$PWD/src:$PWD/tests" "$PY" fuzz/seeds.py "$t" "$work/seeds-$t"
  findings="fuzz/findings/$t"
  mkdir -p "$findings" "$work/corpus-$t"
  # max_len: a frame or two lines and more (under what a socket pair holds, for rank), from
  # the start (len_control=0: deep structures need long inputs); a hang past 10 s on one
  # input is a finding; new inputs go to the scratch corpus
  rc=0
  dict=()
  [ -e "fuzz/$t.dict" ] && dict=(-dict="fuzz/$t.dict")
  PYTHONPATH="$PWD/src" ASAN_OPTIONS="detect_leaks=0" \
    UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
    "$work/$t" -runs="$RUNS" -max_len=9000 -len_control=0 -timeout=10 -print_final_stats=1 \
    "${dict[@]}" \
    -artifact_prefix="$findings/" "$work/corpus-$t" "$work/seeds-$t" \
    >"$work/log-$t" 2>&1 || rc=$?
  grep -E "^(INFO: Seed|Done [0-9]+ runs|stat::(number_of_executed_units|average_exec_per_sec))" \
    "$work/log-$t" || true
  echo "fuzz $t: $((SECONDS - started)) s with the build and seeds, exit $rc"
  if [ "$rc" != 0 ]; then
    tail -60 "$work/log-$t"
    for f in "$findings"/*; do
      [ -e "$f" ] || continue
      echo "---- $f, base64 (base64 -d >FILE gives it back):"
      base64 -w 100 "$f"
    done
    status=1
  else
    rmdir "$findings" 2>/dev/null || true
  fi
done
exit "$status"
