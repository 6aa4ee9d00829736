#!/usr/bin/env bash
# No-client check of docker-agent copies (no docker-agent binary can run here):
# for every database in fixtures/docker-agent and in the shared docker-agent data
# (../shared/real-sessions/cagent, when present), `repair` writes a copy and
# `compact` writes one per session (--max-request-bytes 1000000, which strips the
# oversized fixture's historical image; one --keep-turns cut on the newest schema),
# and scripts/check_docker_agent_copy.py checks each copy: integrity_check,
# foreign_key_check (no new violation), identical migrations and schema, every
# row not reported as edited byte-identical, and the view GetMessages rebuilds.
# The originals' bytes (with -wal) are compared before and after.
#
# usage: scripts/check_docker_agent_copies.sh BIN
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath "${1:?usage: $0 BIN}")
SHARED=${DOCKER_AGENT_SHARED:-../shared/real-sessions/cagent}
python3 - "$BIN" "$SHARED" <<'EOF'
import glob, hashlib, json, os, sqlite3, subprocess, sys, tempfile, shutil

BIN, SHARED = sys.argv[1], sys.argv[2]
dbs = sorted(glob.glob("fixtures/docker-agent/*/*.db"))
if os.path.isdir(SHARED):
    dbs += sorted(glob.glob(os.path.join(SHARED, "**", "*.db"), recursive=True))

def digest(paths):
    h = {}
    for p in paths:
        for s in ("", "-wal", "-shm"):
            if os.path.exists(p + s):
                with open(p + s, "rb") as f:
                    h[p + s] = hashlib.sha256(f.read()).hexdigest()
    return h

def run(args):
    r = subprocess.run([BIN] + args, capture_output=True, text=True)
    return r.returncode, (json.loads(r.stdout) if r.stdout.strip() else None), r.stderr

def open_copy(path):
    tmp = tempfile.mkdtemp()
    for s in ("", "-wal"):
        if os.path.exists(path + s):
            shutil.copyfile(path + s, os.path.join(tmp, "x.db" + s))
    return sqlite3.connect(os.path.join(tmp, "x.db")), tmp

def expected_rows(db, copy, changes):
    """TABLE:KEY of every row the reported changes touch."""
    con, tmp = open_copy(db)
    cols = [r[1] for r in con.execute("PRAGMA table_info(sessions)")]
    legacy = "messages" in cols and not con.execute(
        "SELECT 1 FROM sqlite_master WHERE name='session_items'").fetchone()
    out = set()
    for c in changes:
        sid, mid = c["session_id"], c["message_id"]
        if legacy:
            for rowid, rid, msgs in con.execute("SELECT rowid, id, messages FROM sessions"):
                if rid == sid or (msgs and sid in msgs):
                    out.add("sessions:%d" % rowid)
                    break
        elif c["field"] == "session_items" and c["old"] is None:
            cc, ctmp = open_copy(copy)
            new = cc.execute("SELECT max(id) FROM session_items WHERE session_id=?", (sid,)).fetchone()[0]
            out.add("session_items:%d" % new)
            out.add("sessions:%d" % cc.execute("SELECT rowid FROM sessions WHERE id=?", (sid,)).fetchone()[0])
            out.add("sqlite_sequence:%d" % cc.execute(
                "SELECT rowid FROM sqlite_sequence WHERE name='session_items'").fetchone()[0])
            cc.close(); shutil.rmtree(ctmp)
        else:
            out.add("session_items:%s" % mid)
    con.close(); shutil.rmtree(tmp)
    return out

def verify(db, copy, expect, what):
    args = ["python3", "scripts/check_docker_agent_copy.py", db, copy, "--json", "--allow-preexisting-fk"]
    for e in sorted(expect):
        args += ["--expect", e]
    r = subprocess.run(args, capture_output=True, text=True)
    rep = json.loads(r.stdout)
    diff = {"%s:%s" % (d["table"], d["key"]) for d in rep["row_differences"]}
    ok = r.returncode == 0 and diff == expect
    views = rep["views"]
    changed_views = sum(1 for v in views.values() if not v["same_view"])
    print("%-4s %-8s %-62s rows changed %d, views changed %d/%d%s" % (
        "ok" if ok else "FAIL", what, db, len(diff), changed_views, len(views),
        "" if ok else " %s %s" % (rep["failures"], sorted(diff ^ expect))))
    return ok

before = digest(dbs)
failed = 0
for db in dbs:
    out = tempfile.mkdtemp(prefix="da-copies-")
    try:
        rc, doc, err = run(["repair", "--format", "json", "--out", os.path.join(out, "r"), db])
        if rc != 0 or doc["errors"]:
            print("FAIL repair %s: exit %d %s %s" % (db, rc, err.strip(), doc and doc["errors"])); failed += 1
            continue
        copy = os.path.join(out, "r", os.path.basename(db))
        failed += not verify(db, copy, expected_rows(db, copy, doc["changes"]), "repair")
        rc, lst, _ = run(["list", "--format", "json", db])
        jobs = [(s["id"], ["--max-request-bytes", "1000000"]) for s in lst["sessions"]]
        if db.endswith("derived/stale-fke-before-kept.db"):
            jobs.append((lst["sessions"][0]["id"], ["--context", "9000", "--max-output", "1000", "--keep-turns", "1"]))
        for k, (sid, flags) in enumerate(jobs):
            dest = os.path.join(out, "c%d" % k)
            rc, doc, err = run(["compact", "--format", "json", "--session", sid, "--out", dest] + flags + [db])
            if rc == 0 and doc and doc["nothing_to_change"] and not doc["written"]:
                # The session fits and no finding asks for a change: compact
                # writes no copy (and says so); nothing to verify.
                if os.path.exists(dest):
                    print("FAIL compact %s %s: nothing to change, yet %s exists" % (db, sid, dest)); failed += 1
                else:
                    print("ok   compact  %-62s nothing to change, no copy written" % db)
                continue
            if rc == 1 and doc and doc["unreachable"] and not doc["written"]:
                # compact says why the budget cannot be reached and writes
                # nothing (check's remedy says the same); nothing to verify.
                if os.path.exists(dest):
                    print("FAIL compact %s %s: not reachable, yet %s exists" % (db, sid, dest)); failed += 1
                else:
                    print("ok   compact  %-62s not reachable, no copy written" % db)
                continue
            if rc != 0 or not doc["written"]:
                print("FAIL compact %s %s: exit %d %s" % (db, sid, rc, err.strip())); failed += 1
                continue
            copy = os.path.join(dest, os.path.basename(db))
            failed += not verify(db, copy, expected_rows(db, copy, doc["changes"]), "compact")
    finally:
        shutil.rmtree(out, ignore_errors=True)
if digest(dbs) != before:
    print("FAIL: an original changed"); failed += 1
print("%d database(s), %d failure(s)" % (len(dbs), failed))
sys.exit(1 if failed else 0)
EOF
