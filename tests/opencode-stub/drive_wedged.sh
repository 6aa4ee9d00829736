#!/usr/bin/env bash
# Drives the REAL opencode 1.18.33 against the loopback stub (stub_server.py, with a request-body
# limit) until a session is wedged by HTTP 413, and saves it as a fixture.
#
# Usage: tests/opencode-stub/drive_wedged.sh [OUT_DIR]     (default: fixtures/opencode/wedged-413)
# Env:   OPENCODE_BIN        opencode binary (default: from scripts/install_clients.sh)
#        STUB_MAX_BODY_BYTES the stub's request-body limit (default 150000)
#        BIG_BYTES           size of the oversized user text, fed on stdin (default 160000)
#        SD_WEDGED_PROJ      project dir (default /tmp/session-doctor-wedged-413/proj; a fixed path,
#                            because it is stored in the session and must exist when it is resumed)
#        WORK                scratch dir for HOME/XDG dirs and logs (default: mktemp -d; kept)
#        OC_TIMEOUT          timeout per opencode call in seconds (default 120)
#
# Turns (each `opencode run` under `timeout`, stdin from /dev/null unless noted, cwd = project dir):
#   1 run "Hello stub, please say hi"                           -> ok
#   2 run -s SID "List the files. TOOL:bash ls -la"              -> ok (bash tool call)
#   3 run -s SID "Turn 3 BIGTEXT"                                -> ok (~5 KB answer)
#   4 run -s SID "Please summarize this log:" < big.txt          -> 413, overflow compaction, ... rc 1
#   5 run -s SID "Small follow-up: are you there?"               -> 413 again: the session is wedged
# `opencode run` appends stdin (when it is not a TTY) to the message after a newline; the
# oversized text goes through stdin because one argv string is limited to 128 KiB on Linux.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
OUT="$(realpath -m "${1:-$root/fixtures/opencode/wedged-413}")"
LIMIT="${STUB_MAX_BODY_BYTES:-150000}"
BIG="${BIG_BYTES:-160000}"
PROJ="${SD_WEDGED_PROJ:-/tmp/session-doctor-wedged-413/proj}"
OC_TIMEOUT="${OC_TIMEOUT:-120}"
if [ -z "${OPENCODE_BIN:-}" ]; then eval "$("$root/scripts/install_clients.sh")"; fi
WORK="${WORK:-$(mktemp -d)}"
mkdir -p "$WORK"
LOG="$WORK/run.log"
: >"$LOG"

# The project dir is a fixed path: only ever delete a tree this script made (marker file).
marker="$(dirname "$PROJ")/.session-doctor-wedged-413"
if [ -e "$PROJ" ]; then
  [ -f "$marker" ] || { echo "drive_wedged: $PROJ exists and was not made by this script" >&2; exit 1; }
  rm -rf "$PROJ"
fi
mkdir -p "$PROJ" && touch "$marker"

export HOME="$WORK/home"
export XDG_DATA_HOME="$HOME/.local/share" XDG_CONFIG_HOME="$HOME/.config" \
       XDG_CACHE_HOME="$HOME/.cache" XDG_STATE_HOME="$HOME/.local/state"
export OPENCODE_DISABLE_AUTOUPDATE=1 OPENCODE_DISABLE_MODELS_FETCH=1 OPENCODE_DISABLE_SHARE=1 \
       OPENCODE_DISABLE_DEFAULT_PLUGINS=1 OPENCODE_DISABLE_LSP_DOWNLOAD=1 OPENCODE_DISABLE_CLAUDE_CODE=1 \
       OPENCODE_DISABLE_EXTERNAL_SKILLS=1 OPENCODE_DISABLE_PROJECT_CONFIG=1 OPENCODE_DISABLE_CHANNEL_DB=1 \
       NO_COLOR=1
unset OPENCODE_DB OPENCODE_CONFIG OPENCODE_CONFIG_DIR OPENCODE_CONFIG_CONTENT
rm -rf "$HOME"; mkdir -p "$XDG_CONFIG_HOME/opencode" "$XDG_DATA_HOME"
DB="$XDG_DATA_HOME/opencode/opencode.db"

# Stub on a free loopback port.
export STUB_LOG="$WORK/stub_requests.jsonl" STUB_MAX_BODY_BYTES="$LIMIT"
rm -f "$STUB_LOG" "$WORK/port"
STUB_PORT=0 STUB_PORT_FILE="$WORK/port" python3 "$here/stub_server.py" 2>"$WORK/stub.err" &
STUB_PID=$!
trap 'kill "$STUB_PID" 2>/dev/null || true; wait "$STUB_PID" 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -s "$WORK/port" ] && break; sleep 0.1; done
PORT="$(cat "$WORK/port")"
# Global config (the project config is disabled): provider baseURL -> the stub's port.
sed "s#http://127.0.0.1:[0-9]*/v1#http://127.0.0.1:$PORT/v1#" "$here/opencode.json" \
  >"$XDG_CONFIG_HOME/opencode/opencode.json"

# Git project with a fixed root commit (project id = root commit hash, so it is reproducible).
( cd "$PROJ" && git init -q && git config user.email stub@example.invalid && git config user.name stub \
    && printf 'hello world\nsecond line\n' >hello.txt && git add -A \
    && GIT_AUTHOR_DATE=2026-01-01T00:00:00Z GIT_COMMITTER_DATE=2026-01-01T00:00:00Z git commit -qm init )

python3 - "$BIG" >"$WORK/big.txt" <<'EOF'
import sys
n = int(sys.argv[1]); out = []; i = 0
while sum(map(len, out)) < n:
    i += 1
    out.append(("log line %05d: the quick brown fox jumps over the lazy dog; bytes counted by session-doctor" % i).ljust(99, ".") + "\n")
sys.stdout.write("".join(out)[:n])
EOF

{
  echo "# drive_wedged.sh $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "# opencode $("$OPENCODE_BIN" --version 2>/dev/null) ($OPENCODE_BIN)"
  echo "# stub: tests/opencode-stub/stub_server.py on 127.0.0.1:$PORT, STUB_MAX_BODY_BYTES=$LIMIT"
  echo "# project dir: $PROJ (git, root commit $(cd "$PROJ" && git rev-parse HEAD))"
  echo "# big.txt: $(wc -c <"$WORK/big.txt") bytes, sha256 $(sha256sum "$WORK/big.txt" | cut -c1-64)"
  echo "# env: HOME/XDG_* under a temp dir; OPENCODE_DISABLE_{AUTOUPDATE,MODELS_FETCH,SHARE,DEFAULT_PLUGINS,LSP_DOWNLOAD,CLAUDE_CODE,EXTERNAL_SKILLS,PROJECT_CONFIG,CHANNEL_DB}=1 NO_COLOR=1"
} >>"$LOG"

# turn LABEL STDIN_FILE ARGS...: one `opencode run` from the project dir, logged with rc and
# the stub requests it caused.
turn() {
  local label="$1" in="$2" n0 rc; shift 2
  n0=$( [ -f "$STUB_LOG" ] && wc -l <"$STUB_LOG" || echo 0)
  printf '\n## %s\n$ cd %s && timeout %s opencode run' "$label" "$PROJ" "$OC_TIMEOUT" >>"$LOG"
  printf ' %q' "$@" >>"$LOG"; [ "$in" = /dev/null ] && echo " </dev/null" >>"$LOG" || echo " <big.txt" >>"$LOG"
  set +e
  ( cd "$PROJ" && timeout "$OC_TIMEOUT" "$OPENCODE_BIN" run "$@" <"$in" ) >"$WORK/out.txt" 2>&1
  rc=$?
  set -e
  sed -e 's/\x1b\[[0-9;]*m//g' "$WORK/out.txt" | sed 's/^/  | /' >>"$LOG"
  echo "rc=$rc" >>"$LOG"
  python3 - "$STUB_LOG" "$n0" >>"$LOG" <<'EOF'
import json, sys
for i, l in enumerate(open(sys.argv[1]).read().splitlines()[int(sys.argv[2]):]):
    r = json.loads(l)
    print("  stub #%-3d %-10s status=%d body=%7d bytes  msgs=%-3d overhead=%6d (system %d, tools %d)"
          % (r["n"], r["kind"], r["status"], r["bytes"], r["nmsgs"], r["overhead_bytes"], r["sys_bytes"], r["tools_bytes"]))
EOF
  echo "$label rc=$rc" >&2
}

turn "turn 1" /dev/null "Hello stub, please say hi"
SID="$(cd "$PROJ" && timeout "$OC_TIMEOUT" "$OPENCODE_BIN" session list --format json </dev/null \
        | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')"
echo "# session: $SID" >>"$LOG"
turn "turn 2" /dev/null -s "$SID" "List the files. TOOL:bash ls -la"
turn "turn 3" /dev/null -s "$SID" "Turn 3 BIGTEXT"
turn "turn 4 (oversized user text on stdin)" "$WORK/big.txt" -s "$SID" "Please summarize this log:"
turn "turn 5 (small follow-up)" /dev/null -s "$SID" "Small follow-up: are you there?"

# Save: checkpointed copy via the backup API (no -wal/-shm), the export, the logs.
# Only the files written here are replaced (a hand-written PROVENANCE.md stays).
mkdir -p "$OUT/exports"
rm -f "$OUT/opencode.db" "$OUT/opencode.db-wal" "$OUT/opencode.db-shm" "$OUT/run.log" "$OUT/stub_requests.jsonl" "$OUT"/exports/ses_*.json
python3 - "$DB" "$OUT/opencode.db" <<'EOF'
import sqlite3, sys
src = sqlite3.connect(sys.argv[1])
src.execute("PRAGMA wal_checkpoint(TRUNCATE)")
dst = sqlite3.connect(sys.argv[2])
src.backup(dst)
dst.close(); src.close()
chk = sqlite3.connect("file:%s?mode=ro&immutable=1" % sys.argv[2], uri=True)
assert chk.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
EOF
for f in "$OUT/opencode.db-wal" "$OUT/opencode.db-shm"; do [ ! -e "$f" ] || { echo "drive_wedged: $f left behind" >&2; exit 1; }; done
( cd "$PROJ" && timeout "$OC_TIMEOUT" "$OPENCODE_BIN" export "$SID" </dev/null ) >"$OUT/exports/$SID.json" 2>/dev/null
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$OUT/exports/$SID.json"

# Facts about the stored session (appended to run.log).
python3 - "$OUT/opencode.db" "$STUB_LOG" "$LIMIT" >>"$LOG" <<'EOF'
import json, sqlite3, sys
con = sqlite3.connect("file:%s?mode=ro&immutable=1" % sys.argv[1], uri=True)
limit = int(sys.argv[3])
print("\n## stored session (opencode.db)")
for sid, d, pid in con.execute("select id, directory, project_id from session"):
    print("session %s directory=%s project=%s" % (sid, d, pid))
for mid, data in con.execute("select id, data from message order by time_created, id"):
    m = json.loads(data)
    parts = con.execute("select id, data from part where message_id=? order by id", (mid,)).fetchall()
    err = (m.get("error") or {}).get("name")
    print("%s %-9s %s%s finish=%s error=%s tokens=%s parts=%d" % (
        mid, m["role"], "summary " if m.get("summary") is True else "", "parent=%s" % m.get("parentID") if m.get("parentID") else "",
        m.get("finish"), err, (m.get("tokens") or {}).get("total", (m.get("tokens") or {}).get("input")), len(parts)))
    for pid, pd in parts:
        p = json.loads(pd)
        x = ""
        if p["type"] == "text":
            x = "%d chars %r" % (len(p["text"]), p["text"][:40])
        elif p["type"] == "compaction":
            x = json.dumps({k: v for k, v in p.items() if k != "type"})
        print("    %s %-11s %7d B  %s" % (pid, p["type"], len(pd), x))
print("event rows: %d, %d bytes; part bytes %d; message bytes %d" % (
    con.execute("select count(*) from event").fetchone()[0], con.execute("select sum(length(data)) from event").fetchone()[0],
    con.execute("select sum(length(data)) from part").fetchone()[0], con.execute("select sum(length(data)) from message").fetchone()[0]))
reqs = [json.loads(l) for l in open(sys.argv[2])]
chat = [r for r in reqs if r["kind"] == "chat"]
print("\n## stub requests: %d (%d answered 413)" % (len(reqs), sum(r["status"] == 413 for r in reqs)))
for k in ("chat", "compaction", "title"):
    o = sorted({r["overhead_bytes"] for r in reqs if r["kind"] == k})
    print("headroom (body bytes - conversation bytes) of %s requests: %s" % (k, o))
ok = [r["bytes"] for r in chat if r["status"] == 200]
if ok:
    print("successful chat request bodies: %d..%d bytes; limit %d; chat headroom = %.1f%% of the limit"
          % (min(ok), max(ok), limit, 100.0 * chat[0]["overhead_bytes"] / limit))
EOF
cp "$LOG" "$OUT/run.log"
cp "$STUB_LOG" "$OUT/stub_requests.jsonl"
echo "drive_wedged: session $SID saved to $OUT (work dir $WORK)" >&2
