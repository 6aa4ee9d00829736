#!/usr/bin/env bash
# Peer cross-check: per-session token totals of ccusage vs `session-doctor list`, on the same copy
# of every opencode/Kilo SQLite data set in shared/real-sessions/opencode.
# Usage: scripts/ccusage_compare.sh [BIN]    (BIN default: target/debug/session-doctor)
# Env: SD_SHARED (default ../shared beside the checkout), SD_CLIENTS (see install_clients.sh).
# Without BIN it still prints ccusage's numbers, then exits 2.
#
# How ccusage 20.0.24 finds and counts (its Rust source: rust/adapters/{opencode,kilo}/src/):
# - opencode: $OPENCODE_DATA_DIR (comma list) else $XDG_DATA_HOME/opencode (absolute only) else
#   ~/.local/share/opencode; db = opencode.db else the first opencode-<channel>.db; also legacy
#   storage/message/**/*.json. Kilo: $KILO_DATA_DIR else ~/.local/share/kilo/kilo.db
#   (XDG_DATA_HOME is NOT read for Kilo). Both open the db read-only, which still leaves -wal/-shm
#   beside it: always a copy. Both variables are set here, so the user's own values cannot leak in.
# - totals = sums over `message.data` rows that have a `tokens` object with any non-zero count and a
#   modelID (+ providerID for opencode; role=="assistant" for Kilo): input, output, cache.read,
#   cache.write. Compaction summaries count; zero-token error/overflow assistants add nothing.
#   `reasoning` is not in output (only in totalTokens). session.tokens_* columns are used only for
#   a session with no such message row.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
BIN="$(realpath -m "${1:-$root/target/debug/session-doctor}")"
REAL="${SD_SHARED:-$root/../shared}/real-sessions/opencode"
eval "$("$here/install_clients.sh")"   # sets OPENCODE_BIN, CCUSAGE_BIN

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

SETS=(plain tools compact image noprogress prune errors errors-compaction-fails kilo migrated legacy-1.1.65)
for set in "${SETS[@]}"; do
  case "$set" in
    kilo) agent=kilo src="$REAL/kilo/kilo.db" ;;
    migrated) agent=opencode src="$REAL/migrated/opencode-1.18.33-upgraded.db" ;;
    legacy-1.1.65) agent=opencode src="$REAL/legacy-1.1.65/storage" ;;
    *) agent=opencode src="$REAL/$set/opencode.db" ;;
  esac
  home="$work/$set/home"
  data="$home/.local/share"
  mkdir -p "$data/$agent"
  if [ -d "$src" ]; then   # legacy JSON tree: ccusage reads $OPENCODE_DATA_DIR/storage/message/**
    copy="$data/$agent/storage"
    cp -r "$src" "$copy" && chmod -R u+w "$copy"
  else
    copy="$data/$agent/$agent.db"
    cp "$src" "$copy" && chmod u+w "$copy"
  fi
  env HOME="$home" XDG_DATA_HOME="$data" XDG_CONFIG_HOME="$home/.config" XDG_CACHE_HOME="$home/.cache" \
    OPENCODE_DATA_DIR="$data/opencode" KILO_DATA_DIR="$data/kilo" NO_COLOR=1 \
    timeout 120 "$CCUSAGE_BIN" "$agent" session --offline --json >"$work/$set/ccusage.json" \
    || { echo "FAIL: ccusage $agent session failed on $set" >&2; exit 1; }
  if [ -x "$BIN" ]; then
    timeout 120 "$BIN" list --format json "$copy" >"$work/$set/sd.json" \
      || { echo "FAIL: session-doctor list failed on $set" >&2; exit 1; }
  fi
done

python3 - "$work" "${SETS[@]}" <<'EOF'
import json, pathlib, sys
work, sets = pathlib.Path(sys.argv[1]), sys.argv[2:]
KEYS = ("in", "out", "cr", "cw")
rows, bad, have_sd = [], 0, True
for s in sets:
    cc = {x["sessionId"]: (x["inputTokens"], x["outputTokens"], x["cacheReadTokens"], x["cacheCreationTokens"])
          for x in json.loads((work / s / "ccusage.json").read_text())["sessions"]}
    sd_file = work / s / "sd.json"
    if not sd_file.exists():
        have_sd = False
        rows += [(s, sid, v, None, "n/a") for sid, v in sorted(cc.items())]
        continue
    sd = {}
    for x in json.loads(sd_file.read_text())["sessions"]:
        t = x["tokens_total"]
        sd[x["id"]] = (t["input"], t["output"], t["cache_read"], t["cache_write"])
    for sid in sorted(set(cc) | set(sd)):
        # ccusage omits sessions without usage; an all-zero session-doctor row matches that.
        c, d = cc.get(sid), sd.get(sid)
        ok = c == d or (c is None and d is not None and not any(d))
        bad += not ok
        rows.append((s, sid, c, d, "yes" if ok else "NO"))
fmt = lambda v: "/".join(map(str, v)) if v else "-"
print(f"{'data set':<24} {'session':<31} {'ccusage in/out/cr/cw':<26} {'session-doctor in/out/cr/cw':<28} match")
for s, sid, c, d, m in rows:
    print(f"{s:<24} {sid:<31} {fmt(c):<26} {fmt(d):<28} {m}")
if not have_sd:
    print("session-doctor binary not found: only ccusage's side shown", file=sys.stderr)
    sys.exit(2)
print(f"{'PASS' if not bad else 'FAIL'} ccusage cross-check: {len(rows) - bad} of {len(rows)} sessions match")
sys.exit(1 if bad else 0)
EOF
