#!/usr/bin/env bash
# Instructions that `check --jobs 1` executes on the 100M corpora (valgrind's callgrind): a figure that does
# not move with the machine's load, for comparing two builds of a change too small for wall times to show
# (on the shared 2-core machine, wall times of the same build vary by 10-30% from run to run).
#
# Usage: bash benches/instructions.sh BIN [BIN2]
#   BIN, BIN2  session-doctor binaries (release builds); with two, the change in percent is printed too.
# Env:
#   SD_BENCH_CACHE   where benches/run.sh keeps its corpora (default ~/.cache/session-doctor-bench); run
#                    `bash benches/run.sh BIN 100M` once first, so that the 100M corpora are there.
#   SD_BENCH_MODES   default "huge-codex huge-claude many"
# Needs valgrind (Debian package `valgrind`). Each run takes 30-60 s (callgrind runs 50-100x slower).
# Notes: callgrind emulates a CPU without SHA extensions, so SHA-256 of inline media (about 2% of `check`
# on the many-sessions corpus on real hardware) counts about ten times more here; compare builds with each
# other, not with wall time. Exit 0, or 2 on usage errors.
set -uo pipefail

[ $# -ge 1 ] || { echo "usage: bash benches/instructions.sh BIN [BIN2]" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "instructions.sh: valgrind not found (apt-get install valgrind)" >&2; exit 2; }
bins=()
for b in "$@"; do
  [ -x "$b" ] || { echo "instructions.sh: not an executable: $b" >&2; exit 2; }
  bins+=("$(realpath "$b")")
done
cache="${SD_BENCH_CACHE:-$HOME/.cache/session-doctor-bench}"
MODES=(${SD_BENCH_MODES:-huge-codex huge-claude many})
tmp="$(mktemp -d "${TMPDIR:-/tmp}/sd-instructions.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

printf '| corpus | %s |%s\n' "$(basename "${bins[0]}")" "$([ ${#bins[@]} -eq 2 ] && printf ' %s | change |' "$(basename "${bins[1]}")")"
printf '|---|---:|%s\n' "$([ ${#bins[@]} -eq 2 ] && printf -- '---:|---:|')"
for mode in "${MODES[@]}"; do
  corpus="$(ls -dt "$cache/$mode-100M-"* 2>/dev/null | grep -v '\.tmp$' | head -1)"
  if [ -z "$corpus" ] || [ ! -f "$corpus/corpus.json" ]; then
    echo "instructions.sh: no 100M $mode corpus in $cache (bash benches/run.sh BIN 100M)" >&2
    continue
  fi
  # The stores of the corpus: every folder beside corpus.json (the SQLite modes: the .db file).
  stores=()
  for s in "$corpus"/*; do
    case "$s" in *corpus.json) ;; *) stores+=("$s") ;; esac
  done
  counts=()
  for b in "${bins[@]}"; do
    out="$tmp/cg.out"
    valgrind --tool=callgrind --callgrind-out-file="$out" "$b" check --jobs 1 --format json --fail-on never \
      "${stores[@]}" > /dev/null 2> "$tmp/cg.err"
    n="$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$tmp/cg.err" | tail -1)"
    [ -n "$n" ] || { echo "instructions.sh: callgrind gave no count for $mode ($(tail -1 "$tmp/cg.err"))" >&2; n=0; }
    counts+=("$n")
  done
  if [ ${#bins[@]} -eq 2 ]; then
    python3 -c "import sys; a,b=int(sys.argv[2]),int(sys.argv[3]); print(f'| {sys.argv[1]} | {a:,} | {b:,} | {100*(b-a)/a:+.1f}% |' if a else f'| {sys.argv[1]} | {a:,} | {b:,} | - |')" "$mode" "${counts[0]}" "${counts[1]}"
  else
    python3 -c "import sys; print(f'| {sys.argv[1]} | {int(sys.argv[2]):,} |')" "$mode" "${counts[0]}"
  fi
done
