#!/usr/bin/env bash
# Real-client check for hermes-agent: the real hermes-agent 0.19.0 (PyPI, in a venv installed by
# scripts/install_clients.sh hermes) opens and resumes COPIES of hermes state.db files against the
# loopback OpenAI-compatible stub of shared/tools/hermes-gen (127.0.0.1 only; no network).
#
# Usage:
#   scripts/real_client_hermes.sh [GLOBAL...] DB SESSION [CASE-OPTS...] [DB SESSION [CASE-OPTS...]]...
#   scripts/real_client_hermes.sh [GLOBAL...] --shared     # every shared hermes db (scripts/hermes/shared_cases.txt)
# Several DB/SESSION pairs run in ONE invocation, in parallel (hermes needs 10-25 s to start).
# DB is never written: each check works on its own copies (with DB-wal / DB-shm when they exist).
#
# CASE-OPTS (apply to the DB SESSION pair before them):
#   --max-body BYTES     the stub answers HTTP 413 to any request body larger than BYTES
#                        (STUB_MAX_BODY_BYTES); the largest body the stub saw is always printed
#   --expect-fail        the case passes only if the turn does NOT complete (non-zero exit or no new
#                        assistant row), as with a wedged session
#   --config FILE        hermes config.yaml to start from (e.g. the one a generator saved beside the
#                        db: compression.in_place, agent.image_input_mode, model.supports_vision);
#                        the model is always re-pointed at the stub. Default: rotation mode, 64K window.
#   --prompt TEXT        the user turn (default "continue")
#   --name NAME          label in the output (default: parent dir of DB)
#   --no-resume          only run check (a) (SessionDB open/list/load), skip the hermes turn
# GLOBAL:
#   -j N                 parallel cases (default 3)
#   --timeout SECS       per hermes run (default 300)
#   --keep               keep the work dir (printed) for inspection
#   --json FILE          also write one JSON object per case to FILE
#
# Per case:
#   (a) python (hermes venv) opens a copy with hermes' own SessionDB in a private HERMES_HOME:
#       get_session, list_sessions_rich (as `hermes sessions list`), resolve_resume_session_id,
#       get_messages_as_conversation(repair_alternation=True) (what --resume loads), get_resume_conversations,
#       export_session, PRAGMA integrity_check, FTS5 integrity-check and FTS/messages rowid sync
#       (scripts/hermes/sessiondb_check.py); then `hermes sessions list` (the CLI) must show the id
#       --resume lands on, when the session is listable. Any failure fails the case.
#   (b) `hermes chat -Q -q "continue" --yolo --resume SESSION` with HERMES_HOME=HOME=a temp dir holding
#       another copy as state.db and a config.yaml pointing at a private stub; passes when hermes exits 0,
#       wrote a new assistant row, and resumed the session SessionDB.resolve_resume_session_id chose.
#   (c) the stub's request log: number of requests, 413s, largest body (and first main body).
# Output: one block per case, then "N passed, M failed"; exit 1 if any case failed.
# Env: HERMES_BIN / HERMES_PY (else installed via scripts/install_clients.sh hermes), SD_SHARED
#      (default ../shared beside the checkout), STUB_BIG_PROMPT_TOKENS (passed to the stub).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
SHARED="${SD_SHARED:-$root/../shared}"
STUB="$SHARED/tools/hermes-gen/stub_openai_server.py"
HX="$here/hermes"

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2; }

jobs=3; timeout_s=300; keep=0; json_out=""
C_DB=(); C_SID=(); C_MAX=(); C_FAIL=(); C_CFG=(); C_PROMPT=(); C_NAME=(); C_NORES=()
add_case() {
  C_DB+=("$1"); C_SID+=("$2"); C_MAX+=(0); C_FAIL+=(0); C_CFG+=("-"); C_PROMPT+=("continue")
  C_NAME+=("$(basename "$(dirname "$(realpath -m "$1")")")"); C_NORES+=(0)
}
set_last() { local -n arr="$1"; [ "${#C_DB[@]}" -gt 0 ] || { echo "real_client_hermes: $3 before any DB SESSION" >&2; exit 2; }; arr[$((${#C_DB[@]} - 1))]="$2"; }
load_shared() {
  local line f
  while IFS= read -r line; do
    line="${line%%#*}"; [ -n "${line// }" ] || continue
    # shellcheck disable=SC2206
    f=($line)
    add_case "$SHARED/real-sessions/${f[1]}" "${f[2]}"
    set_last C_NAME "${f[0]}" --shared
    local i=3
    while [ $i -lt ${#f[@]} ]; do
      case "${f[$i]}" in
        --max-body) set_last C_MAX "${f[$((i+1))]}" --max-body; i=$((i+2)) ;;
        --expect-fail) set_last C_FAIL 1 --expect-fail; i=$((i+1)) ;;
        --config) set_last C_CFG "$SHARED/real-sessions/${f[$((i+1))]}" --config; i=$((i+2)) ;;
        *) echo "real_client_hermes: bad option ${f[$i]} in shared_cases.txt" >&2; exit 2 ;;
      esac
    done
  done < "$HX/shared_cases.txt"
}

while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage ;;
    -j) jobs="$2"; shift 2 ;;
    --timeout) timeout_s="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    --json) json_out="$2"; shift 2 ;;
    --shared) load_shared; shift ;;
    --max-body) set_last C_MAX "$2" "$1"; shift 2 ;;
    --expect-fail) set_last C_FAIL 1 "$1"; shift ;;
    --config) set_last C_CFG "$(realpath "$2")" "$1"; shift 2 ;;
    --prompt) set_last C_PROMPT "$2" "$1"; shift 2 ;;
    --name) set_last C_NAME "$2" "$1"; shift 2 ;;
    --no-resume) set_last C_NORES 1 "$1"; shift ;;
    -*) echo "real_client_hermes: unknown option $1" >&2; usage ;;
    *) [ $# -ge 2 ] || { echo "real_client_hermes: DB $1 needs a SESSION" >&2; exit 2; }
       add_case "$1" "$2"; shift 2 ;;
  esac
done
[ "${#C_DB[@]}" -gt 0 ] || usage
for i in "${!C_DB[@]}"; do
  [ -f "${C_DB[$i]}" ] || { echo "real_client_hermes: no such db: ${C_DB[$i]}" >&2; exit 2; }
done
[ -f "$STUB" ] || { echo "real_client_hermes: stub not found: $STUB (set SD_SHARED)" >&2; exit 2; }

if [ -z "${HERMES_BIN:-}" ] || [ -z "${HERMES_PY:-}" ]; then
  eval "$(bash "$here/install_clients.sh" hermes)"
fi
[ -x "$HERMES_BIN" ] && [ -x "$HERMES_PY" ] || { echo "real_client_hermes: hermes not installed" >&2; exit 1; }

work="$(mktemp -d "${TMPDIR:-/tmp}/sd-hermes.XXXXXX")"
STUB_PIDS="$work/stub_pids"; : > "$STUB_PIDS"
cleanup() {
  local p
  while read -r p; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done < "$STUB_PIDS"
  wait 2>/dev/null || true
  if [ "$keep" = 1 ]; then echo "real_client_hermes: work dir kept: $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
copy_db() {  # copy_db SRC DESTDIR : the db plus its -wal/-shm, as state.db, writable
  cp "$1" "$2/state.db"
  local s; for s in wal shm; do [ -f "$1-$s" ] && cp "$1-$s" "$2/state.db-$s"; done
  chmod u+w "$2"/state.db*
}

run_case() {  # run_case INDEX PORT
  local i="$1" port="$2" w="$work/case$1"
  local db="${C_DB[$i]}" sid="${C_SID[$i]}"
  mkdir -p "$w/chkhome" "$w/home" "$w/cwd"
  copy_db "$db" "$w/chkhome"
  copy_db "$db" "$w/home"
  # (a) hermes' own SessionDB on a private copy, then the `hermes sessions list` CLI on it
  local arc=0
  env -i PATH="$PATH" HOME="$w/chkhome" HERMES_HOME="$w/chkhome" LANG=C.UTF-8 TZ=UTC \
    "$HERMES_PY" "$HX/sessiondb_check.py" "$w/chkhome/state.db" "$sid" > "$w/check.json" 2> "$w/check.err" || arc=$?
  echo "$arc" > "$w/check.rc"
  env -i PATH="$PATH" HOME="$w/chkhome" HERMES_HOME="$w/chkhome" LANG=C.UTF-8 TERM=dumb TZ=UTC COLUMNS=200 \
    timeout 120 "$HERMES_BIN" sessions list --limit 100000 > "$w/sessions_list.out" 2>&1 || true
  if [ "${C_NORES[$i]}" = 1 ]; then echo skipped > "$w/resume.skipped"; return 0; fi
  # (b) a real hermes turn against a private stub
  python3 "$HX/case_report.py" snapshot "$w/home/state.db" > "$w/before.json"
  "$HERMES_PY" "$HX/make_config.py" "${C_CFG[$i]}" "$port" "$w/home/config.yaml"
  python3 -c 'import json,sys,time; open(sys.argv[1],"w").write(json.dumps({"ts":time.time()+86400,"behind":0,"rev":None,"ver":"0.19.0"}))' \
    "$w/home/.update_check"
  STUB_LOG="$w/stub.jsonl" STUB_MAX_BODY_BYTES="${C_MAX[$i]}" STUB_SLOW_SECONDS=1 \
    python3 "$STUB" "$port" > "$w/stub.out" 2>&1 &
  local stub_pid=$!
  echo "$stub_pid" >> "$STUB_PIDS"
  local k
  for k in $(seq 100); do
    python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/v1/models', timeout=1)" 2>/dev/null && break
    sleep 0.1
  done
  local rc=0 t0 t1
  t0=$(date +%s)
  ( cd "$w/cwd" && env -i PATH="$PATH" HOME="$w/home" HERMES_HOME="$w/home" LANG=C.UTF-8 TERM=dumb TZ=UTC \
      OPENAI_API_KEY=sk-stub-local \
      HTTP_PROXY=http://127.0.0.1:9 HTTPS_PROXY=http://127.0.0.1:9 ALL_PROXY=http://127.0.0.1:9 \
      http_proxy=http://127.0.0.1:9 https_proxy=http://127.0.0.1:9 \
      NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost \
      timeout "$timeout_s" "$HERMES_BIN" chat -Q -q "${C_PROMPT[$i]}" --yolo --resume "$sid" \
      > "$w/hermes.out" 2>&1 ) || rc=$?
  t1=$(date +%s)
  echo $((t1 - t0)) > "$w/secs"
  kill "$stub_pid" 2>/dev/null || true
  wait "$stub_pid" 2>/dev/null || true
  local expect_resumed
  expect_resumed="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("resolved") or "")' "$w/check.json" 2>/dev/null || true)"
  python3 "$HX/case_report.py" verdict "$w/before.json" "$w/home/state.db" "$w/hermes.out" "$w/stub.jsonl" \
    "$rc" "${C_FAIL[$i]}" "$expect_resumed" > "$w/verdict.json" || true
}

# start the cases, at most $jobs at a time
declare -A used_ports=()
running=0
for i in "${!C_DB[@]}"; do
  port="$(free_port)"; while [ -n "${used_ports[$port]:-}" ]; do port="$(free_port)"; done
  used_ports[$port]=1
  run_case "$i" "$port" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then wait -n || true; running=$((running - 1)); fi
done
wait || true

pass=0; fail=0
[ -n "$json_out" ] && : > "$json_out"
for i in "${!C_DB[@]}"; do
  w="$work/case$i"
  python3 - "$w" "${C_NAME[$i]}" "${C_SID[$i]}" "${C_MAX[$i]}" "${C_FAIL[$i]}" "${json_out:-}" <<'PY' && pass=$((pass + 1)) || fail=$((fail + 1))
import json, os, sys
w, name, sid, maxb, xfail, jout = sys.argv[1:7]
def load(p):
    try:
        return json.load(open(os.path.join(w, p)))
    except Exception:
        return None
chk = load("check.json") or {"errors": ["sessiondb_check produced no JSON: " + open(os.path.join(w, "check.err"), errors="replace").read()[-400:]]}
chk_rc = int(open(os.path.join(w, "check.rc")).read().strip() or 1) if os.path.exists(os.path.join(w, "check.rc")) else 1
skipped = os.path.exists(os.path.join(w, "resume.skipped"))
ver = load("verdict.json")
secs = open(os.path.join(w, "secs")).read().strip() if os.path.exists(os.path.join(w, "secs")) else "?"
# `hermes sessions list` shows one row per conversation, under the id --resume lands on
try:
    listing = open(os.path.join(w, "sessions_list.out"), errors="replace").read()
except Exception:
    listing = ""
resolved = chk.get("resolved")
cli_listed = bool(resolved) and resolved in listing
if chk.get("listed") and resolved and not cli_listed:
    chk.setdefault("errors", []).append(f"`hermes sessions list` does not show {resolved}")
ok_a = chk_rc == 0 and not chk.get("errors")
ok_b = skipped or bool(ver and ver.get("pass"))
tag = "PASS" if ok_a and ok_b else "FAIL"
print(f"== {tag} {name} {sid}" + (f"  [max-body {maxb}]" if maxb != "0" else "") + ("  [expect-fail]" if xfail == "1" else ""))
if chk.get("errors"):
    print(f"   (a) SessionDB: FAILED: {'; '.join(chk['errors'])}")
else:
    print(f"   (a) SessionDB: listed={chk.get('listed')} resolved={chk.get('resolved')} "
          f"loaded={chk.get('loaded_messages')} msgs ({chk.get('loaded_roles')}) "
          f"rows(all/active)={chk.get('rows_all')}/{chk.get('rows_active')} "
          f"unmatched_calls={chk.get('unmatched_calls')} integrity={chk.get('integrity_check')} fts=in sync "
          f"cli_list={'yes' if cli_listed else 'no'}")
if skipped:
    print("   (b) resume: skipped (--no-resume)")
elif not ver:
    print("   (b) resume: FAILED: no verdict (see hermes.out with --keep)")
else:
    st = ver["stub"]
    print(f"   (b) resume: rc={ver['rc']} {secs}s resumed={ver['resumed']} final={ver['final_session']} "
          f"completed={ver['turn_completed']} rows {ver['rows_before']}->{ver['rows_after']} "
          f"(+{ver['new_rows']} {ver['new_roles']}) new_sessions={len(ver['new_sessions'])}")
    print(f"   (c) stub: requests={st['requests']} (main {st['main_requests']}, summary {st['summary_requests']}) "
          f"413s={st['status_413']} largest_body={st['max_body']} first_main_body={st['first_main_body']} "
          f"({st['first_main_messages']} msgs) bodies={st['bodies']}")
    for p in ver.get("problems", []):
        print(f"   problem: {p}")
    if not ver.get("pass"):
        try:
            tail = open(os.path.join(w, "hermes.out"), errors="replace").read().strip().splitlines()[-6:]
            for l in tail:
                print(f"   | {l[:200]}")
        except Exception:
            pass
if jout:
    with open(jout, "a") as f:
        f.write(json.dumps({"name": name, "session": sid, "max_body": int(maxb), "expect_fail": xfail == "1",
                            "pass": ok_a and ok_b, "check": chk, "resume": ver}) + "\n")
sys.exit(0 if ok_a and ok_b else 1)
PY
done
echo "hermes real-client: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
