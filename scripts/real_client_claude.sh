#!/usr/bin/env bash
# Real-client check for Claude Code copies: the repaired and compacted copies written by
# session-doctor load in claude-code-log 1.7.0 (PyPI) and in ccusage 20.0.24 without errors, and
# both read the same token totals from them as `session-doctor list`.
# Usage: scripts/real_client_claude.sh [BIN]    (BIN default: target/debug/session-doctor)
# Env: SD_SHARED (default ../shared beside the checkout), SD_CLIENTS (see install_clients.sh).
#
# Copies checked (all written into a temp dir; claude-code-log writes its cache db into the folder
# it reads, so it only ever reads those copies):
# - `repair` of every fixture under fixtures/claude-code (re-pointed parents, dropped re-written
#   copies in double_compact*), and of the shared spotter sessions (2.1.39, sub-agent files);
# - `compact --keep-turns` of image (stripped image), double_compact, double_compact_nometa and
#   noprogress (cut history, a note on the first kept prompt).
# Per session: claude-code-log converts the file to JSON (exit 0, the session is there, its token
# summary equals ours); claude-code-log --all-projects renders each copy's projects/ folder (exit 0,
# no traceback); ccusage reads each copy (exit 0, per-session totals equal ours).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
BIN="$(realpath -m "${1:-$root/target/debug/session-doctor}")"
SHARED="${SD_SHARED:-$root/../shared}/real-sessions"
eval "$("$here/install_clients.sh" claude-code-log)"   # OPENCODE_BIN, CCUSAGE_BIN, CCL_BIN
[ -x "$BIN" ] || { echo "session-doctor binary not found: $BIN" >&2; exit 2; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/home"
F="$root/fixtures/claude-code"
G="$F/claude-code-gen"

# Each copy is a Claude config dir: <work>/<name>/projects/<project>/<id>.jsonl
"$BIN" repair "$F" --out "$work/fixtures-tree" >/dev/null
# A repair of several stores keeps their layout relative to their common folder: gather the
# projects/ folders of the copy into one config dir per copy.
while IFS= read -r -d '' p; do
  n="repaired-$(basename "$(dirname "$p")")"
  mkdir -p "$work/$n"
  cp -r "$p" "$work/$n/projects"
done < <(find "$work/fixtures-tree" -type d -name projects -print0)
mkdir -p "$work/spotter-src/projects"
cp -r "$SHARED/claude-code/spotter" "$work/spotter-src/projects/spotter"
chmod -R u+w "$work/spotter-src"
"$BIN" repair "$work/spotter-src" --out "$work/repaired-spotter" >/dev/null
compact() {   # compact <name> <scenario> <session> [flags...]
  local name="$1" scenario="$2" sid="$3"
  shift 3
  "$BIN" compact "$G/$scenario" --session "$sid" --out "$work/$name" "$@" >/dev/null
}
compact compacted-image image ada37aa8-fdfe-41e2-ae55-88cfa2a2c290 --context 19000 --max-output 1000 --keep-turns 1
compact compacted-double double_compact 0a40fb08-409e-47b5-867c-464f5acf52d8 --context 19000 --max-output 1000 --keep-turns 1
compact compacted-nometa double_compact_nometa 0a40fb08-409e-47b5-867c-464f5acf52d8 --context 19000 --max-output 1000 --keep-turns 2
compact compacted-noprogress noprogress fbfaaf41-f446-468b-a40a-48c11b34a4a1 --context 19000 --max-output 1000 --keep-turns 1

status=0
for copy in "$work"/repaired-* "$work"/compacted-*; do
  name="$(basename "$copy")"
  [ -d "$copy/projects" ] || { echo "FAIL: $name: no projects/ in the copy" >&2; status=1; continue; }
  "$BIN" list --format json "$copy/projects" >"$work/$name.sd.json"
  # ccusage on the copy (a config dir holding projects/).
  if ! env HOME="$work/home" CLAUDE_CONFIG_DIR="$copy" NO_COLOR=1 TZ=UTC \
      HTTPS_PROXY=http://127.0.0.1:9 HTTP_PROXY=http://127.0.0.1:9 \
      timeout 120 "$CCUSAGE_BIN" claude session --offline --json >"$work/$name.ccusage.json" 2>"$work/$name.ccusage.err"; then
    echo "FAIL: ccusage on $name: $(tail -n 3 "$work/$name.ccusage.err")" >&2
    status=1
  fi
  # claude-code-log, one JSON document per session file.
  mkdir -p "$work/$name.ccl"
  while IFS= read -r -d '' f; do
    case "$f" in */subagents/*) continue ;; esac
    out="$work/$name.ccl/$(basename "$f" .jsonl).json"
    if ! HOME="$work/home" timeout 300 "$CCL_BIN" "$f" -o "$out" -f json >"$out.log" 2>&1 \
        || grep -q Traceback "$out.log"; then
      echo "FAIL: claude-code-log on $f: $(tail -n 5 "$out.log")" >&2
      status=1
    fi
  done < <(find "$copy/projects" -name '*.jsonl' -size +0 -print0)
  # claude-code-log over the whole folder (DAG across files, agent files, cache db in the copy).
  if ! HOME="$work/home" timeout 600 "$CCL_BIN" --projects-dir "$copy/projects" --all-projects \
      -o "$work/$name.html" >"$work/$name.all.log" 2>&1 || grep -q Traceback "$work/$name.all.log"; then
    echo "FAIL: claude-code-log --all-projects on $name: $(tail -n 5 "$work/$name.all.log")" >&2
    status=1
  fi
done

python3 "$here/real_client_claude_table.py" "$work" || status=1
[ "$status" = 0 ] || { echo "FAIL: real-client check on Claude Code copies" >&2; exit 1; }
