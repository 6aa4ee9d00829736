#!/usr/bin/env bash
# Peer cross-check for Codex: per-session token totals of ccusage vs `session-doctor list`, on a
# COPY of every shared Codex rollout (shared/real-sessions/codex-gen/*, written by Codex CLI 0.169.0,
# and codex/localpush, written by Codex Desktop 0.104.0-alpha.1); then the same on the copies
# `session-doctor compact` writes of every session that compacted, which ccusage must also parse.
# Usage: scripts/ccusage_compare_codex.sh [BIN]    (BIN default: target/debug/session-doctor)
# Env: SD_SHARED (default ../shared beside the checkout), SD_CLIENTS (see install_clients.sh).
# Without BIN it still prints ccusage's numbers, then exits 2.
#
# How ccusage 20.0.24 finds and counts Codex usage (its adapter: rust/crates/ccusage/src/adapter/codex/):
# - files: $CODEX_HOME (default ~/.codex) sessions/**/*.jsonl and archived_sessions/*.jsonl; the session
#   id is the path below sessions/ without .jsonl (e.g. 2026/11/22/rollout-…-<uuid>); HOME and
#   CODEX_HOME are set here, so the user's own ~/.codex cannot leak in.
# - usage: `event_msg` `token_count` lines; a line whose cumulative `total_token_usage` did not change
#   is a repeat and adds nothing, otherwise its `last_token_usage` adds: inputTokens = input_tokens -
#   cached_input_tokens, cacheReadTokens = cached_input_tokens, outputTokens = output_tokens (reasoning
#   included), reasoningOutputTokens = reasoning_output_tokens, cacheCreationTokens = 0 (always: ccusage
#   issue #1784; Codex 0.169's cache_write_input_tokens is 0 in every shared line).
# session-doctor counts the same lines the same way (a token_count line whose total changed is one
# request), so every column must be equal. Codex's running total includes its own compaction
# (summarization) requests; so do both tools (session-doctor says so in a note).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
BIN="$(realpath -m "${1:-$root/target/debug/session-doctor}")"
REAL="${SD_SHARED:-$root/../shared}/real-sessions"
eval "$("$here/install_clients.sh")"   # sets OPENCODE_BIN, CCUSAGE_BIN

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# One Codex home holding a copy of every shared rollout, in the layout each was stored in
# (codex-gen: sessions/YYYY/MM/DD/; localpush: flat sessions/).
codex="$work/codex"
mkdir -p "$codex/sessions" "$work/home"
for d in "$REAL"/codex-gen/*/sessions; do cp -r "$d/." "$codex/sessions/"; done
cp "$REAL"/codex/localpush/sessions/*.jsonl "$codex/sessions/"
chmod -R u+w "$codex"

ccusage() {  # ccusage codex session on the Codex home $1, JSON to $2; fails on any error or warning
  env HOME="$work/home" CODEX_HOME="$1" NO_COLOR=1 TZ=UTC \
    HTTPS_PROXY=http://127.0.0.1:9 HTTP_PROXY=http://127.0.0.1:9 \
    timeout 120 "$CCUSAGE_BIN" codex session --offline --json >"$2" 2>"$2.err" \
    || { echo "FAIL: ccusage codex session failed on $1:" >&2; cat "$2.err" >&2; exit 1; }
  if grep -qiE 'error|warn|fail' "$2.err"; then
    echo "FAIL: ccusage complained about $1:" >&2; cat "$2.err" >&2; exit 1
  fi
}

ccusage "$codex" "$work/cc.json"
have_sd=0
if [ -x "$BIN" ]; then
  have_sd=1
  timeout 120 "$BIN" list --format json "$codex" >"$work/sd.json" \
    || { echo "FAIL: session-doctor list failed" >&2; exit 1; }
  # Compact every session that compacted into a second Codex home, then read it with both tools.
  mkdir -p "$work/compacted"
  python3 - "$work/sd.json" >"$work/to_compact" <<'EOF'
import json, sys
for s in json.load(open(sys.argv[1]))["sessions"]:
    if s["compactions"] > 0:
        print(s["id"], s["source"])
EOF
  while read -r id src; do
    timeout 120 "$BIN" compact "$src" --session "$id" --out "$work/compacted" --format json \
      >"$work/compact-$id.json" || { echo "FAIL: session-doctor compact failed on $id" >&2; exit 1; }
  done <"$work/to_compact"
  ccusage "$work/compacted" "$work/cc-compacted.json"
  timeout 120 "$BIN" list --format json "$work/compacted" >"$work/sd-compacted.json" \
    || { echo "FAIL: session-doctor list failed on the compacted copies" >&2; exit 1; }
fi

python3 - "$work" "$have_sd" <<'EOF'
import json, pathlib, sys
work, have_sd = pathlib.Path(sys.argv[1]), sys.argv[2] == "1"
KEYS = "in/out/cr/cw/reas"

def cc_rows(f):
    # keyed by the rollout's file stem (ccusage: path below sessions/ without .jsonl)
    return {x["sessionId"].rsplit("/", 1)[-1]: (x["inputTokens"], x["outputTokens"], x["cacheReadTokens"],
                                                x["cacheCreationTokens"], x.get("reasoningOutputTokens", 0))
            for x in json.loads((work / f).read_text())["sessions"]}

def sd_rows(f):
    out = {}
    for x in json.loads((work / f).read_text())["sessions"]:
        t = x["tokens_total"]
        out[pathlib.Path(x["source"]).stem] = (t["input"], t["output"], t["cache_read"], t["cache_write"], t["reasoning"])
    return out

def why(c, d):
    """Explain a difference, column by column."""
    notes = []
    if c is None:
        return "ccusage lists no usage for this file"
    if d is None:
        return "session-doctor did not read this file"
    if c[3] != d[3]:
        notes.append("cache write: ccusage always reports 0 for Codex (issue #1784); session-doctor reports cache_write_input_tokens")
    if c[:3] != d[:3]:
        notes.append("input/output/cache read differ: a token_count line counted by one tool only")
    if c[4] != d[4]:
        notes.append("reasoning differs")
    return "; ".join(notes)

fmt = lambda v: "/".join(map(str, v)) if v else "-"
bad, total = 0, 0
for title, cf, sf in (("shared Codex rollouts (copies)", "cc.json", "sd.json"),
                      ("compacted copies written by session-doctor compact", "cc-compacted.json", "sd-compacted.json")):
    if not (work / cf).exists():
        continue
    cc = cc_rows(cf)
    sd = sd_rows(sf) if have_sd and (work / sf).exists() else {}
    print(f"== {title}")
    print(f"{'rollout':<72} {'ccusage ' + KEYS:<44} {'session-doctor ' + KEYS:<44} match")
    for k in sorted(set(cc) | set(sd)):
        c, d = cc.get(k), sd.get(k)
        ok = c == d or (c is None and d is not None and not any(d))
        if have_sd:
            total += 1
            bad += not ok
        print(f"{k:<72} {fmt(c):<44} {fmt(d):<44} {'yes' if ok else 'NO'}")
        if have_sd and not ok:
            print(f"    why: {why(c, d)}")
    if cf == "cc-compacted.json":
        print("    (a compacted copy keeps session_meta, the newest compacted line and what follows it: both tools\n"
              "     count only the token_count lines the copy still holds, so its totals are below the original's)")
if not have_sd:
    print("session-doctor binary not found: only ccusage's side shown", file=sys.stderr)
    sys.exit(2)
print(f"{'PASS' if not bad else 'FAIL'} ccusage Codex cross-check: {total - bad} of {total} sessions match; "
      "ccusage parsed every compacted copy without an error")
sys.exit(1 if bad else 0)
EOF
