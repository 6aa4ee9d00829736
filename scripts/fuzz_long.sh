#!/usr/bin/env bash
# Builds the cargo-fuzz targets (fuzz/, libFuzzer, nightly) and runs each for
# SECONDS (default 600), then prints a table: target, runs (libFuzzer's
# executions), corpus (libFuzzer's live corpus size), crashes (crash inputs
# saved in fuzz/artifacts/<target>/, all runs so far), known, new.
#
#   scripts/fuzz_long.sh [SECONDS]
#
# Needs a nightly toolchain (`rustup toolchain install nightly`) and
# cargo-fuzz (installed from crates.io when missing). The seed corpora
# fuzz/corpus/<target>/ are made from fixtures/ by fuzz/make_corpus.sh when
# missing; what libFuzzer adds goes to fuzz/run-corpus/<target>/ (kept between
# runs), crash inputs to fuzz/artifacts/<target>/, logs to fuzz/logs/.
# libFuzzer runs in fork mode with -ignore_crashes=1, so a known crash
# (tests/fuzz_crashes/known.txt) does not end a target's run; every crash
# input is replayed afterwards on stable (tests/fuzz.rs `fuzz_replay_dir`) to
# tell known from new signatures. Exit status 1 when there is a new one.
# SD_FUZZ_TARGETS="a b" runs only those; SD_FUZZ_TOOLCHAIN picks the nightly.
set -euo pipefail
secs=${1:-600}
root=$(cd "$(dirname "$0")/.." && pwd)
fz="$root/fuzz"
tc=${SD_FUZZ_TOOLCHAIN:-nightly}
rustup run "$tc" rustc --version >/dev/null 2>&1 || {
  echo "fuzz_long: no $tc toolchain (rustup toolchain install $tc)" >&2
  exit 2
}
command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked
[ -d "$fz/corpus" ] || "$fz/make_corpus.sh"
cd "$fz"
echo "fuzz_long: building the targets ($(rustup run "$tc" rustc --version))" >&2
cargo +"$tc" fuzz build -O >logs.build 2>&1 || { tail -n 40 logs.build >&2; exit 2; }
rm -f logs.build
targets=${SD_FUZZ_TARGETS:-$(cargo +"$tc" fuzz list)}
# The built binaries are run directly (`cargo fuzz run` would rebuild when
# src/ changed meanwhile).
triple=$(rustup run "$tc" rustc -vV | sed -n 's/^host: //p')
bindir="$fz/target/$triple/release"
# Copies are fsynced: a tmpfs keeps whole-path runs fast.
if [ -z "${SD_FUZZ_TMPDIR:-}" ] && [ -d /dev/shm ]; then export SD_FUZZ_TMPDIR=/dev/shm; fi
mkdir -p logs
rm -f logs/new-crashes.txt
for t in $targets; do
  mkdir -p "run-corpus/$t" "artifacts/$t"
  echo "fuzz_long: $t for ${secs}s" >&2
  "$bindir/$t" "run-corpus/$t" "corpus/$t" \
    -max_total_time="$secs" -max_len=65536 -timeout=60 -rss_limit_mb=4096 \
    -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
    -artifact_prefix="artifacts/$t/" >"logs/$t.log" 2>&1 || true
done
# Classify the crash inputs (stable, debug build: overflow checks on).
cargo test --manifest-path "$root/Cargo.toml" --test fuzz --no-run >/dev/null 2>&1
new_total=0
printf '%-20s %12s %8s %8s %7s %5s\n' target runs corpus crashes known new
for t in $targets; do
  log="logs/$t.log"
  # fork mode: "#<runs>: cov: .. ft: .. corp: <n> exec/s: .. oom/timeout/crash: a/b/c time: ..";
  # plain mode: "#<runs> DONE   cov: .. corp: <n>/..".
  runs=$(grep -aoE '^#[0-9]+' "$log" | tail -n 1 | tr -d '#' || true)
  corpus=$(grep -aoE 'corp: [0-9]+' "$log" | tail -n 1 | grep -oE '[0-9]+' || true)
  corpus=${corpus:-$(find "run-corpus/$t" -type f | wc -l)}
  crashes=$(find "artifacts/$t" -type f -name 'crash-*' | wc -l)
  known=0
  new=0
  if [ "$crashes" -gt 0 ]; then
    rep=$(SD_FUZZ_REPLAY_DIR="$fz/artifacts/$t" SD_FUZZ_TARGET="$t" \
      cargo test -q --manifest-path "$root/Cargo.toml" --test fuzz -- \
      --ignored --exact fuzz_replay_dir --nocapture 2>/dev/null | grep '^replay ' || true)
    known=$(sed -nE 's/^replay [a-z_]+: .* ([0-9]+) known, .*/\1/p' <<<"$rep" | head -n 1)
    new=$(sed -nE 's/^replay [a-z_]+: .* ([0-9]+) new$/\1/p' <<<"$rep" | head -n 1)
    grep ': new: ' <<<"$rep" >>logs/new-crashes.txt || true
  fi
  new_total=$((new_total + ${new:-0}))
  printf '%-20s %12s %8s %8s %7s %5s\n' "$t" "${runs:-?}" "$corpus" "$crashes" "${known:-?}" "${new:-?}"
done
if [ "$new_total" -gt 0 ]; then
  echo "fuzz_long: new crash signatures (fuzz/logs/new-crashes.txt):" >&2
  sort -u logs/new-crashes.txt >&2
  exit 1
fi
