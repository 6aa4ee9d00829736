#!/usr/bin/env bash
# Makes the cargo-fuzz seed corpora fuzz/corpus/<target>/ from the real data
# in fixtures/: opencode message/part rows, legacy storage/ files, Claude Code
# and Codex lines and windows of consecutive lines, long strings cut, at most
# 300 seeds (rows, lines) or 100 (files, stores) of at most 24 KB per target
# (about 3 MB in all: made on demand, not committed). The seeds are those
# `session_doctor::fuzz::seeds` gives tests/fuzz.rs, written by its ignored
# test `fuzz_write_corpus` (stable toolchain). Replaces fuzz/corpus/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$root/fuzz/corpus"
SD_FUZZ_CORPUS_OUT="$root/fuzz/corpus" \
  cargo test --manifest-path "$root/Cargo.toml" --test fuzz -- \
  --ignored --exact fuzz_write_corpus --nocapture 2>&1 | grep -E '^[a-z_]+: [0-9]+ seeds' || {
  echo "make_corpus: failed" >&2
  exit 1
}
du -sh "$root/fuzz/corpus"
