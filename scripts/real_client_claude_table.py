#!/usr/bin/env python3
"""Table of scripts/real_client_claude.sh: per session of every copy, session-doctor's totals
vs ccusage's and claude-code-log's. Usage: real_client_claude_table.py WORK_DIR"""
import json
import pathlib
import re
import sys

work = pathlib.Path(sys.argv[1])
ZERO = (0, 0, 0, 0)


def first_session_id(f):
    with open(f, "rb") as fh:
        for line in fh:
            try:
                d = json.loads(line)
            except ValueError:
                continue
            if isinstance(d, dict) and isinstance(d.get("sessionId"), str):
                return d["sessionId"]
    return None


def main_file_first_lines(f):
    """What claude-code-log 1.7.0 counts: the session file alone (no agent files), each API
    response (message.id + requestId) once with its FIRST line's usage, and whether any
    non-sidechain assistant line exists (else it renders no session)."""
    seen, tot, any_main = set(), [0, 0, 0, 0], False
    with open(f, "rb") as fh:
        for line in fh:
            try:
                d = json.loads(line)
            except ValueError:
                continue
            if not isinstance(d, dict) or d.get("type") != "assistant":
                continue
            any_main |= not d.get("isSidechain")
            m = d.get("message") or {}
            u = m.get("usage") if isinstance(m, dict) else None
            if not u:
                continue
            k = (m.get("id"), d.get("requestId"))
            if k in seen:
                continue
            seen.add(k)
            for i, key in enumerate(("input_tokens", "output_tokens", "cache_creation_input_tokens",
                                     "cache_read_input_tokens")):
                tot[i] += u.get(key) or 0
    return tuple(tot), any_main


rows, bad = [], 0
for sd_file in sorted(work.glob("*.sd.json")):
    name = sd_file.name[: -len(".sd.json")]
    copy = work / name
    cc = {}
    cc_file = work / f"{name}.ccusage.json"
    if cc_file.exists() and cc_file.stat().st_size:
        cc = {x["sessionId"]: (x["inputTokens"], x["outputTokens"], x["cacheCreationTokens"], x["cacheReadTokens"])
              for x in json.loads(cc_file.read_text())["sessions"]}
    # Older agent-*.jsonl beside a session: session-doctor folds them in, ccusage keys them by
    # file name (see scripts/ccusage_compare_claude.sh).
    agents = {}
    for f in (copy / "projects").rglob("agent-*.jsonl"):
        if f.parent.name != "subagents":
            sid = first_session_id(f)
            if sid and (f.parent / f"{sid}.jsonl").exists():
                agents.setdefault(sid, []).append(f.stem)
    for s in json.loads(sd_file.read_text())["sessions"]:
        t = s["tokens_total"]
        ours = (t["input"], t["output"], t["cache_write"], t["cache_read"])
        sid = s["id"]
        c = cc.get(sid, ZERO)
        for a in agents.get(sid, []):
            c = tuple(x + y for x, y in zip(c, cc.get(a, ZERO)))
        ok_cc = c == ours
        # claude-code-log names a session by its lines' sessionId, not by the file name.
        ccl_file = work / f"{name}.ccl" / f"{sid}.json"
        main = pathlib.Path(s["source"])
        if main.stat().st_size == 0:
            ccl, ok_ccl = "empty file", True
        else:
            expected, renders = main_file_first_lines(main)
            doc = json.loads(ccl_file.read_text()) if ccl_file.exists() else {}
            sess = [x for x in doc.get("sessions", []) if x.get("id") == sid] or doc.get("sessions", [])[:1]
            summary = sess[0].get("token_summary") if sess else None
            if summary:
                # "Token usage - Input: N | Output: N | Cache Creation: N | Cache Read: N"
                nums = tuple(int(n) for n in re.findall(r"\d+", summary))
                ccl = "/".join(map(str, nums))
                if nums == ours:
                    ok_ccl = True
                else:
                    # Explained: the file alone, first line of each split response.
                    ok_ccl = nums == expected
                    ccl += " (main file, first lines)"
            elif sess:
                ccl, ok_ccl = "no usage", ours == ZERO
            else:
                # No non-sidechain assistant line: claude-code-log renders no session.
                ccl, ok_ccl = "no session", not renders
        ok = ok_cc and ok_ccl
        bad += not ok
        rows.append((name, sid, "/".join(map(str, ours)), "/".join(map(str, c)), ccl, "yes" if ok else "NO"))
print(f"{'copy':<22} {'session':<38} {'session-doctor':<28} {'ccusage':<28} {'claude-code-log':<34} ok")
for r in rows:
    print(f"{r[0]:<22} {r[1]:<38} {r[2]:<28} {r[3]:<28} {r[4]:<34} {r[5]}")
print(f"{'PASS' if not bad else 'FAIL'} real clients on Claude Code copies: {len(rows) - bad} of {len(rows)} "
      "sessions read by ccusage and claude-code-log with session-doctor's totals")
sys.exit(1 if bad else 0)
