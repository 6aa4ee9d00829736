#!/usr/bin/env bash
# Real-client check: the copies written by `session-doctor repair` must load in the real opencode.
# Usage: scripts/real_client_opencode.sh [BIN]    (BIN default: target/debug/session-doctor)
# Env: SD_FIXTURES (default fixtures/opencode), SD_OC_CASES (default "stale-parent compact kilo image errors"),
#      SD_CLIENTS (see install_clients.sh).
# A case written NAME:ARGS runs `compact NAME/<db> ARGS` instead of `repair` (copies shrunk by
# strip/truncate/cut-history steps must load too); the default list has three such cases.
#
# Per case: repair fixtures/opencode/<case>/<db> --out <tmp> --format json; the out dir must hold
# the db alone and pass integrity_check; the copy goes to an isolated $XDG_DATA_HOME/opencode/opencode.db;
# `opencode export <id>` (offline, under timeout) must exit 0 with valid JSON holding every message row;
# `opencode import` of that export into a fresh data dir (which schema-checks every message and part)
# and a re-export must keep the messages and parts; every parentID change reported by repair must show in
# the export. The fixtures must be byte-identical afterwards.
#
# Quirks found with opencode 1.18.33:
# - export needs no config, no network and no git project: ~2 s from an empty non-git cwd; strace saw no
#   connect(); it creates ~/.config/opencode/{opencode.jsonc,.gitignore}, ~/.local/state/opencode/locks,
#   an empty log and -wal/-shm beside the db (all inside the isolated HOME here).
# - Kilo: a kilo.db (Kilo 7.7.7) placed as $XDG_DATA_HOME/opencode/opencode.db exports fine, and the
#   messages equal Kilo's own export (checked on shared/real-sessions/opencode/kilo); opencode runs no
#   migration on it (its 38 ids are a subset of Kilo's 42). So kilo copies are checked by renaming,
#   which is what this script does for an out dir holding kilo.db.
# - `opencode export` does not schema-check rows (a part {"type":"bogus"} is printed as is); `opencode
#   import` does ("Expected Part, got ...", exit 1), hence the import + re-export round trip. Import drops
#   fields its schema does not know, even in opencode's own data (`synthetic` on file parts in `image`;
#   Kilo's step-start `time`, step-finish `metrics`/`time`), so only message ids, roles, parentIDs and
#   part ids/types are compared after the round trip.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
BIN="$(realpath -m "${1:-$root/target/debug/session-doctor}")"
FIX="$(realpath -m "${SD_FIXTURES:-$root/fixtures/opencode}")"
DEFAULT_CASES="stale-parent compact kilo image errors
prune:--session=ses_dfd1d09a7ffe1KlO67vOWSZvri,--max-request-bytes=150000
noprogress:--session=ses_dfd1d915fffeGQ4egBG5GGhlmd,--context=2000,--max-output=200,--keep-turns=1
kilo:--session=ses_dfd1699dfffeTGRV3habI8PCDk,--context=2400,--max-output=200,--keep-turns=1"
read -r -d '' -a CASES <<<"${SD_OC_CASES:-$DEFAULT_CASES}" || true
eval "$("$here/install_clients.sh")"   # sets OPENCODE_BIN, CCUSAGE_BIN
[ -x "$BIN" ] || { echo "FAIL: session-doctor binary not found: $BIN" >&2; exit 2; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Hash every file under the cases' fixture dirs (new side files such as -wal/-shm show up too).
fixture_hashes() {
  local c
  for c in "${CASES[@]}"; do find "$FIX/${c%%:*}" -type f -print0 2>/dev/null; done | sort -z | xargs -0r sha256sum
}

# oc CASE_DIR DATA_SUBDIR ARGS...: the real opencode, offline, in an isolated HOME/XDG, from an empty
# non-git cwd, with the user's OPENCODE_DB/OPENCODE_CONFIG* dropped.
oc() {
  local dir="$1" data="$2"; shift 2
  ( cd "$dir/cwd" && env -u OPENCODE_DB -u OPENCODE_CONFIG -u OPENCODE_CONFIG_DIR -u OPENCODE_CONFIG_CONTENT \
      HOME="$dir/home" XDG_DATA_HOME="$dir/$data" XDG_CONFIG_HOME="$dir/home/.config" \
      XDG_CACHE_HOME="$dir/home/.cache" XDG_STATE_HOME="$dir/home/.local/state" \
      OPENCODE_DISABLE_AUTOUPDATE=1 OPENCODE_DISABLE_MODELS_FETCH=1 OPENCODE_DISABLE_SHARE=1 \
      OPENCODE_DISABLE_DEFAULT_PLUGINS=1 OPENCODE_DISABLE_LSP_DOWNLOAD=1 OPENCODE_DISABLE_CLAUDE_CODE=1 \
      OPENCODE_DISABLE_EXTERNAL_SKILLS=1 OPENCODE_DISABLE_PROJECT_CONFIG=1 OPENCODE_DISABLE_CHANNEL_DB=1 \
      NO_COLOR=1 timeout 120 "$OPENCODE_BIN" "$@" )
}

label() { case "$1" in *:*) echo "${1%%:*}-compact" ;; *) echo "$1" ;; esac; }

run_case() {
  local c="$1" name="${1%%:*}" dir fixture db out extra copy cmd=(repair)
  dir="$work/$(label "$c")"
  if [ "$name" != "$c" ]; then IFS=, read -r -a cmd <<<"compact,${c#*:}"; fi
  fixture="$(find "$FIX/$name" -maxdepth 1 \( -name opencode.db -o -name kilo.db \) | head -n1)"
  [ -n "$fixture" ] || { echo "no opencode.db/kilo.db in $FIX/$name"; return 1; }
  db="$(basename "$fixture")"
  out="$dir/out"
  mkdir -p "$dir/home" "$dir/data/opencode" "$dir/cwd"
  echo "  session-doctor ${cmd[*]} $fixture"
  "$BIN" "${cmd[@]}" "$fixture" --out "$out" --format json >"$dir/changes.json" \
    || { echo "session-doctor ${cmd[0]} failed"; return 1; }

  # The out dir holds the repaired db and nothing else (no -wal, -shm, -journal, temp files)
  # beside the manifest of the copies session-doctor wrote and its lock file.
  [ -f "$out/$db" ] || { echo "repair wrote no $out/$db"; return 1; }
  extra="$(find "$out" -mindepth 1 ! -name "$db" ! -name .session-doctor-copies.json ! -name .session-doctor.lock -printf '%f ')"
  [ -z "$extra" ] || { echo "unexpected files in out dir: $extra"; return 1; }
  copy="$dir/data/opencode/opencode.db"   # kilo.db is loaded as opencode.db, see the header
  cp "$out/$db" "$copy" && chmod u+w "$copy"

  # Session ids and message counts from the copy (never from the fixture).
  python3 - "$copy" >"$dir/sessions.txt" <<'EOF'
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok", "integrity_check failed"
for sid, n in con.execute("SELECT s.id, (SELECT count(*) FROM message m WHERE m.session_id = s.id) FROM session s"):
    print(sid, n)
EOF
  [ -s "$dir/sessions.txt" ] || { echo "no session in the copy"; return 1; }

  local sid n
  while read -r sid n; do
    oc "$dir" data export "$sid" >"$dir/export-$sid.json" 2>"$dir/oc.err" \
      || { echo "opencode export $sid failed:"; cat "$dir/oc.err"; return 1; }
    # export does not validate rows (a part of unknown type is printed as is); import does.
    oc "$dir" data2 import "$dir/export-$sid.json" >"$dir/oc.err" 2>&1 \
      || { echo "opencode import of the export of $sid failed:"; cat "$dir/oc.err"; return 1; }
    oc "$dir" data2 export "$sid" >"$dir/reexport-$sid.json" 2>"$dir/oc.err" \
      || { echo "opencode re-export $sid failed:"; cat "$dir/oc.err"; return 1; }
    echo "  exported, imported, re-exported $sid ($n messages)"
  done <"$dir/sessions.txt"

  # Every export is valid JSON with all message rows; every parentID change shows in it.
  python3 - "$dir" <<'EOF'
import json, pathlib, sys
d = pathlib.Path(sys.argv[1])
def shape(ms):  # what must survive import (which drops fields it does not know, see the header)
    return [(m["info"]["id"], m["info"]["role"], m["info"].get("parentID"),
             [(p["id"], p["type"]) for p in m["parts"]]) for m in ms]
exports = {}
for line in (d / "sessions.txt").read_text().split("\n"):
    if not line: continue
    sid, n = line.split()
    e = json.loads((d / f"export-{sid}.json").read_text())
    assert e["info"]["id"] == sid, f"export of {sid} has info.id {e['info']['id']}"
    assert len(e["messages"]) == int(n), f"{sid}: export has {len(e['messages'])} messages, db {n}"
    r = json.loads((d / f"reexport-{sid}.json").read_text())
    assert shape(r["messages"]) == shape(e["messages"]), f"{sid}: messages differ after import + re-export"
    exports[sid] = {m["info"]["id"]: m["info"] for m in e["messages"]}
report = json.loads((d / "changes.json").read_text())
assert report.get("schema_version") == 1, "--format json: schema_version != 1"
parent_changes = [c for c in report["changes"] if c["field"] == "parentID"]
for c in parent_changes:
    info = exports[c["session_id"]].get(c["message_id"])
    assert info is not None, f"{c['message_id']} missing from the export"
    assert info.get("parentID") == c["new"], f"{c['message_id']}: parentID {info.get('parentID')} != {c['new']}"
print(f"  {len(report['changes'])} change(s), {len(parent_changes)} parentID change(s) confirmed by opencode")
if d.name == "stale-parent":
    assert parent_changes, "stale-parent: repair reported no parentID change"
EOF
}

before="$(fixture_hashes)"
failed=0
for c in "${CASES[@]}"; do
  l="$(label "$c")"
  # A background subshell, so that set -e applies inside run_case (it is ignored in an if-condition).
  run_case "$c" >"$work/$l.log" 2>&1 &
  if wait $!; then
    cat "$work/$l.log"; echo "PASS real-client opencode: $l"
  else
    cat "$work/$l.log"; echo "FAIL real-client opencode: $l"; failed=1
  fi
done
if [ "$(fixture_hashes)" = "$before" ] && [ -n "$before" ]; then
  echo "PASS fixtures unchanged (sha256 of every file under the cases' fixture dirs in $FIX)"
else
  echo "FAIL fixtures changed or missing under $FIX"; failed=1
fi
exit "$failed"
