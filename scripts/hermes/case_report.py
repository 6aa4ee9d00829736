#!/usr/bin/env python3
"""Helpers for scripts/real_client_hermes.sh (plain python3, stdlib only).

  case_report.py snapshot DB
      JSON on stdout: max message id, total rows, rows / active rows / assistant rows per session.
  case_report.py verdict BEFORE.json DB HERMES_OUTPUT STUB_LOG RC EXPECT_FAIL(0|1) [EXPECT_RESUMED]
      Compares the db after the `hermes chat -q continue --resume` run with the snapshot taken before,
      reads the stub's request log, prints a one-line JSON result and exits 0 when the case passed:
        normal case:   rc == 0 and at least one new assistant row was written, and (when given)
                       hermes resumed EXPECT_RESUMED (the id SessionDB.resolve_resume_session_id chose)
        --expect-fail: rc != 0 or no new assistant row (the turn did not complete)
Opening DB here may create -wal/-shm beside it: only ever pass the temp copy.
"""
import json
import re
import sqlite3
import sys


def snapshot(db):
    con = sqlite3.connect(db)
    try:
        max_id = con.execute("SELECT COALESCE(MAX(id), 0) FROM messages").fetchone()[0]
        per = {}
        for sid, rows, active, asst in con.execute(
                "SELECT session_id, COUNT(*), SUM(active = 1), SUM(role = 'assistant') "
                "FROM messages GROUP BY session_id"):
            per[sid] = {"rows": rows, "active": active, "assistant": asst}
        sessions = [r[0] for r in con.execute("SELECT id FROM sessions ORDER BY started_at, id")]
        ends = {r[0]: r[1] for r in con.execute("SELECT id, end_reason FROM sessions")}
        return {"max_id": max_id, "total_rows": sum(p["rows"] for p in per.values()),
                "per_session": per, "sessions": sessions, "end_reason": ends}
    finally:
        con.close()


def stub_stats(path):
    reqs = []
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    try:
                        reqs.append(json.loads(line))
                    except ValueError:
                        pass
    except FileNotFoundError:
        pass
    main = [r for r in reqs if r.get("n_tools")]
    return {
        "requests": len(reqs),
        "main_requests": len(main),
        "summary_requests": len(reqs) - len(main),
        "status_413": sum(1 for r in reqs if r.get("status") == 413),
        "max_body": max((r.get("bytes", 0) for r in reqs), default=0),
        "max_main_body": max((r.get("bytes", 0) for r in main), default=0),
        "first_main_body": main[0].get("bytes", 0) if main else 0,
        "first_main_messages": main[0].get("n_messages", 0) if main else 0,
        "bodies": [r.get("bytes", 0) for r in reqs],
        "image_parts_max": max((r.get("n_image_parts", 0) for r in reqs), default=0),
    }


def verdict(before_path, db, out_path, stub_log, rc, expect_fail, expect_resumed=None):
    before = json.load(open(before_path))
    after = snapshot(db)
    text = open(out_path, errors="replace").read()
    m = re.findall(r"^session_id:\s*(\S+)", text, re.M)
    final_sid = m[-1] if m else None
    r = re.findall(r"Resumed session (\S+)", text)
    resumed = r[-1] if r else None
    con = sqlite3.connect(db)
    try:
        new = con.execute(
            "SELECT id, session_id, role, length(CAST(content AS BLOB)), tool_calls IS NOT NULL "
            "FROM messages WHERE id > ? ORDER BY id", (before["max_id"],)).fetchall()
    finally:
        con.close()
    new_asst = [n for n in new if n[2] == "assistant"]
    new_sessions = [s for s in after["sessions"] if s not in before["sessions"]]
    completed = rc == 0 and len(new_asst) > 0
    res = {
        "rc": rc,
        "resumed": resumed,
        "final_session": final_sid,
        "rows_before": before["total_rows"],
        "rows_after": after["total_rows"],
        "new_rows": len(new),
        "new_roles": "".join(n[2][0] for n in new),
        "new_assistant_rows": len(new_asst),
        "new_sessions": new_sessions,
        "turn_completed": completed,
        "stub": stub_stats(stub_log),
    }
    problems = []
    if expect_fail:
        if completed:
            problems.append("expected the turn to fail, but it completed")
    else:
        if rc != 0:
            problems.append(f"hermes exited {rc}")
        if not new_asst:
            problems.append("no new assistant row in state.db")
        if expect_resumed and resumed and resumed != expect_resumed:
            problems.append(f"hermes resumed {resumed}, SessionDB resolved {expect_resumed}")
        if expect_resumed and not resumed:
            problems.append("hermes printed no 'Resumed session' line")
    res["problems"] = problems
    res["pass"] = not problems
    print(json.dumps(res))
    return 0 if not problems else 1


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "snapshot":
        print(json.dumps(snapshot(sys.argv[2])))
        return 0
    if len(sys.argv) in (8, 9) and sys.argv[1] == "verdict":
        a = sys.argv[2:]
        return verdict(a[0], a[1], a[2], a[3], int(a[4]), a[5] == "1",
                       a[6] if len(a) > 6 and a[6] else None)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
