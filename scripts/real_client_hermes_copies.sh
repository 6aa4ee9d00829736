#!/usr/bin/env bash
# Real-client check of session-doctor's hermes-agent copies: the real hermes-agent 0.19.0 opens and
# resumes (against the loopback stub) every copy `session-doctor repair` and `session-doctor compact`
# write of every shared hermes state.db, and of the derived fault fixtures (fixtures/hermes/derived);
# the session wedged by HTTP 413 fails unmodified against the same body limit and resumes compacted.
# Usage: scripts/real_client_hermes_copies.sh [BIN] [-j N]   (BIN default: target/debug/session-doctor)
# Env: SD_SHARED (default ../shared beside the checkout), HERMES_BIN / HERMES_PY (else installed by
#      scripts/install_clients.sh hermes).
#
# Cases (scripts/real_client_hermes.sh, which copies each db again before opening it):
# - for every line of scripts/hermes/shared_cases.txt (the tip of every shared db, its config.yaml):
#   <name>/repaired: `repair` of the db, resumed at the tip;
#   <name>/compacted: `compact --session <tip>` (with the case's --max-body as --max-request-bytes),
#   when compact writes a copy (it writes none for a session with nothing to change);
#   for the case marked --expect-fail (wedged_413): <name>/unmodified, a plain copy that must still
#   fail against the same body limit;
# - rotate_loop/keep-turns: `compact --keep-turns 1 --max-request-bytes 6500 --headroom 0.2` of the
#   rotate_loop tip (an in-place compression written as hermes writes one);
# - image_after_compress/strip-media: a historical inline image stripped to hermes' placeholder;
# - derived/<fault>/repaired: the repaired copy of each derived fault, resumed at the chain's root.
# Prints the largest request body of the wedged session before (unmodified) and after (compacted).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
BIN="$(realpath -m "${1:-$root/target/debug/session-doctor}")"
shift || true
jobs=3
[ "${1:-}" = "-j" ] && jobs="$2"
SHARED="${SD_SHARED:-$root/../shared}"
REAL="$SHARED/real-sessions"
[ -x "$BIN" ] || { echo "real_client_hermes_copies: no session-doctor at $BIN (cargo build first)" >&2; exit 2; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cases=()
sd() {  # session-doctor, output kept for the log; any failure stops the check
  if ! "$BIN" "$@" > "$work/sd.out" 2>&1; then
    echo "FAIL: session-doctor $*" >&2; cat "$work/sd.out" >&2; exit 1
  fi
}

while IFS= read -r line; do
  line="${line%%#*}"; [ -n "${line// }" ] || continue
  # shellcheck disable=SC2206
  f=($line)
  name="${f[0]}" db="$REAL/${f[1]}" sid="${f[2]}"
  cfg=() max=() xfail=0 maxb=""
  i=3
  while [ $i -lt ${#f[@]} ]; do
    case "${f[$i]}" in
      --config) cfg=(--config "$REAL/${f[$((i+1))]}"); i=$((i+2)) ;;
      --max-body) maxb="${f[$((i+1))]}"; max=(--max-body "$maxb"); i=$((i+2)) ;;
      --expect-fail) xfail=1; i=$((i+1)) ;;
      *) echo "real_client_hermes_copies: bad option ${f[$i]}" >&2; exit 2 ;;
    esac
  done
  sd repair "$db" --out "$work/repaired/$name"
  cases+=("$work/repaired/$name/state.db" "$sid" "${cfg[@]}" "${max[@]}" --name "$name/repaired")
  [ "$xfail" = 1 ] && cases[${#cases[@]}]=--expect-fail
  limit=()
  [ -n "$maxb" ] && limit=(--max-request-bytes "$maxb")
  sd compact "$db" --session "$sid" --out "$work/compacted/$name" "${limit[@]}"
  echo "compact $name: $(tail -1 "$work/sd.out")"
  if [ -f "$work/compacted/$name/state.db" ]; then
    cases+=("$work/compacted/$name/state.db" "$sid" "${cfg[@]}" "${max[@]}" --name "$name/compacted")
  else
    echo "compact $name: no copy written (nothing to change); its repaired copy stands for it"
  fi
  if [ "$xfail" = 1 ]; then
    cases+=("$db" "$sid" "${cfg[@]}" "${max[@]}" --expect-fail --name "$name/unmodified")
  fi
done < "$here/hermes/shared_cases.txt"

# An in-place compression written by `compact --keep-turns`.
tip=20261123_152354_66b4fb
sd compact "$REAL/hermes-gen/rotate_loop/state.db" --session "$tip" --out "$work/keep" \
  --max-request-bytes 6500 --headroom 0.2 --keep-turns 1
cases+=("$work/keep/state.db" "$tip" --config "$REAL/hermes-gen/rotate_loop/config.yaml" --name rotate_loop/keep-turns)

# Historical images stripped: a copy of image_after_compress with row 36 (an inline image, NUL-prefixed
# JSON content) repeated as a newer turn, made with hermes' own SQLite (Python sqlite3), then compacted
# under a 300,000-byte limit: row 36's image becomes hermes' placeholder in a row hermes must still index.
img="$work/img-src"; mkdir -p "$img"
cp "$REAL/hermes-gen/image_after_compress/state.db" "$img/state.db"; chmod u+w "$img/state.db"
python3 - "$img/state.db" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("INSERT INTO messages (session_id, role, content, timestamp, active, compacted) "
          "SELECT session_id, role, content, timestamp + 100, 1, 0 FROM messages WHERE id = 36")
c.commit(); c.execute("PRAGMA wal_checkpoint(TRUNCATE)"); c.close()
PY
tip=20261123_152528_e3af5b
sd compact "$img/state.db" --session "$tip" --out "$work/img" --max-request-bytes 300000
grep -q 'stripped after compression' "$work/sd.out" || { echo "FAIL: no image stripped" >&2; cat "$work/sd.out" >&2; exit 1; }
cases+=("$work/img/state.db" "$tip" --config "$REAL/hermes-gen/image_after_compress/config.yaml" --name image_after_compress/strip-media)

# The derived faults, repaired; resumed from the chain's root (or the surviving first session).
for fault in closed_compression empty_continuation dangling_parent; do
  sd repair "$root/fixtures/hermes/derived/$fault/state.db" --out "$work/derived/$fault"
  start=20261122_104644_ba457c
  [ "$fault" = dangling_parent ] && start=20261122_104840_a980c8
  cases+=("$work/derived/$fault/state.db" "$start" --config "$root/fixtures/hermes/hermes/compress_rotate/config.yaml" --name "derived/$fault/repaired")
done

rc=0
bash "$here/real_client_hermes.sh" -j "$jobs" --json "$work/cases.jsonl" "${cases[@]}" || rc=$?

python3 - "$work/cases.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def body(name):
    for r in rows:
        if r["name"] == name and r.get("resume"):
            return r["resume"]["stub"]["max_body"], r["resume"]["stub"]["status_413"], r["resume"]["rc"]
    return None
before, after = body("wedged_413/unmodified"), body("wedged_413/compacted")
if before and after:
    print(f"wedged_413 (stub limit 120000): largest request body unmodified {before[0]} "
          f"({before[1]} x 413, rc={before[2]}) -> compacted {after[0]} ({after[1]} x 413, rc={after[2]})")
PY
exit "$rc"
