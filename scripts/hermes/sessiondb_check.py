#!/usr/bin/env python3
"""Open a hermes state.db COPY with hermes-agent's own SessionDB and load one session.

Run it with the python of the hermes-agent venv (HERMES_PY from scripts/install_clients.sh hermes)
and HERMES_HOME pointing at a private, empty temp dir (hermes_state computes its default path
from HERMES_HOME at import time; we pass the db path explicitly anyway).

Usage: sessiondb_check.py DB SESSION_ID
Prints one JSON object on stdout and exits 0 when every check passed, 1 otherwise.

What it does, in the order hermes itself does it on `hermes sessions list` / `hermes chat --resume`:
  1. SessionDB(DB): full open (schema reconcile, FTS trigger check), as every hermes process does.
  2. get_session(id) must find the row.
  3. list_sessions_rich(exclude_sources=['tool']) (what `hermes sessions list` calls): is the session
     visible, directly or as the lineage root / tip of a projected compression chain?
     list_sessions_rich(include_children=True) must contain it.
  4. resolve_resume_session_id(id) (what --resume does) and get_compression_tip(id).
  5. get_messages_as_conversation(resolved, repair_alternation=True) must return >= 1 message
     (this is the history --resume sends to the model); get_resume_conversations(resolved) too.
  6. get_messages(resolved, include_inactive=True): every \\x00json: content must decode.
  7. export_session(resolved) must work.
  8. PRAGMA integrity_check, FTS5 'integrity-check' on messages_fts and messages_fts_trigram,
     and the FTS rowid sets must equal messages.id (the triggers keep them equal).
"""
import json
import os
import sys
import traceback
from pathlib import Path


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    db_path = Path(sys.argv[1]).resolve()
    sid = sys.argv[2]
    if not os.environ.get("HERMES_HOME"):
        print("sessiondb_check: set HERMES_HOME to a private temp dir", file=sys.stderr)
        return 2
    out = {"db": str(db_path), "session": sid, "errors": []}
    errs = out["errors"]
    try:
        from hermes_state import SessionDB
    except Exception as e:  # pragma: no cover - install problem
        out["errors"].append(f"import hermes_state: {e}")
        print(json.dumps(out))
        return 1

    try:
        db = SessionDB(db_path)
    except Exception as e:
        errs.append(f"SessionDB open failed: {type(e).__name__}: {e}")
        print(json.dumps(out))
        return 1

    try:
        meta = db.get_session(sid)
        if not meta:
            errs.append("get_session: session not found")
        else:
            out["end_reason"] = meta.get("end_reason")
            out["parent_session_id"] = meta.get("parent_session_id")
            out["message_count_col"] = meta.get("message_count")

        listing = db.list_sessions_rich(exclude_sources=["tool"], limit=100000)
        ids = {s["id"] for s in listing}
        roots = {s.get("_lineage_root_id") for s in listing if s.get("_lineage_root_id")}
        out["listed"] = sid in ids or sid in roots
        out["listed_rows"] = len(listing)
        kids = db.list_sessions_rich(include_children=True, limit=100000)
        if sid not in {s["id"] for s in kids}:
            errs.append("list_sessions_rich(include_children=True) does not list the session")

        resolved = db.resolve_resume_session_id(sid)
        out["resolved"] = resolved
        out["compression_tip"] = db.get_compression_tip(sid)

        conv = db.get_messages_as_conversation(resolved, repair_alternation=True)
        out["loaded_messages"] = len(conv)
        out["loaded_roles"] = "".join((m.get("role") or "?")[0] for m in conv)
        if not conv:
            errs.append(f"get_messages_as_conversation({resolved}) returned no messages")
        model_hist, display_hist = db.get_resume_conversations(resolved)
        out["resume_model_messages"] = len(model_hist)
        out["resume_display_messages"] = len(display_hist)

        rows = db.get_messages(resolved, include_inactive=True)
        out["rows_all"] = len(rows)
        out["rows_active"] = sum(1 for r in rows if r.get("active") == 1)
        bad = [r["id"] for r in rows
               if isinstance(r.get("content"), str) and r["content"].startswith("\x00json:")]
        if bad:
            errs.append(f"undecodable \\x00json: content in rows {bad[:10]}")

        # tool pairing in what --resume loads (after hermes' own repair_message_sequence)
        calls, results = set(), set()
        for m in conv:
            for tc in m.get("tool_calls") or []:
                if isinstance(tc, dict):
                    cid = (tc.get("call_id") or tc.get("id") or "").strip()
                    if cid:
                        calls.add(cid)
            if m.get("role") == "tool" and m.get("tool_call_id"):
                results.add(m["tool_call_id"].strip())
        out["unmatched_calls"] = len(calls - results)
        out["orphan_results"] = len(results - calls)

        exp = db.export_session(resolved)
        if not exp:
            errs.append("export_session returned nothing")

        conn = db._conn
        ic = conn.execute("PRAGMA integrity_check").fetchall()
        out["integrity_check"] = "ok" if [r[0] for r in ic] == ["ok"] else str([r[0] for r in ic][:5])
        if out["integrity_check"] != "ok":
            errs.append(f"integrity_check: {out['integrity_check']}")
        msg_ids = {r[0] for r in conn.execute("SELECT id FROM messages")}
        for tbl in ("messages_fts", "messages_fts_trigram"):
            exists = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE name = ?", (tbl,)).fetchone()
            if not exists:
                errs.append(f"{tbl} missing")
                continue
            try:
                conn.execute(f"INSERT INTO {tbl}({tbl}) VALUES('integrity-check')")
            except Exception as e:
                errs.append(f"{tbl} integrity-check: {e}")
            fts_ids = {r[0] for r in conn.execute(f"SELECT rowid FROM {tbl}")}
            if fts_ids != msg_ids:
                errs.append(f"{tbl} out of sync with messages: {len(fts_ids - msg_ids)} extra, "
                            f"{len(msg_ids - fts_ids)} missing rowids")
        trig = sorted(r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type='trigger' AND tbl_name='messages'"))
        out["fts_triggers"] = len(trig)
        if len(trig) < 6:
            errs.append(f"FTS triggers missing: {trig}")
    except Exception as e:
        errs.append(f"{type(e).__name__}: {e}")
        out["traceback"] = traceback.format_exc().splitlines()[-4:]
    finally:
        try:
            db.close()
        except Exception:
            pass
    print(json.dumps(out))
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
