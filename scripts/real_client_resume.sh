#!/usr/bin/env bash
# Real-client check for `session-doctor compact`: a session wedged by HTTP 413 must resume in the
# real opencode 1.18.33 after compaction, against a stub that answers 413 above the same limit.
# Usage: scripts/real_client_resume.sh [BIN]    (BIN default: target/debug/session-doctor)
# Env: SD_WEDGED             fixture dir (default fixtures/opencode/wedged-413; never written)
#      SD_MAX_REQUEST_BYTES  request-body limit for the stub and for compact (default 150000: the
#                            limit the fixture was made with, see its PROVENANCE.md)
#      SD_SESSION            session id (default: the only session in the fixture)
#      SD_RESUME_COMPACTED_DB  test hook: resume this db instead of running `BIN compact` (used to
#                            check the resume mechanics with a hand-made copy before compact existed)
#      SD_CLIENTS            see install_clients.sh
#
# Steps, each printing PASS/FAIL:
#  1. control: a plain copy of the wedged fixture is resumed the same way and must stay wedged
#     (the stub answers 413, no new assistant message finishes without error) -- proves that the
#     resume check below can fail;
#  2. `BIN compact <fixture>/opencode.db --session ID --out TMP/out --max-request-bytes LIMIT
#     --format json` exits 0, prints JSON, writes TMP/out/opencode.db alone (integrity_check ok);
#  3. resume the compacted copy: it goes to $XDG_DATA_HOME/opencode/opencode.db of an isolated HOME,
#     the stub (tests/opencode-stub/stub_server.py, STUB_MAX_BODY_BYTES=LIMIT) listens on a free
#     loopback port that the global opencode.json points at, and
#     `opencode run -s ID "say hi"` runs from the session's directory. Required: exit 0; in
#     `opencode export ID` a new assistant message with finish "stop" and no new message with an
#     error; the stub saw at least one request and answered none with 413;
#  4. the fixture files are byte-identical afterwards (sha256 of every file under SD_WEDGED).
#
# Quirks found with opencode 1.18.33 (see fixtures/opencode/wedged-413/PROVENANCE.md):
# - The session's `directory` (here /tmp/session-doctor-wedged-413/proj) must exist: otherwise the
#   turn fails at once with UnknownError (server log: FileSystem.realPath ENOENT, from
#   SystemPrompt.environment) and no request is sent. It need not be a git repo nor hold any
#   file. This script creates it when missing and removes what it created.
# - Run from that directory: from another cwd the turn completes but `opencode run` does not exit
#   (timeout 124) unless `--dir <session dir>` is given.
# - The project config is disabled (OPENCODE_DISABLE_PROJECT_CONFIG=1); the provider config is the
#   global ~/.config/opencode/opencode.json of the isolated HOME, so the project dir stays empty.
# - `opencode run` reads stdin when it is not a TTY and appends it to the message: stdin is /dev/null.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
BIN="$(realpath -m "${1:-$root/target/debug/session-doctor}")"
FIX="$(realpath -m "${SD_WEDGED:-$root/fixtures/opencode/wedged-413}")"
LIMIT="${SD_MAX_REQUEST_BYTES:-150000}"
STUB="$root/tests/opencode-stub/stub_server.py"
CONFIG="$root/tests/opencode-stub/opencode.json"
eval "$("$here/install_clients.sh")"   # sets OPENCODE_BIN, CCUSAGE_BIN
[ -f "$FIX/opencode.db" ] || { echo "FAIL: no fixture db $FIX/opencode.db"; exit 2; }
if [ -z "${SD_RESUME_COMPACTED_DB:-}" ] && [ ! -x "$BIN" ]; then
  echo "FAIL: session-doctor binary not found: $BIN"; exit 2
fi

work="$(mktemp -d)"
STUB_PID=""
CREATED_DIR=""
# shellcheck disable=SC2317  # called from the trap
cleanup() {
  if [ -n "$STUB_PID" ]; then kill "$STUB_PID" 2>/dev/null || true; wait "$STUB_PID" 2>/dev/null || true; fi
  if [ -n "$CREATED_DIR" ]; then rm -rf "$CREATED_DIR"; fi
  rm -rf "$work"
}
trap cleanup EXIT

fixture_hashes() { find "$FIX" -type f -print0 | sort -z | xargs -0r sha256sum; }
before="$(fixture_hashes)"

# Reads of the fixture: immutable (the fixture is a checkpointed db without -wal; nothing is created).
SID="${SD_SESSION:-$(python3 - "$FIX/opencode.db" <<'EOF'
import sqlite3, sys
con = sqlite3.connect("file:%s?mode=ro&immutable=1" % sys.argv[1], uri=True)
ids = [r[0] for r in con.execute("SELECT id FROM session")]
print(ids[0] if len(ids) == 1 else "")
EOF
)}"
[ -n "$SID" ] || { echo "FAIL: the fixture does not hold exactly one session; set SD_SESSION"; exit 2; }
echo "session $SID, request-body limit $LIMIT bytes, opencode $OPENCODE_BIN"

# ensure_dir DIR: create DIR if missing (remember the top-most directory created, for cleanup).
ensure_dir() {
  local d="$1" top=""
  [ -d "$d" ] && return 0
  local p="$d"
  while [ ! -e "$p" ]; do top="$p"; p="$(dirname "$p")"; done
  mkdir -p "$d" || return 1
  [ -z "$CREATED_DIR" ] && CREATED_DIR="$top"
  return 0
}

# resume NAME DB: copy DB into an isolated data dir, start the stub, run one turn from the
# session's directory, export; writes $work/NAME/verdict.json. Returns non-zero on setup errors only.
resume() {
  local db="$2" dir="$work/$1" sessdir rc
  mkdir -p "$dir/home/.config/opencode" "$dir/home/.local/share/opencode"
  cp "$db" "$dir/home/.local/share/opencode/opencode.db" || return 1
  chmod u+w "$dir/home/.local/share/opencode/opencode.db"
  python3 - "$dir/home/.local/share/opencode/opencode.db" "$SID" >"$dir/before.json" <<'EOF' || return 1
import json, sqlite3, sys
con = sqlite3.connect(sys.argv[1])
row = con.execute("SELECT directory FROM session WHERE id = ?", (sys.argv[2],)).fetchone()
assert row, "session %s not in the copy" % sys.argv[2]
ids = [r[0] for r in con.execute("SELECT id FROM message WHERE session_id = ?", (sys.argv[2],))]
print(json.dumps({"directory": row[0], "messages": ids}))
EOF
  sessdir="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["directory"])' "$dir/before.json")" || return 1
  ensure_dir "$sessdir" || { echo "cannot create the session directory $sessdir"; return 1; }

  STUB_PORT=0 STUB_PORT_FILE="$dir/port" STUB_LOG="$dir/stub.jsonl" STUB_MAX_BODY_BYTES="$LIMIT" \
    python3 "$STUB" 2>"$dir/stub.err" &
  STUB_PID=$!
  for _ in $(seq 100); do [ -s "$dir/port" ] && break; sleep 0.1; done
  [ -s "$dir/port" ] || { echo "the stub did not start:"; cat "$dir/stub.err"; return 1; }
  sed "s#http://127.0.0.1:[0-9]*/v1#http://127.0.0.1:$(cat "$dir/port")/v1#" "$CONFIG" \
    >"$dir/home/.config/opencode/opencode.json"
  : >"$dir/stub.jsonl"

  set +e
  oc "$dir" "$sessdir" 180 run -s "$SID" "say hi" >"$dir/run.out" 2>&1
  rc=$?
  set -e
  kill "$STUB_PID" 2>/dev/null || true; wait "$STUB_PID" 2>/dev/null || true; STUB_PID=""
  oc "$dir" "$sessdir" 120 export "$SID" >"$dir/export.json" 2>"$dir/export.err" \
    || { echo "opencode export $SID failed:"; cat "$dir/export.err"; return 1; }

  python3 - "$dir" "$rc" "$LIMIT" >"$dir/verdict.json" <<'EOF' || return 1
import json, pathlib, sys
d, rc, limit = pathlib.Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
old = set(json.loads((d / "before.json").read_text())["messages"])
exp = json.loads((d / "export.json").read_text())
new = [m for m in exp["messages"] if m["info"]["id"] not in old]
reqs = [json.loads(l) for l in (d / "stub.jsonl").read_text().splitlines() if l.strip()]
ok = [m["info"]["id"] for m in new if m["info"]["role"] == "assistant"
      and m["info"].get("finish") == "stop" and not m["info"].get("error")]
errs = ["%s %s" % (m["info"]["id"], m["info"]["error"].get("name")) for m in new if m["info"].get("error")]
print(json.dumps({
    "rc": rc, "requests": len(reqs), "n413": sum(r.get("status") == 413 for r in reqs),
    "max_body": max([r["bytes"] for r in reqs] or [0]), "limit": limit,
    "bodies": ["%s:%d:%d" % (r.get("kind"), r["bytes"], r.get("status")) for r in reqs],
    "new_messages": len(new), "ok_assistants": ok, "errors": errs,
    "parts_of_new": sum(len(m["parts"]) for m in new)}))
EOF
}

# oc DIR CWD TIMEOUT ARGS...: the real opencode, offline, in the isolated HOME of DIR, from CWD.
oc() {
  local dir="$1" cwd="$2" t="$3"; shift 3
  ( cd "$cwd" && env -u OPENCODE_DB -u OPENCODE_CONFIG -u OPENCODE_CONFIG_DIR -u OPENCODE_CONFIG_CONTENT \
      HOME="$dir/home" XDG_DATA_HOME="$dir/home/.local/share" XDG_CONFIG_HOME="$dir/home/.config" \
      XDG_CACHE_HOME="$dir/home/.cache" XDG_STATE_HOME="$dir/home/.local/state" \
      OPENCODE_DISABLE_AUTOUPDATE=1 OPENCODE_DISABLE_MODELS_FETCH=1 OPENCODE_DISABLE_SHARE=1 \
      OPENCODE_DISABLE_DEFAULT_PLUGINS=1 OPENCODE_DISABLE_LSP_DOWNLOAD=1 OPENCODE_DISABLE_CLAUDE_CODE=1 \
      OPENCODE_DISABLE_EXTERNAL_SKILLS=1 OPENCODE_DISABLE_PROJECT_CONFIG=1 OPENCODE_DISABLE_CHANNEL_DB=1 \
      NO_COLOR=1 timeout "$t" "$OPENCODE_BIN" "$@" </dev/null )
}

# v NAME KEY: a field of NAME's verdict.
v() { python3 -c 'import json,sys; x=json.load(open(sys.argv[1]))[sys.argv[2]]; print(" ".join(x) if isinstance(x,list) else x)' "$work/$1/verdict.json" "$2"; }
summary() {
  echo "    rc=$(v "$1" rc), stub requests: $(v "$1" bodies) (kind:bytes:status; limit $LIMIT)"
  echo "    new messages: $(v "$1" new_messages); finished assistants: [$(v "$1" ok_assistants)]; errors: [$(v "$1" errors)]"
}

failed=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; failed=1; }

# 1. Control: the uncompacted copy must stay wedged.
if resume control "$FIX/opencode.db" >"$work/control.log" 2>&1; then
  summary control
  if [ "$(v control requests)" -ge 1 ] && [ "$(v control n413)" -ge 1 ] && [ -z "$(v control ok_assistants)" ]; then
    pass "control: the uncompacted copy stays wedged (413 from the stub, no finished assistant), so the resume check can fail"
  else
    fail "control: the uncompacted copy did not fail with 413 (the check below proves nothing)"
  fi
else
  cat "$work/control.log"; fail "control: setup error"
fi

# 2. Compact (or the test hook's db).
mkdir -p "$work/compacted"
compacted=""
if [ -n "${SD_RESUME_COMPACTED_DB:-}" ]; then
  echo "NOTE: SD_RESUME_COMPACTED_DB set: resuming $SD_RESUME_COMPACTED_DB instead of running compact"
  compacted="$SD_RESUME_COMPACTED_DB"
elif "$BIN" compact "$FIX/opencode.db" --session "$SID" --out "$work/out" --max-request-bytes "$LIMIT" \
       --format json >"$work/compact.json" 2>"$work/compact.err"; then
  extra="$( [ -d "$work/out" ] && find "$work/out" -mindepth 1 ! -name opencode.db ! -name .session-doctor-copies.json ! -name .session-doctor.lock -printf '%f ' || true)"
  if [ ! -f "$work/out/opencode.db" ]; then
    fail "compact: exit 0 but no $work/out/opencode.db"
  elif [ -n "$extra" ]; then
    fail "compact: unexpected files in the out dir: $extra"
  elif ! python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$work/compact.json" 2>/dev/null; then
    fail "compact: --format json output is not JSON"
  elif ! python3 - "$work/out/opencode.db" <<'EOF'
import sqlite3, sys
con = sqlite3.connect("file:%s?mode=ro&immutable=1" % sys.argv[1], uri=True)
sys.exit(con.execute("PRAGMA integrity_check").fetchone()[0] != "ok")
EOF
  then
    fail "compact: the copy fails integrity_check"
  else
    pass "compact: exit 0, JSON report, out dir holds opencode.db alone, integrity_check ok"
    compacted="$work/out/opencode.db"
  fi
else
  sed 's/^/    /' "$work/compact.err" | head -n 20
  fail "compact: $BIN compact exited non-zero"
fi

# 3. Resume the compacted copy.
if [ -n "$compacted" ]; then
  if resume compacted "$compacted" >"$work/compacted.log" 2>&1; then
    summary compacted
    if [ "$(v compacted rc)" = 0 ] && [ -n "$(v compacted ok_assistants)" ] && [ -z "$(v compacted errors)" ] \
       && [ "$(v compacted requests)" -ge 1 ] && [ "$(v compacted n413)" = 0 ]; then
      pass "resume: the compacted copy resumes in opencode (exit 0, assistant finished \"stop\", no error, no 413; largest request $(v compacted max_body) of $LIMIT bytes)"
    else
      sed 's/^/    | /' "$work/compacted/run.out" | tail -n 5
      fail "resume: the compacted copy did not resume cleanly"
    fi
  else
    cat "$work/compacted.log"; fail "resume: setup error"
  fi
else
  fail "resume: no compacted copy to resume"
fi

# 4. The fixture is untouched.
if [ -n "$before" ] && [ "$(fixture_hashes)" = "$before" ]; then
  pass "fixture unchanged (sha256 of every file under $FIX)"
else
  fail "fixture changed or missing under $FIX"
fi
exit "$failed"
