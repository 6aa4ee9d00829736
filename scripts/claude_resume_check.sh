#!/usr/bin/env bash
# Real-client check: the real Claude Code 2.1.197 (npm @anthropic-ai/claude-code) resumes
# transcripts against the loopback stub model of shared/tools/claude-codex-gen, and we read what
# its first request sends (the stub dumps request bodies). Nothing leaves 127.0.0.1: the stub binds
# it, and every other request goes to a dead proxy.
# Usage: scripts/claude_resume_check.sh [BIN]    (BIN default: target/debug/session-doctor)
# Env: SD_SHARED (default ../shared beside the checkout), SD_CLIENTS, SD_STUB_PORT (default 18981).
#
# Cases (fixtures/claude-code/claude-code-gen, session 0a40fb08):
#   original        double_compact as Claude Code wrote it (both boundaries with preserved metadata)
#   nometa          the derived fixture: preserved metadata removed (stale-parent error, line 28)
#   nometa-repaired `session-doctor repair` of it
#   onpath          nometa with line 69 (after boundary 2) re-pointed to line 47 (before it): a
#                   stale parent on the resume path (made in a temp copy)
#   onpath-repaired `session-doctor repair` of that
# Checked: no case but `onpath` sends a pre-compaction prompt ("Step 1".."Step 6"); `onpath` does
# and leaves the summary out (that is the fault); the original and both repaired copies send the
# summary. Printed: messages in the first request, whether the summary is in it, which prompts are.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
BIN="$(realpath -m "${1:-$root/target/debug/session-doctor}")"
GEN="${SD_SHARED:-$root/../shared}/tools/claude-codex-gen"
PORT="${SD_STUB_PORT:-18981}"
eval "$("$here/install_clients.sh" claude-code)"   # ..., CLAUDE_BIN
[ -x "$BIN" ] || { echo "session-doctor binary not found: $BIN" >&2; exit 2; }
[ -f "$GEN/anthropic_stub.py" ] || { echo "stub not found: $GEN/anthropic_stub.py" >&2; exit 2; }

work="$(mktemp -d)"
stub_pid=""
cleanup() {
  if [ -n "$stub_pid" ]; then kill "$stub_pid" 2>/dev/null || true; wait "$stub_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

SID=0a40fb08-409e-47b5-867c-464f5acf52d8
G="$root/fixtures/claude-code/claude-code-gen"
rel="projects/-home-dev-cc-dev-claude-double-compact-proj/$SID.jsonl"
mkdir -p "$work/src/original" "$work/src/nometa" "$work/src/onpath"
cp "$G/double_compact/$rel" "$work/src/original/$SID.jsonl"
cp "$G/double_compact_nometa/$rel" "$work/src/nometa/$SID.jsonl"
python3 - "$work/src/nometa/$SID.jsonl" "$work/src/onpath/$SID.jsonl" <<'EOF'
import json, sys
lines = open(sys.argv[1], "rb").read().split(b"\n")
v = json.loads(lines[68])
v["parentUuid"] = json.loads(lines[46])["uuid"]
lines[68] = json.dumps(v, separators=(",", ":"), ensure_ascii=False).encode()
open(sys.argv[2], "wb").write(b"\n".join(lines))
EOF
for c in nometa onpath; do
  "$BIN" repair "$work/src/$c/$SID.jsonl" --out "$work/src/$c-repaired" >/dev/null
done

run_case() {   # run_case <name> <jsonl>
  local name="$1" src="$2" w="$work/run/$1"
  mkdir -p "$w/home" "$w/proj" "$w/bodies"
  local enc
  enc="$(printf '%s' "$w/proj" | sed 's#[/._]#-#g')"
  mkdir -p "$w/home/.claude/projects/$enc"
  cp "$src" "$w/home/.claude/projects/$enc/$SID.jsonl"
  echo normal >"$w/mode"; echo 0 >"$w/chain"
  STUB_PORT="$PORT" STUB_LOG="$w/stub.jsonl" STUB_BODIES_DIR="$w/bodies" STUB_MODE_FILE="$w/mode" \
    STUB_CHAIN_FILE="$w/chain" python3 "$GEN/anthropic_stub.py" >"$w/stub.log" 2>&1 &
  stub_pid=$!
  for _ in $(seq 50); do
    python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', $PORT), 0.2)" 2>/dev/null && break
    sleep 0.1
  done
  (
    cd "$w/proj"
    env -i PATH="$PATH" HOME="$w/home" TERM=dumb \
      ANTHROPIC_BASE_URL="http://127.0.0.1:$PORT" ANTHROPIC_API_KEY="sk-ant-stub-0000000000000000" \
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_TELEMETRY=1 DISABLE_AUTOUPDATER=1 \
      DISABLE_ERROR_REPORTING=1 DISABLE_BUG_COMMAND=1 DISABLE_COST_WARNINGS=1 \
      CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY=1 CLAUDE_CODE_DISABLE_TERMINAL_TITLE=1 \
      CLAUDE_CODE_ENABLE_TELEMETRY=0 DISABLE_INSTALLATION_CHECKS=1 \
      CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL=1 CLAUDE_CODE_DISABLE_AUTO_MEMORY=1 \
      HTTPS_PROXY=http://127.0.0.1:9 HTTP_PROXY=http://127.0.0.1:9 https_proxy=http://127.0.0.1:9 \
      http_proxy=http://127.0.0.1:9 NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost \
      ANTHROPIC_MODEL=claude-sonnet-4-5-20250929 ANTHROPIC_SMALL_FAST_MODEL=claude-haiku-4-5-20251001 \
      ANTHROPIC_DEFAULT_HAIKU_MODEL=claude-haiku-4-5-20251001 \
      timeout 120 "$CLAUDE_BIN" -p "Resume check: reply briefly." --resume "$SID" --output-format json \
      >"$w/out.json" 2>"$w/err.txt" || echo "claude exited $? on $name: $(tail -n 3 "$w/err.txt")" >&2
  )
  kill "$stub_pid" 2>/dev/null || true
  wait "$stub_pid" 2>/dev/null || true
  stub_pid=""
}

run_case original "$work/src/original/$SID.jsonl"
run_case nometa "$work/src/nometa/$SID.jsonl"
run_case nometa-repaired "$(find "$work/src/nometa-repaired" -name "$SID.jsonl")"
run_case onpath "$work/src/onpath/$SID.jsonl"
run_case onpath-repaired "$(find "$work/src/onpath-repaired" -name "$SID.jsonl")"

python3 - "$work/run" <<'EOF'
import glob, json, os, re, sys
run = sys.argv[1]
PRE = [f"Step {i}:" for i in range(1, 7)]
rows, bad = [], []
for name in ["original", "nometa", "nometa-repaired", "onpath", "onpath-repaired"]:
    req = None
    for b in sorted(glob.glob(os.path.join(run, name, "bodies", "*.json"))):
        r = json.load(open(b))
        # The model call (count_tokens and title calls carry no tools or a tiny max_tokens).
        if r.get("messages") and r.get("tools") and (r.get("max_tokens") or 0) >= 1000:
            req = r
            break
    if req is None:
        rows.append((name, "-", "-", "no request"))
        bad.append(f"{name}: Claude Code sent no model request")
        continue
    text = json.dumps(req["messages"])
    summary = "This session is being continued" in text
    steps = sorted({int(m) for m in re.findall(r"Step (\d+):", text)})
    pre = [s for s in steps if s <= 6]
    rows.append((name, len(req["messages"]), "yes" if summary else "no", ",".join(map(str, steps)) or "-"))
    if name == "onpath":
        if not pre:
            bad.append("onpath: expected the pre-compaction history (the fault), got none")
    elif pre:
        bad.append(f"{name}: pre-compaction prompts {pre} were sent")
    if name in ("original", "nometa-repaired", "onpath-repaired") and not summary:
        bad.append(f"{name}: the summary was not sent")
print(f"{'case':<17} {'messages':>8}  {'summary':<8} prompts in the first request")
for r in rows:
    print(f"{r[0]:<17} {r[1]:>8}  {r[2]:<8} {r[3]}")
for b in bad:
    print("FAIL:", b)
print("PASS Claude Code resume check" if not bad else "FAIL Claude Code resume check")
sys.exit(1 if bad else 0)
EOF
