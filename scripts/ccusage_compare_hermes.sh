#!/usr/bin/env bash
# Peer cross-check for hermes-agent: per-session token totals of ccusage 20.0.24
# (`ccusage hermes session --offline --json`, run live) vs `session-doctor list --format json`, for
# every shared hermes state.db (shared/real-sessions/hermes*/*/state.db, written by hermes-agent
# 0.19.0). ccusage opens $HERMES_HOME/state.db read-only but leaves state.db-wal / -shm beside it, so
# it reads a private COPY in a private HERMES_HOME; session-doctor reads the shared original.
# Usage: scripts/ccusage_compare_hermes.sh [BIN]   (BIN default: target/debug/session-doctor)
# Env: SD_SHARED (default ../shared beside the checkout), CCUSAGE_BIN (else scripts/install_clients.sh).
#
# ccusage reads one query of `sessions` (docs/formats/hermes.md section 12): input_tokens,
# output_tokens, cache_read_tokens, cache_write_tokens (its cacheCreationTokens), reasoning_tokens
# (added to totalTokens, no field of its own); it never reads session_model_usage (compression and
# vision calls are not counted) and skips a session whose counts and cost are all zero. session-doctor
# reports the same `sessions` columns as tokens_total (auxiliary usage in a note), so every column must
# be equal, and a session ccusage skips must be all zero.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
BIN="$(realpath -m "${1:-$root/target/debug/session-doctor}")"
REAL="${SD_SHARED:-$root/../shared}/real-sessions"
[ -n "${CCUSAGE_BIN:-}" ] || eval "$(bash "$here/install_clients.sh")"
[ -x "$BIN" ] || { echo "ccusage_compare_hermes: no session-doctor at $BIN (cargo build first)" >&2; exit 2; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail=0; n=0
for db in "$REAL"/hermes/*/state.db "$REAL"/hermes-gen/*/state.db; do
  rel="${db#"$REAL"/}"
  h="$work/h"; rm -rf "$h" "$work/home"; mkdir -p "$h" "$work/home"
  cp "$db" "$h/state.db"; chmod u+w "$h/state.db"
  env -i PATH="$PATH" HOME="$work/home" HERMES_HOME="$h" NO_COLOR=1 TZ=UTC \
    HTTPS_PROXY=http://127.0.0.1:9 HTTP_PROXY=http://127.0.0.1:9 \
    timeout 120 "$CCUSAGE_BIN" hermes session --offline --json > "$work/cc.json" 2> "$work/cc.err" \
    || { echo "FAIL: ccusage failed on $rel:" >&2; cat "$work/cc.err" >&2; exit 1; }
  timeout 120 "$BIN" list --format json "$db" > "$work/sd.json" \
    || { echo "FAIL: session-doctor list failed on $rel" >&2; exit 1; }
  out="$(python3 - "$rel" "$work/cc.json" "$work/sd.json" <<'PY'
import json, sys
rel, cc, sd = sys.argv[1:4]
rep = {s["sessionId"]: s for s in json.load(open(cc)).get("sessions", [])}
doc = json.load(open(sd))
bad = 0
if doc.get("errors"):
    print(f"FAIL {rel}: session-doctor errors {doc['errors']}"); bad += 1
ids = set()
for s in doc["sessions"]:
    sid, t = s["id"], s["tokens_total"]
    ids.add(sid)
    ours = (t["input"], t["output"], t["cache_read"], t["cache_write"],
            t["input"] + t["output"] + t["cache_read"] + t["cache_write"] + t["reasoning"])
    c = rep.get(sid)
    theirs = (0, 0, 0, 0, 0) if c is None else (c["inputTokens"], c["outputTokens"], c["cacheReadTokens"],
                                                 c["cacheCreationTokens"], c["totalTokens"])
    ok = ours == theirs
    bad += not ok
    note = "" if c is not None else "  (not reported by ccusage: all zero)"
    print(f"{'ok  ' if ok else 'FAIL'} {rel:45} {sid}  in/out/cr/cw/total ccusage {'/'.join(map(str, theirs))}"
          f"  session-doctor {'/'.join(map(str, ours))}{note}")
for sid in sorted(set(rep) - ids):
    print(f"FAIL {rel}: ccusage reports {sid}, session-doctor does not"); bad += 1
sys.exit(1 if bad else 0)
PY
)" || fail=1
  echo "$out"
  n=$((n + $(echo "$out" | grep -c '^ok ' || true)))
done
echo "ccusage vs session-doctor (hermes): $n sessions equal$([ $fail = 0 ] && echo ', no difference' || echo ', DIFFERENCES above')"
exit "$fail"
