#!/usr/bin/env bash
# Peer cross-check: per-session token totals of ccusage 20.0.24 (`claude session --offline --json`)
# vs `session-doctor list --format json` (tokens_total), on a COPY of every Claude Code data set in
# shared/real-sessions: claude-code-gen (4 sessions by Claude Code 2.1.197), spotter (2.1.39, with
# subagents/ and agent-acompact-* files), claude-code-log real_projects (1.0.x-2.1.x, older agent-*
# files beside the sessions), and claude-code-log edge-fixtures (hand-made).
# Usage: scripts/ccusage_compare_claude.sh [BIN]    (BIN default: target/debug/session-doctor)
# Env: SD_SHARED (default ../shared beside the checkout), SD_CLIENTS (see install_clients.sh).
#
# What both count (ccusage's behaviour as documented in shared/formats/claude-code-codex.md section
# 4, and as this data shows): assistant lines with message.usage; the lines of one API response
# share message.id and requestId and repeat the usage: counted once, with the last line's figures
# (older versions write a partial output_tokens on the first lines). Input, output, cache creation
# (our cache_write), cache read. ccusage keys a session by file: <id>.jsonl, with
# <id>/subagents/*.jsonl folded in; any other file (agent-*.jsonl beside the sessions, hand-made
# fixtures) by its file name.
#
# Known, explained differences (printed per row, not failures):
# - "agents": an older agent-*.jsonl beside the sessions whose lines name a sibling session file
#   belongs to that session in session-doctor; ccusage lists it as its own session `agent-<id>`.
#   The row is checked against ccusage(session) + ccusage(its agent files).
# - "global dedupe": ccusage de-duplicates message.id:requestId across ALL files it reads; the
#   hand-made edge fixtures re-use ids across files, so some rows shrink or vanish. Those rows are
#   checked against ccusage run on that file alone.
# - "skipped lines": ccusage 20.0.24 ignores assistant lines written with a space after ':'
#   (`"type": "assistant"`, as some hand-made fixtures are; Claude Code writes compact JSON) and
#   lines whose timestamp has 6 fractional digits. Those rows are checked against ccusage on the
#   file alone after re-writing it as compact JSON with millisecond timestamps.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
BIN="$(realpath -m "${1:-$root/target/debug/session-doctor}")"
SHARED="${SD_SHARED:-$root/../shared}/real-sessions"
eval "$("$here/install_clients.sh")"   # sets OPENCODE_BIN, CCUSAGE_BIN
[ -x "$BIN" ] || { echo "session-doctor binary not found: $BIN" >&2; exit 2; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

ccu() {   # ccu <config dir> <out.json>: ccusage offline on a config dir, nothing else of this machine
  local cfg="$1"
  mkdir -p "$cfg/../home"
  env HOME="$cfg/../home" CLAUDE_CONFIG_DIR="$cfg" CODEX_HOME="$cfg/../codex" NO_COLOR=1 TZ=UTC \
    HTTPS_PROXY=http://127.0.0.1:9 HTTP_PROXY=http://127.0.0.1:9 \
    timeout 120 "$CCUSAGE_BIN" claude session --offline --json >"$2" \
    || { echo "FAIL: ccusage failed on $cfg" >&2; exit 1; }
}

# Each set becomes <work>/<set>/claude/projects/<project>/... (real copies: ccusage skips symlinks).
mk() { mkdir -p "$work/$1/claude/projects"; }
mk gen;      for s in "$SHARED"/claude-code-gen/*/; do cp -r "$s/projects/." "$work/gen/claude/projects/"; done
mk spotter;  cp -r "$SHARED/claude-code/spotter" "$work/spotter/claude/projects/spotter"
mk real;     cp -r "$SHARED/claude-code/claude-code-log/real_projects/." "$work/real/claude/projects/"
mk edge;     cp -r "$SHARED/claude-code/claude-code-log/edge-fixtures" "$work/edge/claude/projects/edge-fixtures"
chmod -R u+w "$work"
SETS=(gen spotter real edge)
for set in "${SETS[@]}"; do
  ccu "$work/$set/claude" "$work/$set/ccusage.json"
  timeout 120 "$BIN" list --format json "$work/$set/claude/projects" >"$work/$set/sd.json" \
    || { echo "FAIL: session-doctor list failed on $set" >&2; exit 1; }
done
# Edge fixtures one by one (no cross-file de-duplication).
for f in "$work"/edge/claude/projects/edge-fixtures/*.jsonl; do
  n="$(basename "$f" .jsonl)"
  mkdir -p "$work/alone/$n/claude/projects/p"
  cp "$f" "$work/alone/$n/claude/projects/p/"
  ccu "$work/alone/$n/claude" "$work/alone/$n/ccusage.json"
  mkdir -p "$work/norm/$n/claude/projects/p"
  python3 -c '
import json, re, sys
with open(sys.argv[1]) as f, open(sys.argv[2], "w") as out:
    for line in f:
        try:
            v = json.loads(line)
        except ValueError:
            out.write(line)
            continue
        if isinstance(v, dict) and isinstance(v.get("timestamp"), str):
            v["timestamp"] = re.sub(r"(\.\d{3})\d+Z$", r"\1Z", v["timestamp"])
        out.write(json.dumps(v, separators=(",", ":"), ensure_ascii=False) + "\n")
' "$f" "$work/norm/$n/claude/projects/p/$n.jsonl"
  ccu "$work/norm/$n/claude" "$work/norm/$n/ccusage.json"
done

python3 - "$work" "${SETS[@]}" <<'EOF'
import json, pathlib, sys
work, sets = pathlib.Path(sys.argv[1]), sys.argv[2:]

def cc_rows(path):
    return {x["sessionId"]: (x["inputTokens"], x["outputTokens"], x["cacheCreationTokens"], x["cacheReadTokens"])
            for x in json.loads(pathlib.Path(path).read_text())["sessions"]}

def add(a, b):
    return tuple(x + y for x, y in zip(a, b))

def first_session_id(f):
    with open(f, "rb") as fh:
        for line in fh:
            try:
                d = json.loads(line)
            except Exception:
                continue
            if isinstance(d, dict) and isinstance(d.get("sessionId"), str):
                return d["sessionId"]
    return None

ZERO = (0, 0, 0, 0)
rows, bad = [], 0
for s in sets:
    cc = cc_rows(work / s / "ccusage.json")
    sd = {}
    for x in json.loads((work / s / "sd.json").read_text())["sessions"]:
        t = x["tokens_total"]
        sd[x["id"]] = ((t["input"], t["output"], t["cache_write"], t["cache_read"]), x["source"])
    # agent-*.jsonl beside a session file that their lines name: folded into that session by us.
    agents = {}
    for f in (work / s / "claude" / "projects").rglob("agent-*.jsonl"):
        if f.parent.name == "subagents":
            continue
        sid = first_session_id(f)
        if sid and (f.parent / f"{sid}.jsonl").exists():
            agents.setdefault(sid, []).append(f.stem)
    folded = {a for v in agents.values() for a in v}
    for sid in sorted(set(sd) | (set(cc) - folded)):
        ours = sd.get(sid, (None, ""))[0]
        theirs = cc.get(sid)
        how = None
        if ours is not None and (theirs or ZERO) == ours:
            how = "yes"   # ccusage omits sessions without usage: an all-zero row matches that
        elif ours is not None and sid in agents:
            total = theirs or ZERO
            for a in agents[sid]:
                total = add(total, cc.get(a, ZERO))
            if total == ours:
                how = "yes, agents: + " + ", ".join(sorted(agents[sid]))
        if how is None and s == "edge" and ours is not None:
            alone = cc_rows(work / "alone" / sid / "ccusage.json").get(sid, ZERO)
            norm = cc_rows(work / "norm" / sid / "ccusage.json").get(sid, ZERO)
            if alone == ours:
                how = "yes, global dedupe: ccusage on the file alone = " + "/".join(map(str, alone))
            elif norm == ours:
                how = "yes, skipped lines: ccusage on the file alone, normalized = " + "/".join(map(str, norm))
        if how is None:
            how = "NO"
            bad += 1
        rows.append((s, sid, theirs, ours, how))

fmt = lambda v: "/".join(map(str, v)) if v else "-"
print(f"{'set':<8} {'session':<38} {'ccusage in/out/cw/cr':<30} {'session-doctor in/out/cw/cr':<30} match")
for s, sid, c, d, m in rows:
    print(f"{s:<8} {sid:<38} {fmt(c):<30} {fmt(d):<30} {m}")
print(f"{'PASS' if not bad else 'FAIL'} ccusage cross-check (Claude Code): {len(rows) - bad} of {len(rows)} sessions match")
sys.exit(1 if bad else 0)
EOF
