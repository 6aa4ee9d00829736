#!/usr/bin/env bash
# Per-session token totals that ccusage 20.0.24 reports for every shared hermes state.db
# (`ccusage hermes session --offline --json`), each read from a private COPY: ccusage opens
# $HERMES_HOME/state.db read-only but still leaves state.db-wal / state.db-shm beside it.
# Usage: scripts/hermes/ccusage_table.sh           print the table (the format of ccusage_expected.txt)
#        scripts/hermes/ccusage_table.sh --check   fail unless it equals scripts/hermes/ccusage_expected.txt
# Env: SD_SHARED (default ../shared beside the checkout), CCUSAGE_BIN (else scripts/install_clients.sh).
# Columns: db (relative to real-sessions/), session id, input, output, cache read, cache write,
# reasoning (= ccusage totalTokens - the four others: ccusage adds sessions.reasoning_tokens to the
# total but prints no reasoning field), total. Sessions whose usage columns are all 0 are not
# reported by ccusage; they are listed as '#' comment lines.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$(dirname "$here")")"
REAL="${SD_SHARED:-$root/../shared}/real-sessions"
[ -n "${CCUSAGE_BIN:-}" ] || eval "$(bash "$root/scripts/install_clients.sh")"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
out="$work/table.txt"
{
  printf '# ccusage 20.0.24 `hermes session --offline --json`, one private copy of each shared state.db\n'
  printf '# db\tsession\tinput\toutput\tcache_read\tcache_write\treasoning\ttotal\n'
} > "$out"
for db in "$REAL"/hermes/*/state.db "$REAL"/hermes-gen/*/state.db; do
  rel="${db#"$REAL"/}"
  h="$work/h"; rm -rf "$h" "$work/home"; mkdir -p "$h" "$work/home"
  cp "$db" "$h/state.db"; chmod u+w "$h/state.db"
  env -i PATH="$PATH" HOME="$work/home" HERMES_HOME="$h" NO_COLOR=1 TZ=UTC \
    HTTPS_PROXY=http://127.0.0.1:9 HTTP_PROXY=http://127.0.0.1:9 \
    timeout 120 "$CCUSAGE_BIN" hermes session --offline --json > "$work/cc.json" 2> "$work/cc.err" \
    || { echo "ccusage failed on $rel:" >&2; cat "$work/cc.err" >&2; exit 1; }
  python3 - "$rel" "$work/cc.json" "$h/state.db" >> "$out" <<'PY'
import json, sqlite3, sys
rel, js, db = sys.argv[1:4]
rep = {s["sessionId"]: s for s in json.load(open(js)).get("sessions", [])}
con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
ids = [r[0] for r in con.execute("SELECT id FROM sessions ORDER BY started_at, id")]
con.close()
for sid in ids:
    s = rep.get(sid)
    if s is None:
        print(f"# {rel}\t{sid}\tnot reported by ccusage")
        continue
    i, o, cr, cw, t = (s["inputTokens"], s["outputTokens"], s["cacheReadTokens"],
                       s["cacheCreationTokens"], s["totalTokens"])
    print(f"{rel}\t{sid}\t{i}\t{o}\t{cr}\t{cw}\t{t - i - o - cr - cw}\t{t}")
extra = set(rep) - set(ids)
if extra:
    sys.exit(f"ccusage reported sessions not in {rel}: {sorted(extra)}")
PY
done
if [ "${1:-}" = "--check" ]; then
  diff -u "$here/ccusage_expected.txt" "$out" && echo "ccusage hermes table: matches ccusage_expected.txt"
else
  cat "$out"
fi
