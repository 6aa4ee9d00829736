#!/usr/bin/env python3
"""Check a docker-agent (cagent) session database copy written by session-doctor,
without a docker-agent binary ("no real client" verification).

usage: check_docker_agent_copy.py ORIGINAL COPY [--session ID] [--expect TABLE:KEY]...
                                  [--expect-file FILE] [--allow-preexisting-fk]
                                  [--no-view] [--json]

Both databases are copied (with their -wal / -shm side files) into a private
temp dir before SQLite opens them; neither path is ever opened in place.

What it does, in order:
  1. PRAGMA integrity_check and PRAGMA foreign_key_check on the copy (and, for
     reference, on the original).
  2. The `migrations` table must be identical in both (every row, every byte);
     the schema (sqlite_master) must be identical too: docker-agent decides
     what to migrate from these, so a copy must not touch them.
  3. Every row of every table that differs between original and copy is listed
     (added / removed / changed, with the changed columns and their sizes).
     With --expect (repeatable, "TABLE:KEY", KEY = rowid or the primary key
     joined with "|") or --expect-file (one TABLE:KEY per line), any differing
     row not expected is a failure: rows not reported as edited must be
     byte-identical.
  4. The model-visible view docker-agent's Session.GetMessages rebuilds from
     each session (last summary -> user "Session Summary: <text>", then the
     items from first_kept_entry when 0 < first_kept_entry < summary index,
     else after the summary; message items only; whitespace-only messages
     dropped; orphan / duplicate tool results dropped; unanswered tool calls
     get a synthetic "No result provided" result) is printed for both, one
     line per message: role, source item id, bytes. Agent-level prompt parts
     (system prompts, NumHistoryItems trimming, tool-content truncation caps)
     depend on the agent config and are not applied.

Exit status: 0 ok; 1 integrity / foreign-key / migrations / schema failure or
an unexpected row difference; 2 usage or open error.
stdlib only (python3 >= 3.8, SQLite >= 3.35 for the newest schema).
"""
import argparse
import hashlib
import json
import os
import shutil
import sqlite3
import sys
import tempfile

SUMMARY_PREFIX = "Session Summary: "          # pkg/chat SummaryMessagePrefix
NO_RESULT = "No result provided"              # pkg/session sanitizeToolCalls

# --------------------------------------------------------------------------
# opening


def copy_with_sidecars(src, dst_dir, name):
    """Copy src and its -wal/-shm into dst_dir/name; returns the new db path."""
    if not os.path.isfile(src):
        raise FileNotFoundError(src)
    os.makedirs(dst_dir, exist_ok=True)
    dst = os.path.join(dst_dir, name)
    shutil.copyfile(src, dst)
    for side in ("-wal", "-shm"):
        if os.path.exists(src + side):
            shutil.copyfile(src + side, dst + side)
    return dst


def file_digest(path):
    h = hashlib.sha256()
    for p in (path, path + "-wal", path + "-shm"):
        if os.path.exists(p):
            with open(p, "rb") as f:
                h.update(p[len(path):].encode())
                h.update(f.read())
    return h.hexdigest()


def open_db(path):
    con = sqlite3.connect(path)
    con.text_factory = bytes  # keep raw bytes: rows are compared byte for byte
    return con


def s(v):
    """bytes -> str (TEXT values come back as bytes)."""
    if isinstance(v, bytes):
        return v.decode("utf-8", "surrogateescape")
    return v


def tables(con):
    return [s(r[0]) for r in con.execute(
        "SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]


def columns(con, table):
    return [s(r[1]) for r in con.execute('PRAGMA table_info("%s")' % table.replace('"', '""'))]


def has_rowid(con, table):
    try:
        con.execute('SELECT rowid FROM "%s" LIMIT 1' % table.replace('"', '""')).fetchall()
        return True
    except sqlite3.OperationalError:
        return False


def pk_columns(con, table):
    rows = con.execute('PRAGMA table_info("%s")' % table.replace('"', '""')).fetchall()
    return [s(r[1]) for r in sorted(rows, key=lambda r: r[5]) if r[5]]


# --------------------------------------------------------------------------
# docker-agent store model (what pkg/session/store.go loadSessionItems builds)


def schema_generation(con):
    """'items-029'-style label: the store shape and the highest migration id."""
    names = tables(con)
    if "sessions" not in names:
        return None
    mig = 0
    if "migrations" in names:
        mig = con.execute("SELECT COALESCE(MAX(id),0) FROM migrations").fetchone()[0]
    if "session_items" in names:
        return "items-%03d" % mig
    if "messages" in columns(con, "sessions"):
        return "legacy-%03d" % mig
    return "unknown-%03d" % mig


def _json(raw):
    if raw is None:
        return None
    return json.loads(s(raw))


def load_store(con):
    """Returns {"generation", "sessions": {id: session}} where a session is
    {"id", "parent_id", "items": [item...], "skipped": [...], "error": str|None}.
    An item is {"kind", "index", "position", "item_id", "bytes", ...}; index is
    the position in docker-agent's in-memory Messages slice (what
    first_kept_entry indexes), which differs from `position` when rows are
    skipped (orphan / NULL sub-session references, unknown item types)."""
    gen = schema_generation(con)
    out = {"generation": gen, "sessions": {}}
    if gen is None:
        return out
    scols = columns(con, "sessions")
    parent_col = "parent_id" if "parent_id" in scols else "NULL"
    srows = con.execute("SELECT id, %s FROM sessions ORDER BY created_at, id" % parent_col).fetchall()
    ids = set(s(r[0]) for r in srows)
    if gen.startswith("items"):
        icols = columns(con, "session_items")
        fke = "COALESCE(first_kept_entry,0)" if "first_kept_entry" in icols else "0"
        cost = "cost" if "cost" in icols else "0"
        model = "COALESCE(model,'')" if "model" in icols else "''"
        usage = "COALESCE(usage_json,'')" if "usage_json" in icols else "''"
        for sid_raw, parent in srows:
            sid = s(sid_raw)
            sess = {"id": sid, "parent_id": s(parent) or None, "items": [], "skipped": [], "error": None}
            q = ("SELECT id, position, item_type, agent_name, message_json, implicit, subsession_id, "
                 "summary_text, %s, %s, %s, %s FROM session_items WHERE session_id=? "
                 "ORDER BY position, id" % (fke, cost, model, usage))
            for (iid, pos, typ, agent, mj, implicit, subid, stext, fk, c, m, uj) in con.execute(q, (sid,)):
                typ = s(typ)
                base = {"item_id": iid, "position": pos, "type": typ}
                try:
                    if typ == "message":
                        if mj is None:
                            raise ValueError("message_json is NULL")
                        msg = _json(mj)
                        it = dict(base, kind="message", agent=s(agent) or "", implicit=bool(implicit),
                                  message=msg, bytes=len(mj or b""))
                    elif typ == "subsession":
                        sub = s(subid)
                        if not sub:
                            sess["skipped"].append(dict(base, reason="subsession reference is NULL"))
                            continue
                        if sub not in ids:
                            sess["skipped"].append(dict(base, reason="orphaned subsession reference", subsession_id=sub))
                            continue
                        it = dict(base, kind="subsession", subsession_id=sub, bytes=0)
                    elif typ == "summary":
                        it = dict(base, kind="summary", summary=s(stext) or "", first_kept_entry=fk,
                                  cost=c, model=s(m) or "", usage=_json(uj) if uj else None,
                                  bytes=len(stext or b""))
                    elif typ in ("error", "termination"):
                        it = dict(base, kind=typ, data=_json(mj) if mj else {}, bytes=len(mj or b""))
                    else:
                        sess["skipped"].append(dict(base, reason="unknown item_type"))
                        continue
                except (ValueError, UnicodeDecodeError) as e:
                    sess["error"] = "item %s (position %s): %s" % (iid, pos, e)
                    continue
                it["index"] = len(sess["items"])
                sess["items"].append(it)
            out["sessions"][sid] = sess
    else:  # legacy: one JSON `messages` column per session, sub-sessions embedded
        for sid_raw, parent in srows:
            sid = s(sid_raw)
            raw = con.execute("SELECT messages FROM sessions WHERE id=?", (sid,)).fetchone()[0]
            _load_legacy(out["sessions"], sid, s(parent) or None, raw)
    return out


def _load_legacy(store, sid, parent, raw):
    sess = {"id": sid, "parent_id": parent, "items": [], "skipped": [], "error": None}
    store[sid] = sess
    try:
        items = json.loads(s(raw)) if raw not in (None, b"", "") else []
    except ValueError as e:
        sess["error"] = "messages JSON: %s" % e
        return
    for n, x in enumerate(items or []):
        base = {"item_id": "json[%d]" % n, "position": n}
        if x.get("message") is not None:
            m = x["message"]
            inner = m.get("message") or {}
            it = dict(base, kind="message", type="message", agent=m.get("agentName") or m.get("agent_name") or "",
                      implicit=bool(m.get("implicit")), message=inner,
                      bytes=len(go_json(inner).encode()))
        elif x.get("sub_session") is not None:
            sub = x["sub_session"]
            subid = sub.get("id") or ""
            _load_legacy(store, subid, sid, json.dumps(sub.get("messages") or []))
            it = dict(base, kind="subsession", type="sub_session", subsession_id=subid, bytes=0)
        elif x.get("summary"):
            it = dict(base, kind="summary", type="summary", summary=x["summary"],
                      first_kept_entry=x.get("first_kept_entry") or 0, cost=x.get("cost") or 0,
                      model=x.get("model") or "", usage=x.get("usage"), bytes=len(x["summary"].encode()))
        elif x.get("error") is not None or x.get("termination") is not None:
            k = "error" if x.get("error") is not None else "termination"
            it = dict(base, kind=k, type=k, data=x[k], bytes=0)
        else:
            sess["skipped"].append(dict(base, reason="empty item"))
            continue
        it["index"] = len(sess["items"])
        sess["items"].append(it)


def go_json(v):
    """JSON as Go's encoding/json writes it (what migration 015 stores): no
    spaces, HTML-safe escapes for <, >, & and U+2028/U+2029."""
    out = json.dumps(v, ensure_ascii=False, separators=(",", ":"))
    return (out.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def summary_start(items):
    """(last summary index or -1, start index) as buildSessionSummaryMessages."""
    last = -1
    for it in reversed(items):
        if it["kind"] == "summary" and it["summary"] != "":
            last = it["index"]
            break
    start = last + 1
    if last >= 0:
        kept = items[last]["first_kept_entry"] or 0
        if 0 < kept < last:
            start = kept
    return last, start


def _blank(x):
    return x is None or (isinstance(x, str) and x.strip() == "")


def build_view(sess):
    """The conversation part of Session.GetMessages for one session.
    Returns (entries, stats); entry = {role, source, item_id, position, index, bytes}."""
    items = sess["items"]
    last, start = summary_start(items)
    raw = []
    if last >= 0:
        text = SUMMARY_PREFIX + items[last]["summary"]
        raw.append(({"role": "user", "content": text}, {"source": "summary", "item_id": items[last]["item_id"],
                                                         "position": items[last]["position"], "index": last,
                                                         "bytes": len(text.encode())}))
    for it in items[start:]:
        if it["kind"] == "message":
            raw.append((it["message"], {"source": "item", "item_id": it["item_id"], "position": it["position"],
                                        "index": it["index"], "bytes": it["bytes"]}))
    stats = {"last_summary_index": last, "start_index": start, "dropped_blank": 0,
             "dropped_orphan_tool_results": 0, "dropped_duplicate_tool_results": 0,
             "injected_tool_results": 0}
    # normalizeMessageContent
    norm = []
    for msg, meta in raw:
        role = msg.get("role")
        if role != "tool":
            mc = msg.get("multi_content") or []
            if mc:
                kept = [p for p in mc if not (p.get("type") == "text" and _blank(p.get("text")))]
                if not kept:
                    stats["dropped_blank"] += 1
                    continue
            elif _blank(msg.get("content")) and not msg.get("tool_calls") and not msg.get("function_call"):
                stats["dropped_blank"] += 1
                continue
        norm.append((msg, meta))
    # sanitizeToolCalls
    out, pending, pending_ids, result_ids = [], [], set(), set()

    def flush():
        for tc in pending:
            tid = tc.get("id") or ""
            if tid and tid not in result_ids:
                out.append(({"role": "tool", "tool_call_id": tid, "content": NO_RESULT, "is_error": True},
                            {"source": "synthetic-tool-result", "item_id": None, "position": None, "index": None,
                             "bytes": len(NO_RESULT), "tool_call_id": tid}))
                stats["injected_tool_results"] += 1
        pending.clear()
        pending_ids.clear()
        result_ids.clear()

    for msg, meta in norm:
        role = msg.get("role")
        if role == "tool":
            tid = msg.get("tool_call_id") or ""
            if not tid or tid not in pending_ids:
                stats["dropped_orphan_tool_results"] += 1
                continue
            if tid in result_ids:
                stats["dropped_duplicate_tool_results"] += 1
                continue
            result_ids.add(tid)
        elif role == "assistant" and msg.get("tool_calls"):
            flush()
            out.append((msg, meta))
            pending.extend(msg["tool_calls"])
            pending_ids.update(tc.get("id") for tc in msg["tool_calls"] if tc.get("id"))
            continue
        elif role in ("user", "assistant"):
            flush()
        out.append((msg, meta))
    flush()
    entries = [dict(meta, role=msg.get("role")) for msg, meta in out]
    stats["messages"] = len(entries)
    stats["bytes"] = sum(e["bytes"] for e in entries)
    return entries, stats


# --------------------------------------------------------------------------
# checks


def integrity(con):
    return [s(r[0]) for r in con.execute("PRAGMA integrity_check")]


def fk_violations(con):
    return sorted((s(r[0]), r[1], s(r[2]), r[3]) for r in con.execute("PRAGMA foreign_key_check"))


def migrations_rows(con):
    if "migrations" not in tables(con):
        return None
    return [tuple(r) for r in con.execute("SELECT id, name, description, applied_at FROM migrations ORDER BY id")]


def schema_rows(con):
    return [tuple(r) for r in con.execute(
        "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name")]


def table_rows(con, table):
    q = '"%s"' % table.replace('"', '""')
    cols = columns(con, table)
    sel = ", ".join('typeof("%s"), "%s"' % (c.replace('"', '""'), c.replace('"', '""')) for c in cols)
    if has_rowid(con, table):
        keyname = "rowid"
        rows = con.execute("SELECT rowid, %s FROM %s" % (sel, q)).fetchall()
        keyed = {str(r[0]): r[1:] for r in rows}
    else:
        pks = pk_columns(con, table)
        keyname = "|".join(pks)
        pksel = " || '|' || ".join('CAST("%s" AS TEXT)' % p.replace('"', '""') for p in pks)
        rows = con.execute("SELECT %s, %s FROM %s" % (pksel, sel, q)).fetchall()
        keyed = {s(r[0]): r[1:] for r in rows}
    return cols, keyname, keyed


def _size(v):
    if v is None:
        return 0
    if isinstance(v, (bytes, str)):
        return len(v)
    return len(repr(v))


def diff_tables(oc, cc):
    diffs = []
    for t in sorted(set(tables(oc)) | set(tables(cc))):
        if t not in tables(cc) or t not in tables(oc):
            diffs.append({"table": t, "key": None, "change": "table-only-in-" + ("original" if t in tables(oc) else "copy")})
            continue
        ocols, keyname, orows = table_rows(oc, t)
        ccols, _, crows = table_rows(cc, t)
        if ocols != ccols:
            diffs.append({"table": t, "key": None, "change": "columns", "original": ocols, "copy": ccols})
            continue
        for k in sorted(set(orows) | set(crows), key=lambda x: (len(x), x)):
            a, b = orows.get(k), crows.get(k)
            if a == b:
                continue
            d = {"table": t, "key_name": keyname, "key": k}
            ref = b if b is not None else a
            if t == "session_items":
                idx = {c: i for i, c in enumerate(ocols)}
                for c in ("session_id", "position", "item_type"):
                    d[c] = s(ref[2 * idx[c] + 1])
            if a is None:
                d["change"] = "added"
                d["bytes"] = sum(_size(b[2 * i + 1]) for i in range(len(ccols)))
            elif b is None:
                d["change"] = "removed"
                d["bytes"] = sum(_size(a[2 * i + 1]) for i in range(len(ocols)))
            else:
                d["change"] = "changed"
                d["columns"] = []
                for i, c in enumerate(ocols):
                    if a[2 * i:2 * i + 2] != b[2 * i:2 * i + 2]:
                        col = {"column": c, "type": [s(a[2 * i]), s(b[2 * i])],
                               "bytes": [_size(a[2 * i + 1]), _size(b[2 * i + 1])]}
                        if all(not isinstance(x, (bytes, str)) for x in (a[2 * i + 1], b[2 * i + 1])):
                            col["values"] = [a[2 * i + 1], b[2 * i + 1]]
                        d["columns"].append(col)
            diffs.append(d)
    return diffs


def counts(con):
    return {t: con.execute('SELECT COUNT(*) FROM "%s"' % t.replace('"', '""')).fetchone()[0] for t in tables(con)}


def sessions_in_scope(store, sid):
    if sid is None:
        return list(store["sessions"])
    keep, todo = [], [sid]
    while todo:
        x = todo.pop(0)
        if x in store["sessions"] and x not in keep:
            keep.append(x)
            todo.extend(it["subsession_id"] for it in store["sessions"][x]["items"] if it["kind"] == "subsession")
    return keep


# --------------------------------------------------------------------------


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("original")
    ap.add_argument("copy")
    ap.add_argument("--session", help="print the view of this session (and its sub-sessions) only")
    ap.add_argument("--expect", action="append", default=[], metavar="TABLE:KEY",
                    help="a row session-doctor reports as edited (repeatable)")
    ap.add_argument("--expect-file", help="file with one TABLE:KEY per line")
    ap.add_argument("--allow-preexisting-fk", action="store_true",
                    help="foreign-key violations already present in the original are warnings")
    ap.add_argument("--no-view", action="store_true", help="do not print the per-message views")
    ap.add_argument("--json", action="store_true", help="print one JSON document instead of text")
    a = ap.parse_args(argv)

    expected = set(a.expect)
    if a.expect_file:
        with open(a.expect_file) as f:
            expected |= {ln.strip() for ln in f if ln.strip() and not ln.startswith("#")}

    tmp = tempfile.mkdtemp(prefix="check-docker-agent-")
    report = {"original": a.original, "copy": a.copy, "failures": [], "warnings": []}
    try:
        before = file_digest(a.original)
        try:
            op = copy_with_sidecars(a.original, os.path.join(tmp, "original"), "session.db")
            cp = copy_with_sidecars(a.copy, os.path.join(tmp, "copy"), "session.db")
            oc, cc = open_db(op), open_db(cp)
            oc.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            cc.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        except (OSError, sqlite3.DatabaseError) as e:
            print("error: cannot open: %s" % e, file=sys.stderr)
            return 2
        fail, warn = report["failures"], report["warnings"]

        report["integrity_copy"] = integrity(cc)
        report["integrity_original"] = integrity(oc)
        if report["integrity_copy"] != ["ok"]:
            fail.append("integrity_check on the copy: " + "; ".join(report["integrity_copy"][:5]))
        fk_o, fk_c = fk_violations(oc), fk_violations(cc)
        report["foreign_key_violations_original"] = [list(x) for x in fk_o]
        report["foreign_key_violations_copy"] = [list(x) for x in fk_c]
        new_fk = [x for x in fk_c if x not in fk_o] if a.allow_preexisting_fk else fk_c
        if new_fk:
            fail.append("foreign_key_check on the copy: %d violation(s), e.g. %s" % (len(new_fk), new_fk[0]))
        elif fk_c:
            warn.append("%d foreign-key violation(s) already in the original are still in the copy" % len(fk_c))

        mo, mc = migrations_rows(oc), migrations_rows(cc)
        report["migrations"] = {"original_count": None if mo is None else len(mo),
                                "copy_count": None if mc is None else len(mc),
                                "original_max_id": max((r[0] for r in mo), default=0) if mo else 0,
                                "copy_max_id": max((r[0] for r in mc), default=0) if mc else 0,
                                "identical": mo == mc}
        if mo != mc:
            fail.append("migrations table differs (original %s rows, copy %s rows)" % (
                report["migrations"]["original_count"], report["migrations"]["copy_count"]))
        if schema_rows(oc) != schema_rows(cc):
            so, sc = set(schema_rows(oc)), set(schema_rows(cc))
            fail.append("schema differs: only in original %s; only in copy %s" % (
                sorted(s(x[1]) for x in so - sc), sorted(s(x[1]) for x in sc - so)))

        diffs = diff_tables(oc, cc)
        report["row_differences"] = diffs
        differing = {"%s:%s" % (d["table"], d["key"]) for d in diffs}
        if expected:
            unexpected = sorted(differing - expected)
            if unexpected:
                fail.append("%d differing row(s) not reported as edited: %s" % (len(unexpected), ", ".join(unexpected[:10])))
            missing = sorted(expected - differing)
            if missing:
                warn.append("expected edits with no difference: " + ", ".join(missing[:10]))

        report["figures"] = {
            "original_bytes": os.path.getsize(a.original) + (os.path.getsize(a.original + "-wal") if os.path.exists(a.original + "-wal") else 0),
            "copy_bytes": os.path.getsize(a.copy) + (os.path.getsize(a.copy + "-wal") if os.path.exists(a.copy + "-wal") else 0),
            "original_rows": counts(oc), "copy_rows": counts(cc),
        }
        so_, sc_ = load_store(oc), load_store(cc)
        report["generation"] = {"original": so_["generation"], "copy": sc_["generation"]}
        views = {}
        for label, st in (("original", so_), ("copy", sc_)):
            for sid in sessions_in_scope(st, a.session):
                sess = st["sessions"][sid]
                entries, stats = build_view(sess)
                v = views.setdefault(sid, {})
                v[label] = {"parent_id": sess["parent_id"], "items": len(sess["items"]),
                            "summaries": sum(1 for it in sess["items"] if it["kind"] == "summary"),
                            "skipped": sess["skipped"], "load_error": sess["error"],
                            "stats": stats, "view": entries}
                if sess["error"]:
                    (fail if label == "copy" else warn).append("%s session %s does not load: %s" % (label, sid, sess["error"]))
        if a.session and a.session not in views:
            warn.append("session %s not found" % a.session)
        for sid, v in views.items():
            o, c = v.get("original"), v.get("copy")
            v["same_view"] = bool(o and c and [(e["role"], e["source"], e["item_id"], e["bytes"]) for e in o["view"]]
                                  == [(e["role"], e["source"], e["item_id"], e["bytes"]) for e in c["view"]])
        report["views"] = views
        report["original_untouched"] = file_digest(a.original) == before
        if not report["original_untouched"]:
            fail.append("the original changed while it was checked")
        oc.close()
        cc.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    if a.json:
        print(json.dumps(report, indent=1, default=s))
    else:
        print_text(report, a.no_view)
    return 1 if report["failures"] else 0


def print_text(r, no_view):
    f = r["figures"]
    print("original: %s (%d bytes, %s)" % (r["original"], f["original_bytes"], r["generation"]["original"]))
    print("copy:     %s (%d bytes, %s)" % (r["copy"], f["copy_bytes"], r["generation"]["copy"]))
    print("integrity_check (copy): %s" % "; ".join(r["integrity_copy"][:5]))
    print("foreign_key_check: original %d, copy %d violation(s)" % (
        len(r["foreign_key_violations_original"]), len(r["foreign_key_violations_copy"])))
    for x in r["foreign_key_violations_copy"][:10]:
        print("  copy fk: table %s rowid %s -> %s (fk #%s)" % tuple(x))
    m = r["migrations"]
    print("migrations: original %s rows (max id %s), copy %s rows (max id %s), identical: %s" % (
        m["original_count"], m["original_max_id"], m["copy_count"], m["copy_max_id"], m["identical"]))
    print("rows per table (original -> copy):")
    for t in sorted(set(f["original_rows"]) | set(f["copy_rows"])):
        print("  %-28s %6s -> %6s" % (t, f["original_rows"].get(t, "-"), f["copy_rows"].get(t, "-")))
    d = r["row_differences"]
    print("differing rows: %d" % len(d))
    for x in d:
        extra = ""
        if "session_id" in x:
            extra = " session=%s position=%s type=%s" % (x["session_id"], x["position"], x["item_type"])
        if x.get("change") == "changed":
            extra += " columns=" + ",".join(
                "%s(%s->%s)" % (c["column"], c["values"][0], c["values"][1]) if "values" in c
                else "%s(%d->%d bytes)" % (c["column"], c["bytes"][0], c["bytes"][1]) for c in x["columns"])
        elif "bytes" in x:
            extra += " bytes=%d" % x["bytes"]
        print("  %s %s:%s%s" % (x["change"], x["table"], x["key"], extra))
    for sid, v in r["views"].items():
        for label in ("original", "copy"):
            if label not in v:
                print("session %s: absent in %s" % (sid, label))
                continue
            x = v[label]
            st = x["stats"]
            print("session %s [%s] parent=%s items=%d summaries=%d skipped=%d view: %d messages, %d bytes "
                  "(last summary index %d, start %d, injected %d, dropped orphan %d, dropped blank %d)" % (
                      sid, label, x["parent_id"], x["items"], x["summaries"], len(x["skipped"]), st["messages"],
                      st["bytes"], st["last_summary_index"], st["start_index"], st["injected_tool_results"],
                      st["dropped_orphan_tool_results"], st["dropped_blank"]))
            for sk in x["skipped"]:
                print("    skipped item %s position %s: %s" % (sk["item_id"], sk["position"], sk["reason"]))
            if not no_view:
                for e in x["view"]:
                    src = e["source"] if e["item_id"] is None else "%s %s @%s" % (e["source"], e["item_id"], e["position"])
                    print("    %-9s %-30s %8d" % (e["role"], src, e["bytes"]))
        print("session %s: same view in original and copy: %s" % (sid, v["same_view"]))
    for w in r["warnings"]:
        print("warning: " + w)
    for x in r["failures"]:
        print("FAIL: " + x)
    print("result: %s" % ("FAIL" if r["failures"] else "ok"))


if __name__ == "__main__":
    sys.exit(main())
