#!/usr/bin/env python3
"""Benchmark: session-doctor on a large opencode store, figures printed, nothing asserted.

Builds (in a temp dir) an opencode.db holding N copies of the real `prune`
session (fixtures/opencode/prune: 25 messages, 57 parts, 549 KB of JSON each),
with fresh ids, then times `list`, `check` and `inspect` over it.

Usage: python3 benches/bench.py [BIN] [N]   (defaults: target/release/session-doctor or
target/debug/session-doctor, N=200)
"""
import json, os, resource, shutil, sqlite3, subprocess, sys, tempfile, time

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
binary = sys.argv[1] if len(sys.argv) > 1 else next(
    (p for p in (os.path.join(root, "target/release/session-doctor"), os.path.join(root, "target/debug/session-doctor"))
     if os.path.exists(p)), None)
n = int(sys.argv[2]) if len(sys.argv) > 2 else 200
if not binary:
    sys.exit("build first: cargo build --release")

work = tempfile.mkdtemp(prefix="sd-bench-")
db = os.path.join(work, "opencode.db")
shutil.copyfile(os.path.join(root, "fixtures/opencode/prune/opencode.db"), db)
con = sqlite3.connect(db)
(sid,) = con.execute("select id from session").fetchone()
srow = con.execute("select * from session where id=?", (sid,)).fetchone()
scols = [c[1] for c in con.execute("pragma table_info(session)")]
msgs = con.execute("select id, time_created, time_updated, data from message where session_id=?", (sid,)).fetchall()
parts = con.execute("select id, message_id, time_created, time_updated, data from part where session_id=?", (sid,)).fetchall()
big = sid[:-5] + "BIGGG"   # one more session holding every copy's messages: a long session
row = list(srow); row[scols.index("id")] = big
con.execute(f"insert into session ({','.join(scols)}) values ({','.join('?' * len(scols))})", row)
for k in range(1, n):
    tag = f"{k:05d}"
    new_sid = big if k > n // 2 else sid[:-5] + tag
    if new_sid != big:
        row = list(srow); row[scols.index("id")] = new_sid
        con.execute(f"insert into session ({','.join(scols)}) values ({','.join('?' * len(scols))})", row)
    con.executemany("insert into message (id, session_id, time_created, time_updated, data) values (?,?,?,?,?)",
                    [(m[0][:-5] + tag, new_sid, m[1], m[2], m[3]) for m in msgs])
    con.executemany("insert into part (id, message_id, session_id, time_created, time_updated, data) values (?,?,?,?,?,?)",
                    [(p[0][:-5] + tag, p[1][:-5] + tag, new_sid, p[2], p[3], p[4]) for p in parts])
con.commit(); con.execute("pragma wal_checkpoint(TRUNCATE)"); con.close()
size = os.path.getsize(db)
nb = n - 1 - n // 2
print(f"store: {n // 2 + 1} sessions, {n * len(msgs)} messages, {n * len(parts)} parts, {size} bytes ({binary});"
      f" the long session {big} holds {nb * len(msgs)} messages and {nb * len(parts)} parts")

def run(args):
    t = time.perf_counter()
    r = subprocess.run([binary] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    dt = time.perf_counter() - t
    return r.returncode, dt, len(r.stdout)

for label, args in [("list --format json", ["list", "--format", "json", db]),
                    ("check --format json", ["check", "--format", "json", "--fail-on", "never", db]),
                    ("inspect one session", ["inspect", "--session", sid, "--format", "json", db]),
                    ("inspect long session", ["inspect", "--session", big, "--format", "json", db])]:
    times = []
    for _ in range(3):
        rc, dt, out = run(args)
        times.append(dt)
    best = min(times)
    print(f"{label:<22} rc={rc} best of 3: {best:.3f} s  ({size / best / 1e6:.1f} MB/s of store, {out} bytes out)")
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(f"peak RSS of the runs: {peak / 1024:.1f} MiB")
shutil.rmtree(work)
