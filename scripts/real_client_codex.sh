#!/usr/bin/env bash
# Real-client check for Codex: the real Codex CLI 0.169.0 (npm @openai/codex, its native binary)
# resumes copies written by session-doctor, against the loopback Responses API stub of
# shared/tools/claude-codex-gen, and sends exactly the history session-doctor says it keeps.
# Usage: scripts/real_client_codex.sh [BIN]    (BIN default: target/debug/session-doctor)
# Env: SD_SHARED (default ../shared beside the checkout), SD_CLIENTS (default
#      ~/.cache/session-doctor-clients; Codex goes to $SD_CLIENTS/codex).
#
# Cases (each in its own CODEX_HOME, `codex exec resume <id> "<prompt>"`, first request checked):
#   multi-compact       compact of codex-gen/multi: the request holds the newest replacement_history
#                       (steps 1 to 7, the summary) and what followed (steps 8, 9), nothing else
#   multi-keep4         compact --keep-turns 4: the note, then steps 6 to 9 only
#   noprogress-compact  compact of codex-gen/noprogress (7 compactions): the last summary, steps 3 and 4
#                       (the tail is cut below 95% of the last trigger, so the loop cannot start again)
#   image-compact       compact of fixtures/codex/derived-image: one input_image left, one placeholder
#   localpush-compact   compact of the Codex 0.104 rollout with a remote compaction (encrypted item)
#   multi-torn          repair of a copy of multi whose last line is torn
# Everything talks to 127.0.0.1 only (proxies point at a dead port, as the generator does).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
BIN="$(realpath -m "${1:-$root/target/debug/session-doctor}")"
SHARED="${SD_SHARED:-$root/../shared}"
GEN="$SHARED/tools/claude-codex-gen"
CODEX_VERSION=0.169.0
dir="${SD_CLIENTS:-$HOME/.cache/session-doctor-clients}/codex"
[ -x "$BIN" ] || { echo "session-doctor binary not found: $BIN" >&2; exit 2; }

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) CX="$dir/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex" ;;
  Linux-aarch64) CX="$dir/node_modules/@openai/codex-linux-arm64/vendor/aarch64-unknown-linux-musl/bin/codex" ;;
  *) echo "real_client_codex: unsupported platform $(uname -sm)" >&2; exit 1 ;;
esac
if [ "$("$CX" --version 2>/dev/null || true)" != "codex-cli $CODEX_VERSION" ]; then
  echo "real_client_codex: npm install @openai/codex@$CODEX_VERSION into $dir" >&2
  mkdir -p "$dir"
  npm install --prefix "$dir" --no-audit --no-fund --ignore-scripts --save-exact "@openai/codex@$CODEX_VERSION" >&2
fi
[ "$("$CX" --version)" = "codex-cli $CODEX_VERSION" ] || { echo "codex $CODEX_VERSION does not run" >&2; exit 1; }

work="$(mktemp -d)"
stub_pid=""
cleanup() { [ -n "$stub_pid" ] && kill "$stub_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"

FX="$root/fixtures/codex"
MULTI=01a20327-d155-7513-b850-ad26df82d9ed
NOPROGRESS=01a20327-ec1f-7132-af6f-feec204262bf
IMAGE=01a20327-d155-7513-b850-ad26df82d9ee
LOCALPUSH=019c8a59-e9dd-71f0-9ae3-4079fe9726a9

# run_case NAME ID [openai]: resume the copy under $work/NAME/home/.codex/sessions and save the first
# request body. Codex refuses to resume a thread under another provider than the one in its
# session_meta: a rollout of the `openai` provider gets the built-in provider pointed at the stub
# (`openai_base_url`), with the model's real window (no small test window, which would make Codex
# compact before sampling).
run_case() {
  local name="$1" id="$2" provider="${3:-stub}" w="$work/$1"
  mkdir -p "$w/proj" "$w/bodies"
  local edit=(-e "s#http://127.0.0.1:18951/v1#http://127.0.0.1:$port/v1#" -e "s#__WORK_ROOT__#$w#")
  if [ "$provider" = openai ]; then
    edit+=(-e "s#^model_provider = \"stub\"#model_provider = \"openai\"\nopenai_base_url = \"http://127.0.0.1:$port/v1\"#"
           -e '/^model_context_window/d' -e '/^model_auto_compact_token_limit/d')
  fi
  sed "${edit[@]}" "$GEN/codex_config.toml" >"$w/home/.codex/config.toml"
  echo normal >"$w/stub_mode"; echo 0 >"$w/stub_chain"
  env STUB_PORT="$port" STUB_MODE_FILE="$w/stub_mode" STUB_CHAIN_FILE="$w/stub_chain" \
    STUB_LOG="$w/stub_requests.jsonl" STUB_BODIES_DIR="$w/bodies" \
    python3 "$GEN/responses_stub.py" >"$w/stub.log" 2>&1 &
  stub_pid=$!
  for _ in $(seq 50); do
    python3 -c "import socket,sys; socket.create_connection(('127.0.0.1',$port),0.2)" 2>/dev/null && break
    sleep 0.1
  done
  local rc=0
  ( cd "$w/proj" && env -i PATH="$PATH" HOME="$w/home" CODEX_HOME="$w/home/.codex" STUB_OPENAI_KEY=sk-stub-0000 \
      CODEX_API_KEY=sk-stub-0000 OPENAI_API_KEY=sk-stub-0000 RUST_LOG=error HTTPS_PROXY=http://127.0.0.1:9 HTTP_PROXY=http://127.0.0.1:9 \
      https_proxy=http://127.0.0.1:9 http_proxy=http://127.0.0.1:9 NO_PROXY=127.0.0.1,localhost \
      no_proxy=127.0.0.1,localhost CODEX_DISABLE_UPDATE_CHECK=1 \
      timeout 120 "$CX" exec --skip-git-repo-check resume "$id" "Final: resumed after session-doctor" ) \
      >"$w/run.out" 2>&1 || rc=$?
  kill "$stub_pid" 2>/dev/null; wait "$stub_pid" 2>/dev/null || true; stub_pid=""
  if [ "$rc" != 0 ]; then
    echo "FAIL: $name: codex exec resume exited $rc" >&2; tail -20 "$w/run.out" >&2; exit 1
  fi
  [ -s "$w/bodies/0001.json" ] || { echo "FAIL: $name: codex sent no request" >&2; exit 1; }
  # The resumed rollout (copy + the new turn) still reads cleanly.
  "$BIN" check --format json "$w/home/.codex" >"$w/check.json" || true
}

# compact_case NAME SRC ID PROVIDER [compact args]: compact SRC into NAME's Codex home, then resume it.
compact_case() {
  local name="$1" src="$2" id="$3" provider="$4"; shift 4
  mkdir -p "$work/$name/home/.codex"
  "$BIN" compact "$src" --session "$id" --out "$work/$name/home/.codex" --format json "$@" \
    >"$work/$name/compact.json"
  run_case "$name" "$id" "$provider"
}

compact_case multi-compact "$FX/codex-gen/multi" "$MULTI" stub
compact_case multi-keep4 "$FX/codex-gen/multi" "$MULTI" stub --keep-turns 4
compact_case noprogress-compact "$FX/codex-gen/noprogress" "$NOPROGRESS" stub
compact_case image-compact "$FX/derived-image" "$IMAGE" stub
compact_case localpush-compact "$FX/localpush/sessions/rollout-2026-02-23T12-54-34-$LOCALPUSH.jsonl" \
  "$LOCALPUSH" openai
# A torn copy of multi, repaired.
torn="$work/torn-src/sessions/2026/11/22"
mkdir -p "$torn" "$work/multi-torn/home/.codex"
src="$(ls "$FX"/codex-gen/multi/sessions/2026/11/22/rollout-*.jsonl)"
head -c -200 "$src" >"$torn/$(basename "$src")"
"$BIN" repair "$work/torn-src" --out "$work/multi-torn/home/.codex" --format json >"$work/multi-torn/repair.json"
run_case multi-torn "$MULTI"

python3 - "$work" <<'EOF'
import json, pathlib, re, sys
work = pathlib.Path(sys.argv[1])

def items(case):
    body = json.loads((work / case / "bodies" / "0001.json").read_text())
    return body["input"]

def texts(case, role="user"):
    out = []
    for it in items(case):
        if it.get("type") == "message" and it.get("role") == role:
            out.append(" ".join(c.get("text", "") for c in it["content"] if isinstance(c, dict)))
    return out

def steps(case):
    """The "Step N:" prompts of the user messages, in order (a note may precede one in its message)."""
    return [int(n) for t in texts(case) for n in re.findall(r"(?:^| )Step (\d+):", t)[:1]]

def findings(case):
    doc = json.loads((work / case / "check.json").read_text())
    return sorted({f["code"] for s in doc["sessions"] for f in s["findings"]})

checks = []
def expect(case, what, ok):
    checks.append((case, what, ok))

expect("multi-compact", "steps 1-9 (newest replacement_history + what followed), in order", steps("multi-compact") == list(range(1, 10)))
expect("multi-compact", "one summary", sum(t.startswith("Another language model") for t in texts("multi-compact")) == 1)
k4 = texts("multi-keep4")
expect("multi-keep4", "starts with the session-doctor note", k4[0].startswith("[session-doctor compact:"))
expect("multi-keep4", "steps 6-9 only", steps("multi-keep4") == [6, 7, 8, 9])
np_steps = steps("noprogress-compact")
expect("noprogress-compact", "steps 3-4 only (the tail is cut below 95%% of the last trigger, so the loop cannot start again; step 3 rides in the kept replacement history; got %s)" % np_steps, np_steps == [3, 4])
np = [t for t in texts("noprogress-compact") if t.startswith("Another language model")]
expect("noprogress-compact", "only the newest summary (stub request #17)", len(np) == 1 and "#17" in np[0])
imgs = sum(1 for it in items("image-compact") if it.get("type") == "message"
           for c in it["content"] if isinstance(c, dict) and c.get("type") == "input_image")
expect("image-compact", "one input_image left", imgs == 1)
expect("image-compact", "the duplicate became a placeholder",
       sum("removed by session-doctor compact" in t for t in texts("image-compact")) == 1)
lp = items("localpush-compact")
expect("localpush-compact", "the encrypted compaction item is sent", any(it.get("type") == "compaction" for it in lp))
expect("multi-torn", "steps 1-9 (torn last line left out)", steps("multi-torn") == list(range(1, 10)))
for case in ("multi-compact", "multi-keep4", "noprogress-compact", "image-compact", "multi-torn"):
    expect(case, "resumed rollout: no findings", findings(case) == [])
expect("localpush-compact", "resumed rollout: only the persisted impossible count",
       findings("localpush-compact") == ["impossible-usage"])
bad = 0
for case, what, ok in checks:
    print(f"{'ok  ' if ok else 'FAIL'} {case:<20} {what}")
    bad += not ok
print(f"{'PASS' if not bad else 'FAIL'} real Codex CLI 0.169.0 resumed every copy: {len(checks) - bad} of {len(checks)} checks")
sys.exit(1 if bad else 0)
EOF
