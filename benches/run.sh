#!/usr/bin/env bash
# Benchmark entry point: generate the corpora (cached), run benches/compare.py on each mode, print the tables.
#
# Usage: bash benches/run.sh [BIN] [SIZE...]
#   BIN   default target/release/session-doctor
#   SIZE  default 100M (what CI runs: a few minutes on 2 cores); several sizes (e.g. `100M 1G`) add a
#         growth table per mode (10x bytes should cost <= 10.5x time).
# Env:
#   SD_BENCH_CACHE    where corpora are kept between runs, keyed by mode, size and a hash of the generator
#                     and its sources (default ~/.cache/session-doctor-bench; `none`: a temp dir, removed)
#   SD_BENCH_MODES    default "many huge-claude huge-codex huge-opencode opencode-many"
#   SD_BENCH_RUNS     runs per command (default 5); SD_BENCH_BUDGET seconds of timed runs per command (default
#                     20: a command slower than that gets fewer runs, or only its warm-up); SD_BENCH_TIMEOUT
#                     seconds before a command run is killed and reported as TIMEOUT (default 120)
#   SD_BENCH_MEM      address-space limit of each child (default 12GiB)
#   SD_BENCH_JSON     also write the figures as JSON (one file per mode: $SD_BENCH_JSON.<mode>.json)
# ccusage 20.0.24 (the peer) comes from scripts/install_clients.sh; without it the peer rows are left out.
# Exit 0, or 1 when a command crashed (see compare.py), 2 on usage errors.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
BIN="${1:-$root/target/release/session-doctor}"
[ $# -gt 0 ] && shift
SIZES=("$@")
[ ${#SIZES[@]} -eq 0 ] && SIZES=(100M)
MODES=(${SD_BENCH_MODES:-many huge-claude huge-codex huge-opencode opencode-many})
RUNS="${SD_BENCH_RUNS:-5}"
TIMEOUT="${SD_BENCH_TIMEOUT:-120}"
BUDGET="${SD_BENCH_BUDGET:-20}"
MEM="${SD_BENCH_MEM:-12GiB}"
SHARED="${SD_SHARED:-$root/../shared}"

if [ ! -x "$BIN" ]; then
  echo "run.sh: session-doctor binary not found: $BIN (cargo build --release)" >&2
  exit 2
fi
BIN="$(realpath "$BIN")"
[ -d "$SHARED/real-sessions" ] || { echo "run.sh: shared data not found at $SHARED (set SD_SHARED)" >&2; exit 2; }
export SD_SHARED="$SHARED"

# Cache key: the generator and the sizes of every source it reads (paths relative, so clones agree).
key="$( { cat "$here/gen_corpus.py"
          (cd "$root" && find fixtures/claude-code fixtures/codex fixtures/opencode/prune -type f | LC_ALL=C sort | xargs stat -c '%n %s')
          (cd "$SHARED" && find real-sessions/claude-code real-sessions/claude-code-gen real-sessions/codex real-sessions/codex-gen \
             -type f -name '*.jsonl' | LC_ALL=C sort | xargs stat -c '%n %s'); } | sha256sum | cut -c1-12)"

if [ "${SD_BENCH_CACHE:-}" = none ]; then
  cache="$(mktemp -d "${TMPDIR:-/tmp}/sd-bench-corpora.XXXXXX")"
  trap 'rm -rf "$cache"' EXIT
else
  cache="${SD_BENCH_CACHE:-$HOME/.cache/session-doctor-bench}"
fi
mkdir -p "$cache"

# ccusage (the peer): sets CCUSAGE_BIN
if [ -z "${CCUSAGE_BIN:-}" ]; then
  if out="$(cd "$root" && bash scripts/install_clients.sh 2>"$cache/install_clients.log")"; then
    eval "$out"
    export CCUSAGE_BIN
  else
    echo "run.sh: scripts/install_clients.sh failed (see $cache/install_clients.log): no ccusage rows" >&2
    export CCUSAGE_BIN=/nonexistent
  fi
fi

# 1. corpora (generated once per mode, size and key; stale ones of the same mode and size removed)
start=$(date +%s)
for mode in "${MODES[@]}"; do
  for size in "${SIZES[@]}"; do
    d="$cache/$mode-$size-$key"
    if [ ! -f "$d/corpus.json" ]; then
      for old in "$cache/$mode-$size-"*; do [ -e "$old" ] && [ "$old" != "$d" ] && rm -rf "$old"; done
      echo "run.sh: generating $mode $size into $d" >&2
      rm -rf "$d.tmp"
      if ! python3 "$here/gen_corpus.py" "$mode" "$d.tmp" --size "$size" -q; then
        echo "run.sh: gen_corpus.py $mode $size failed" >&2
        exit 2
      fi
      mv "$d.tmp" "$d"
    fi
  done
done
echo "run.sh: corpora ready in $(( $(date +%s) - start )) s ($cache, key $key)" >&2

# 2. benchmarks, one compare.py per mode (all sizes of the mode together: growth table)
rc=0
for mode in "${MODES[@]}"; do
  dirs=()
  for size in "${SIZES[@]}"; do dirs+=("$cache/$mode-$size-$key"); done
  json=()
  [ -n "${SD_BENCH_JSON:-}" ] && json=(--json-out "$SD_BENCH_JSON.$mode.json")
  hdr=()
  [ "$mode" != "${MODES[0]}" ] && hdr=(--no-header)
  python3 "$here/compare.py" "$BIN" "${dirs[@]}" --runs "$RUNS" --budget "$BUDGET" --timeout "$TIMEOUT" --mem-limit "$MEM" "${json[@]}" "${hdr[@]}"
  r=$?
  [ $r -ne 0 ] && rc=1
done
echo "run.sh: done in $(( $(date +%s) - start )) s" >&2
exit $rc
