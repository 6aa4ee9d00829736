#!/usr/bin/env python3
"""Generate benchmark corpora for session-doctor from the real sessions we hold (python3 stdlib only).

Usage: python3 benches/gen_corpus.py MODE OUT_DIR [--size 100M|1G|...] [--seed N] [--force]

MODE:
  many            N copies of every real Claude Code and Codex session (shared/real-sessions/{claude-code,
                  claude-code-gen,codex,codex-gen}, fixtures/{claude-code,codex}), N chosen to reach --size.
                  Layout: OUT/claude/projects/<cwd>/<id>.jsonl (+ <id>/subagents/agent-*.jsonl),
                  OUT/codex/sessions/YYYY/MM/DD/rollout-<ts>-<uuid>.jsonl.
  huge-claude     ONE Claude Code transcript of --size: real main-chain lines replicated with fresh
                  uuids into one long parentUuid chain (images included), a compact_boundary +
                  isCompactSummary pair every --compact-every bytes. OUT/claude/projects/<cwd>/<id>.jsonl
  huge-codex      ONE Codex rollout of --size: real lines replicated (turn_context, messages, function
                  calls/outputs, input_image, token_count with growing cumulative totals), a `compacted`
                  line with replacement_history every --compact-every bytes. OUT/codex/sessions/...
  huge-opencode   ONE opencode.db holding one session built from the real `prune` session's rows
                  replicated with fresh chronological msg_/prt_ ids (~500k parts per GB: most copies
                  keep a 1.5 KB head of the 45 KB tool outputs, ~15% keep them whole). OUT/opencode/opencode.db
  opencode-many   The real prune session replicated into as many sessions as fit --size (~1,300 per GB).

Ids are rewritten so nothing dedupes: uuids, msg_/req_/toolu_/call_/resp_ ids, agentId (and the file
and folder names that carry them) get a fresh value per copy (deterministic from --seed). Writes are
streamed. OUT/corpus.json describes the result (mode, bytes, files, sessions, session id, paths).
Sizes: K/M/G are powers of 10 (100M = 100,000,000 bytes), KiB/MiB/GiB powers of 2.
"""
import argparse, hashlib, json, os, random, re, shutil, sqlite3, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SHARED = os.environ.get("SD_SHARED") or os.path.join(os.path.dirname(ROOT), "shared")
REAL = os.path.join(SHARED, "real-sessions")
FIX = os.path.join(ROOT, "fixtures")
GEN_VERSION = 1


def parse_size(s):
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([KMGT]?)(i?)B?\s*", s, re.I)
    if not m:
        raise argparse.ArgumentTypeError(f"bad size {s!r} (e.g. 100M, 1G, 512MiB)")
    n, unit, binary = float(m.group(1)), m.group(2).upper(), m.group(3)
    mult = {"": 1, "K": 1, "M": 2, "G": 3, "T": 4}[unit]
    return int(n * ((1024 if binary else 1000) ** mult)) if unit else int(n)


# ---------------------------------------------------------------------------------------------
# Templates: a text split into literals and slots (ids to rewrite, sentinels to fill).

TOKEN_RE = re.compile(
    r'"@@SDN:(?P<num>\w+)@@"'                          # numeric sentinel (its quotes consumed)
    r'|@@SD:(?P<str>\w+)@@'                             # string sentinel
    r'|(?<="agentId":")(?P<agent>[^"\\]{1,64})(?=")'    # Claude Code sub-agent id
    r'|(?<![0-9A-Za-z])(?P<uuid>[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})(?![0-9A-Za-z])'
    r'|(?<![0-9A-Za-z_])(?P<pid>(?:msg|req|toolu|call|resp)_[0-9A-Za-z_-]{6,})'
)
UUID_RE = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
LOWER, UPPER, DIGITS, HEX = "abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789", "0123456789abcdef"
B62 = DIGITS + UPPER + LOWER


def compile_tpl(s):
    out, pos = [], 0
    for m in TOKEN_RE.finditer(s):
        out.append(s[pos:m.start()])
        k = m.lastgroup
        out.append((k, m.group(k)))
        pos = m.end()
    out.append(s[pos:])
    return out


def fresh_like(kind, tok, key):
    """A new token shaped like tok, determined by (key, kind, tok)."""
    d = hashlib.shake_256(key + b"\0" + kind.encode() + b"\0" + tok.encode("utf-8", "surrogateescape")).digest(max(32, len(tok)))
    if kind == "uuid":
        h = d[:16].hex()
        h = h[:12] + (tok[14] if tok[14] in HEX else "4") + h[13:]
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"
    if kind == "agent":
        m = re.fullmatch(r"(.*?)([0-9a-f]{4,})", tok)
        if m:
            return m.group(1) + "".join(HEX[b & 15] for b in d[:len(m.group(2))])
        return tok + "".join(HEX[b & 15] for b in d[:4])
    # pid: prefix_ + same-shaped rest
    pre, rest = tok.split("_", 1)
    hexish = re.fullmatch(r"[0-9a-f-]+", rest) is not None
    out = []
    for c, b in zip(rest, d):
        if c in "-_":
            out.append(c)
        elif hexish:
            out.append(HEX[b & 15])
        elif c.isdigit():
            out.append(DIGITS[b % 10])
        elif c.islower():
            out.append(LOWER[b % 26])
        elif c.isupper():
            out.append(UPPER[b % 26])
        else:
            out.append(B62[b % 62])
    return pre + "_" + "".join(out)


class Mapper:
    """Consistent id rewriting for one copy (key): the same token always maps to the same new one."""

    def __init__(self, key, preset=None):
        self.key = key.encode() if isinstance(key, str) else key
        self.map = dict(preset or {})

    def get(self, kind, tok):
        k = (kind, tok)
        v = self.map.get(k)
        if v is None:
            v = self.map[k] = fresh_like(kind, tok, self.key)
        return v

    def fill(self, tpl, specials=None):
        buf = [tpl[0]]
        get = self.get
        for i in range(1, len(tpl), 2):
            kind, val = tpl[i]
            if kind == "str" or kind == "num":
                buf.append(str(specials[val]))
            else:
                buf.append(get(kind, val))
            buf.append(tpl[i + 1])
        return "".join(buf)


def read_text(p):
    with open(p, encoding="utf-8", errors="surrogateescape", newline="") as f:
        return f.read()


def write_text(p, s):
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "w", encoding="utf-8", errors="surrogateescape", newline="") as f:
        f.write(s)
    return len(s.encode("utf-8", "surrogateescape"))


def iso_ms(ms, _cache={}):
    sec, frac = divmod(ms, 1000)
    pre = _cache.get(sec)
    if pre is None:
        if len(_cache) > 4096:
            _cache.clear()
        pre = _cache[sec] = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec))
    return f"{pre}.{frac:03d}Z"


def dumps(o):
    return json.dumps(o, ensure_ascii=False, separators=(",", ":"))


# ---------------------------------------------------------------------------------------------
# many

def jsonl_files(d):
    out = []
    for dp, dns, fns in os.walk(d):
        dns.sort()
        for fn in sorted(fns):
            if fn.endswith(".jsonl"):
                out.append(os.path.join(dp, fn))
    return out


def many_units():
    """[(unit key, kind, [(src path, dest rel parts)])]: the sources of one copy."""
    units = []
    for origin, base in (("shared", REAL), ("fixtures", FIX)):
        cc = os.path.join(base, "claude-code") if origin == "shared" else os.path.join(FIX, "claude-code")
        # claude-code-log: real_projects (shared) / projects (fixtures), edge-fixtures
        ccl = os.path.join(cc, "claude-code-log")
        for sub in ("real_projects", "projects"):
            d = os.path.join(ccl, sub)
            if os.path.isdir(d):
                units.append((f"{origin}:ccl-{sub}", "claude", [(p, os.path.relpath(p, d).split(os.sep)) for p in jsonl_files(d)]))
        d = os.path.join(ccl, "edge-fixtures")
        if os.path.isdir(d):
            units.append((f"{origin}:edge", "claude", [(p, ["edge-fixtures", os.path.basename(p)]) for p in jsonl_files(d)]))
        d = os.path.join(cc, "spotter")
        if os.path.isdir(d):
            units.append((f"{origin}:spotter", "claude", [(p, ["spotter"] + os.path.relpath(p, d).split(os.sep)) for p in jsonl_files(d)]))
        gen = os.path.join(base, "claude-code-gen") if origin == "shared" else os.path.join(cc, "claude-code-gen")
        for scen in sorted(os.listdir(gen)) if os.path.isdir(gen) else []:
            sd = os.path.join(gen, scen)
            if not os.path.isdir(sd):
                continue
            files, proj = [], None
            pd = os.path.join(sd, "projects")
            for p in jsonl_files(pd) if os.path.isdir(pd) else []:
                rel = os.path.relpath(p, pd).split(os.sep)
                proj = proj or rel[0]
                files.append((p, rel))
            for fn in sorted(os.listdir(sd)):   # stream-*.jsonl, stub_requests.summary.jsonl: not sessions
                if fn.endswith(".jsonl"):
                    files.append((os.path.join(sd, fn), [proj or f"-bench-{scen}", fn]))
            units.append((f"{origin}:cc-gen-{scen}", "claude", files))
        # Codex
        cx_dirs = [os.path.join(base, "codex"), os.path.join(base, "codex-gen")] if origin == "shared" else [os.path.join(FIX, "codex")]
        for cd in cx_dirs:
            if not os.path.isdir(cd):
                continue
            for scen in sorted(os.listdir(cd)):
                sd = os.path.join(cd, scen)
                if not os.path.isdir(sd):
                    continue
                files = jsonl_files(sd)
                rollouts = [p for p in files if os.path.basename(p).startswith("rollout-")]
                extras = [p for p in files if p not in rollouts]
                for p in rollouts:
                    units.append((f"{origin}:{os.path.basename(cd)}-{scen}-{os.path.basename(p)}", "codex", [(p, None)]))
                if extras and rollouts:
                    date = codex_date(os.path.basename(rollouts[0]))
                    units.append((f"{origin}:{os.path.basename(cd)}-{scen}-extras", "codex",
                                  [(p, date + [os.path.basename(os.path.dirname(p)) + "-" + os.path.basename(p)]) for p in extras]))
    return units


def codex_date(fn):
    m = re.match(r"rollout-(\d{4})-(\d{2})-(\d{2})T", fn)
    return [m.group(1), m.group(2), m.group(3)] if m else ["2026", "01", "01"]


def dest_name(comp, is_file, mapper, tag):
    stem, ext = (comp[:-6], ".jsonl") if is_file and comp.endswith(".jsonl") else (comp, "")
    if UUID_RE.fullmatch(stem):
        return mapper.get("uuid", stem) + ext
    m = re.fullmatch(r"agent-(.+)", stem)
    if m:
        return "agent-" + mapper.get("agent", m.group(1)) + ext
    m = re.fullmatch(r"(rollout-[0-9T:-]+?-)(" + UUID_RE.pattern + r")", stem)
    if m:
        return m.group(1) + mapper.get("uuid", m.group(2)) + ext
    return f"{stem}-{tag}{ext}" if is_file else stem


def gen_many(out, target, seed, log):
    units = many_units()
    tpls, per_copy, nfiles = [], 0, 0
    for key, kind, files in units:
        ft = []
        for src, rel in files:
            text = read_text(src)
            ft.append((src, rel, compile_tpl(text)))
            per_copy += os.path.getsize(src)
            nfiles += 1
        tpls.append((key, kind, ft))
    copies = max(1, -(-target // per_copy))
    log(f"many: {nfiles} files, {per_copy:,} bytes per copy -> {copies} copies (target {target:,})")
    total, files = 0, 0
    for k in range(copies):
        for key, kind, ft in tpls:
            mkey = f"{seed}/{k}/{key}"
            mapper = Mapper(mkey)
            tag = hashlib.sha1(mkey.encode()).hexdigest()[:8]
            for src, rel, tpl in ft:
                text = mapper.fill(tpl)
                if kind == "claude":
                    comps = [dest_name(c, i == len(rel) - 1, mapper, tag) for i, c in enumerate(rel)]
                    dest = os.path.join(out, "claude", "projects", *comps)
                else:
                    if rel is None:
                        fn = os.path.basename(src)
                        dest = os.path.join(out, "codex", "sessions", *codex_date(fn), dest_name(fn, True, mapper, tag))
                    else:
                        dest = os.path.join(out, "codex", "sessions", *rel[:-1], dest_name(rel[-1], True, mapper, tag))
                if os.path.exists(dest):
                    raise SystemExit(f"gen_corpus: name collision at {dest}")
                total += write_text(dest, text)
                files += 1
        if (k + 1) % 10 == 0:
            log(f"  copy {k + 1}/{copies}: {total:,} bytes")
    return {"copies": copies, "files": files, "bytes": total, "paths": [os.path.join(out, "claude"), os.path.join(out, "codex")],
            "claude_config_dir": os.path.join(out, "claude"), "codex_home": os.path.join(out, "codex")}


# ---------------------------------------------------------------------------------------------
# huge-claude

CLAUDE_POOL = [  # main transcripts, in this order, one cycle
    ("shared", "claude-code/spotter/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"),
    ("fixtures", "claude-code/claude-code-gen/image/projects/-home-dev-cc-dev-claude-image-proj/ada37aa8-fdfe-41e2-ae55-88cfa2a2c290.jsonl"),
    ("shared", "claude-code/spotter/fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl"),
    ("shared", "claude-code-gen/multi/projects/-home-dev-cc-dev-claude-multi-proj/0acd6738-1c9b-460c-ba5f-185135e4ad7f.jsonl"),
    ("real_projects", None),   # every non-empty session file of claude-code-log/real_projects (pasted images in some)
    ("shared", "claude-code-gen/noprogress/projects/-home-dev-cc-dev-claude-noprogress-proj/fbfaaf41-f446-468b-a40a-48c11b34a4a1.jsonl"),
]
CLAUDE_COMPACT_SRC = ("shared", "claude-code-gen/multi/projects/-home-dev-cc-dev-claude-multi-proj/0acd6738-1c9b-460c-ba5f-185135e4ad7f.jsonl")


def src_path(origin, rel):
    return os.path.join(REAL if origin == "shared" else FIX, rel)


def claude_pool_files():
    out = []
    for origin, rel in CLAUDE_POOL:
        if origin == "real_projects":
            d = os.path.join(REAL, "claude-code/claude-code-log/real_projects")
            for p in jsonl_files(d):
                if UUID_RE.fullmatch(os.path.basename(p)[:-6]) and os.path.getsize(p) > 0:
                    out.append(p)
        else:
            out.append(src_path(origin, rel))
    return out


def claude_line_tpl(o):
    """Template of one Claude Code line: own uuid, parent, leaf, session, timestamp as sentinels."""
    own = o.get("uuid") if isinstance(o.get("uuid"), str) else None
    if own is not None:
        o["uuid"] = "@@SD:UUID@@"
        o["parentUuid"] = "@@SD:PARENT@@"
    if "leafUuid" in o:
        o["leafUuid"] = "@@SD:PARENT@@"
    if "sessionId" in o:
        o["sessionId"] = "@@SD:SID@@"
    if "timestamp" in o:
        o["timestamp"] = "@@SD:TS@@"
    if o.get("parentUuid") is None and own is not None:
        o["parentUuid"] = "@@SD:PARENT@@"
    s = dumps(o)
    s = s.replace('"@@SD:PARENT@@"', '"@@SDN:PARENTQ@@"')   # parent may be null: filled with JSON incl. quotes
    return own, compile_tpl(s)


def gen_huge_claude(out, target, seed, compact_every, log):
    rng = random.Random(seed)
    sid = fresh_like("uuid", "00000000-0000-4000-8000-000000000000", f"{seed}/huge-claude/sid".encode())
    pool, src_sids, seen = [], set(), set()   # resumed sessions repeat earlier files' lines: keep the first
    for p in claude_pool_files():
        with open(p, encoding="utf-8", errors="surrogateescape") as f:
            for line in f:
                try:
                    o = json.loads(line)
                except ValueError:
                    continue
                if not isinstance(o, dict) or o.get("isSidechain") is True:
                    continue
                if o.get("subtype") == "compact_boundary" or o.get("isCompactSummary") or o.get("type") == "summary":
                    continue
                if isinstance(o.get("sessionId"), str):
                    src_sids.add(o["sessionId"])
                u = o.get("uuid")
                if isinstance(u, str):
                    if u in seen:
                        continue
                    seen.add(u)
                typ = o.get("type")
                pool.append(claude_line_tpl(o) + (typ,))
    # the compaction pair (2.1.197 shape): boundary with preservedSegment/preservedMessages + summary
    bnd = summ = None
    for line in open(src_path(*CLAUDE_COMPACT_SRC), encoding="utf-8"):
        o = json.loads(line)
        if o.get("subtype") == "compact_boundary":
            bnd = o
        elif o.get("isCompactSummary") and bnd is not None and summ is None:
            summ = o
    bnd.update(parentUuid=None, logicalParentUuid="@@SD:PREV@@", uuid="@@SD:UUID@@", sessionId="@@SD:SID@@", timestamp="@@SD:TS@@")
    bnd["compactMetadata"]["preservedSegment"] = {"headUuid": "@@SD:PREV@@", "anchorUuid": "@@SD:SUMMARY@@", "tailUuid": "@@SD:PREV@@"}
    bnd["compactMetadata"]["preservedMessages"] = {"anchorUuid": "@@SD:SUMMARY@@", "uuids": ["@@SD:PREV@@"], "allUuids": ["@@SD:PREV@@"]}
    summ.update(parentUuid="@@SD:BOUNDARY@@", uuid="@@SD:SUMMARY@@", sessionId="@@SD:SID@@", timestamp="@@SD:TS@@")
    bnd_tpl, summ_tpl = compile_tpl(dumps(bnd)), compile_tpl(dumps(summ))
    preset = {("uuid", s): sid for s in src_sids}
    cwd = "-home-dev-bench-huge-claude"
    dest = os.path.join(out, "claude", "projects", cwd, sid + ".jsonl")
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    ts = 1790000000000
    prev = None
    total = lines = compactions = since = cycle = 0
    n_fresh = [0]

    def fresh_uuid():
        n_fresh[0] += 1
        return fresh_like("uuid", "00000000-0000-4000-8000-000000000000", f"{seed}/huge-claude/fresh/{n_fresh[0]}".encode())

    with open(dest, "w", encoding="utf-8", errors="surrogateescape", newline="\n") as f:
        while total < target:
            mapper = Mapper(f"{seed}/huge-claude/{cycle}", preset)
            for own, tpl, typ in pool:
                ts += rng.randint(50, 900)
                spec = {"SID": sid, "TS": iso_ms(ts), "PARENTQ": "null" if prev is None else f'"{prev}"'}
                u = None
                if own is not None:
                    u = mapper.get("uuid", own)
                    spec["UUID"] = u
                s = mapper.fill(tpl, spec) + "\n"
                f.write(s)
                n = len(s.encode("utf-8", "surrogateescape"))
                total += n; since += n; lines += 1
                if u is not None:
                    prev = u
                if since >= compact_every and typ == "assistant" and prev is not None and total < target:
                    b, sm = fresh_uuid(), fresh_uuid()
                    ts += 1000
                    spec = {"SID": sid, "TS": iso_ms(ts), "PREV": prev, "UUID": b, "SUMMARY": sm, "BOUNDARY": b}
                    for t in (bnd_tpl, summ_tpl):
                        s = mapper.fill(t, spec) + "\n"
                        f.write(s)
                        total += len(s.encode("utf-8", "surrogateescape")); lines += 1
                    prev = sm
                    compactions += 1
                    since = 0
                if total >= target:
                    break
            cycle += 1
            if cycle % 10 == 0:
                log(f"  cycle {cycle}: {total:,} bytes, {lines:,} lines")
    log(f"huge-claude: {total:,} bytes, {lines:,} lines, {compactions} compactions, {cycle} cycles of {len(pool)} lines")
    return {"files": 1, "bytes": total, "lines": lines, "compactions": compactions, "session_id": sid,
            "paths": [os.path.join(out, "claude")], "claude_config_dir": os.path.join(out, "claude"),
            "codex_home": os.path.join(out, "codex-none")}


# ---------------------------------------------------------------------------------------------
# huge-codex

CODEX_META_SRC = ("shared", "codex-gen/multi/sessions/2026/11/22/rollout-2026-11-22T12-07-50-01a20327-d155-7513-b850-ad26df82d9ed.jsonl")
CODEX_POOL = [
    ("shared", "codex/localpush/sessions/rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl"),
    ("fixtures", "codex/derived-image/sessions/2026/11/22/rollout-2026-11-22T12-07-50-01a20327-d155-7513-b850-ad26df82d9ee.jsonl"),
    ("shared", "codex/localpush/sessions/rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl"),
    ("shared", "codex-gen/noprogress/sessions/2026/11/22/rollout-2026-11-22T12-07-57-01a20327-ec1f-7132-af6f-feec204262bf.jsonl"),
    ("shared", "codex/localpush/sessions/rollout-2026-02-23T12-47-42-019c8a53-a0dd-7130-bcd7-95445d84846a.jsonl"),
    ("shared", "codex/localpush/sessions/rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl"),
]
TT_FIELDS = ("input_tokens", "cached_input_tokens", "cache_write_input_tokens", "output_tokens", "reasoning_output_tokens", "total_tokens")


def gen_huge_codex(out, target, seed, compact_every, log):
    rng = random.Random(seed)
    sid = fresh_like("uuid", "01a20327-0000-7000-8000-000000000000", f"{seed}/huge-codex/sid".encode())
    src_sids = set()
    pool = []   # (tpl, kind, last_usage or None, is_new_request)
    for origin, rel in CODEX_POOL:
        prev_total = None
        for line in open(src_path(origin, rel), encoding="utf-8", errors="surrogateescape"):
            o = json.loads(line)
            t = o.get("type")
            p = o.get("payload") if isinstance(o.get("payload"), dict) else {}
            if t == "session_meta":
                for k in ("id", "session_id"):
                    if isinstance(p.get(k), str):
                        src_sids.add(p[k])
                continue
            if t == "compacted" or (t == "event_msg" and p.get("type") == "context_compacted"):
                continue
            kind, last, new = t, None, False
            # one consistent window (the 0.104 rollouts' 258,400) for lines from 0.169 stub runs (19,000)
            if t == "event_msg" and "model_context_window" in p:
                p["model_context_window"] = 258400
            if t == "event_msg" and isinstance(p.get("info"), dict) and "model_context_window" in p["info"]:
                p["info"]["model_context_window"] = 258400
            o["timestamp"] = "@@SD:TS@@"
            if "ordinal" in o:
                o["ordinal"] = "@@SDN:ORD@@"
            if t == "event_msg" and p.get("type") == "token_count" and isinstance(p.get("info"), dict):
                info = p["info"]
                tot, lu = info.get("total_token_usage"), info.get("last_token_usage")
                if isinstance(tot, dict) and isinstance(lu, dict):
                    new = prev_total is None or tot.get("total_tokens") != prev_total
                    prev_total = tot.get("total_tokens")
                    last = {k: int(lu.get(k) or 0) for k in TT_FIELDS}
                    for k in list(tot):
                        if k in TT_FIELDS:
                            tot[k] = f"@@SDN:TT_{k}@@"
                    kind = "token_count"
            pool.append((compile_tpl(dumps(o)), kind, last, new))
    meta = comp = None
    for line in open(src_path(*CODEX_META_SRC), encoding="utf-8"):
        o = json.loads(line)
        if o["type"] == "session_meta":
            meta = o
            for k in ("id", "session_id"):
                if isinstance(o["payload"].get(k), str):
                    src_sids.add(o["payload"][k])
        elif o["type"] == "compacted" and isinstance(o["payload"].get("replacement_history"), list):
            comp = o   # the last (larger) one
    for k in ("id", "session_id"):
        if k in meta["payload"]:
            meta["payload"][k] = sid
    meta["timestamp"] = "@@SD:TS@@"
    meta["payload"]["timestamp"] = "@@SD:TS@@"
    if "ordinal" in meta:
        meta["ordinal"] = "@@SDN:ORD@@"
    comp["timestamp"] = "@@SD:TS@@"
    if "ordinal" in comp:
        comp["ordinal"] = "@@SDN:ORD@@"
    comp_tpl = compile_tpl(dumps(comp))
    preset = {("uuid", s): sid for s in src_sids}
    preset[("uuid", sid)] = sid
    start = 1790000000000
    ts = start
    fn = f"rollout-{time.strftime('%Y-%m-%dT%H-%M-%S', time.gmtime(start // 1000))}-{sid}.jsonl"
    dest = os.path.join(out, "codex", "sessions", *time.strftime("%Y %m %d", time.gmtime(start // 1000)).split(), fn)
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    running = {k: 0 for k in TT_FIELDS}
    total = lines = compactions = since = cycle = images = 0
    with open(dest, "w", encoding="utf-8", errors="surrogateescape", newline="\n") as f:
        s = Mapper(f"{seed}/huge-codex/meta", {("uuid", sid): sid}).fill(compile_tpl(dumps(meta)), {"TS": iso_ms(ts), "ORD": 0}) + "\n"
        f.write(s); total += len(s.encode()); lines += 1
        while total < target:
            mapper = Mapper(f"{seed}/huge-codex/{cycle}", preset)
            for tpl, kind, last, new in pool:
                ts += rng.randint(20, 400)
                if kind == "turn_context" and since >= compact_every:
                    s = mapper.fill(comp_tpl, {"TS": iso_ms(ts), "ORD": lines}) + "\n"
                    f.write(s)
                    n = len(s.encode("utf-8", "surrogateescape"))
                    total += n; lines += 1; compactions += 1; since = 0
                spec = {"TS": iso_ms(ts), "ORD": lines}
                if kind == "token_count":
                    if new:
                        for k in TT_FIELDS:
                            running[k] += last[k]
                    for k in TT_FIELDS:
                        spec["TT_" + k] = running[k]
                s = mapper.fill(tpl, spec) + "\n"
                if '"input_image"' in s:
                    images += 1
                f.write(s)
                n = len(s.encode("utf-8", "surrogateescape"))
                total += n; since += n; lines += 1
                if total >= target:
                    break
            cycle += 1
            if cycle % 50 == 0:
                log(f"  cycle {cycle}: {total:,} bytes, {lines:,} lines")
    log(f"huge-codex: {total:,} bytes, {lines:,} lines, {compactions} compactions, {images} image lines, {cycle} cycles")
    return {"files": 1, "bytes": total, "lines": lines, "compactions": compactions, "session_id": sid,
            "paths": [os.path.join(out, "codex")], "codex_home": os.path.join(out, "codex"),
            "claude_config_dir": os.path.join(out, "claude-none")}


# ---------------------------------------------------------------------------------------------
# opencode

PRUNE_DB = os.path.join(FIX, "opencode", "prune", "opencode.db")
TS_RE = re.compile(r"(?<![0-9A-Za-z])1[0-9]{12}(?![0-9A-Za-z])")   # 13-digit ms timestamps in data JSON
MASK48 = (1 << 48) - 1


class OcIds:
    """opencode's Identifier: prefix + hex12(low 48 bits of ms*0x1000 + counter) + 14 random base62."""

    def __init__(self, rng):
        self.rng, self.last_ms, self.counter = rng, None, 0

    def make(self, prefix, ms, descending=False):
        if ms != self.last_ms:
            self.last_ms, self.counter = ms, 0
        self.counter += 1
        n = ms * 0x1000 + self.counter
        if descending:
            n = ~n
        rnd = "".join(self.rng.choice(B62) for _ in range(14))
        return f"{prefix}_{n & MASK48:012x}{rnd}"


def load_prune():
    con = sqlite3.connect(f"file:{PRUNE_DB}?mode=ro&immutable=1", uri=True)
    scols = [c[1] for c in con.execute("pragma table_info(session)")]
    srow = con.execute("select * from session").fetchone()
    msgs = con.execute("select id, time_created, time_updated, data from message order by time_created, id").fetchall()
    parts = con.execute("select id, message_id, time_created, time_updated, data from part order by time_created, id").fetchall()
    con.close()
    return scols, srow, msgs, parts


def oc_empty_db(dest):
    """A copy of the prune db (schema, migrations, project rows) without sessions, messages, parts, events."""
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    src = sqlite3.connect(f"file:{PRUNE_DB}?mode=ro&immutable=1", uri=True)
    dst = sqlite3.connect(dest)
    src.backup(dst)
    src.close()
    for t in ("part", "message", "event", "event_sequence", "session_message", "session_input", "todo",
              "session_share", "session_context_epoch", "session"):
        dst.execute(f"delete from {t}")
    dst.commit()
    dst.execute("vacuum")
    dst.execute("pragma journal_mode=delete")
    dst.close()


def ts_tpl(s):
    """Split data JSON into literals and (13-digit timestamp, msg id) slots."""
    out, pos = [], 0
    for m in re.finditer(r"(?P<ts>" + TS_RE.pattern + r")|(?P<mid>msg_[0-9a-f]{12}[0-9A-Za-z]{14})|(?P<call>call_[0-9A-Za-z]{6,})", s):
        out.append(s[pos:m.start()])
        k = m.lastgroup
        out.append((k, int(m.group(k)) if k == "ts" else m.group(k)))
        pos = m.end()
    out.append(s[pos:])
    return out


def ts_fill(tpl, off, ids, callsuffix):
    buf = [tpl[0]]
    for i in range(1, len(tpl), 2):
        k, v = tpl[i]
        buf.append(str(v + off) if k == "ts" else ids.get(v, v) if k == "mid" else v + callsuffix)
        buf.append(tpl[i + 1])
    return "".join(buf)


def truncated_tool(data, keep=1500):
    o = json.loads(data)
    st = o.get("state", {})
    if isinstance(st.get("output"), str) and len(st["output"]) > keep:
        st["output"] = st["output"][:keep]
    md = st.get("metadata")
    if isinstance(md, dict) and isinstance(md.get("output"), str) and len(md["output"]) > keep:
        md["output"] = md["output"][:keep]
    if isinstance(st.get("title"), str) and len(st["title"]) > 200:
        st["title"] = st["title"][:200]
    return dumps(o)


def oc_session_copy(rng, ids, msgs, parts, base_ms, sid, full_frac, copy_no):
    """Rows (messages, parts) of one copy of prune, shifted so that it starts at base_ms."""
    t0 = min(m[1] for m in msgs)
    off = base_ms - t0
    # new ids in chronological order of all rows (msg and prt share the clock)
    events = sorted([(m[1], 0, i) for i, m in enumerate(msgs)] + [(p[2], 1, i) for i, p in enumerate(parts)])
    newid = {}
    for ms, kind, i in events:
        old = msgs[i][0] if kind == 0 else parts[i][0]
        newid[old] = ids.make("msg" if kind == 0 else "prt", ms + off)
    cs = f"{copy_no:x}"
    mrows = [(newid[m[0]], sid, m[1] + off, m[2] + off, ts_fill(m[4], off, newid, cs)) for m in msgs]
    prows = []
    for p in parts:
        tpl = p[5] if (p[6] is None or rng.random() < full_frac) else p[6]
        prows.append((newid[p[0]], newid[p[1]], sid, p[2] + off, p[3] + off, ts_fill(tpl, off, newid, cs)))
    return mrows, prows


def prep_prune():
    scols, srow, msgs, parts = load_prune()
    msgs = [(m[0], m[1], m[2], m[3], ts_tpl(m[3])) for m in msgs]
    pp = []
    for p in parts:
        full = ts_tpl(p[4])
        small = ts_tpl(truncated_tool(p[4])) if json.loads(p[4]).get("type") == "tool" else None
        pp.append((p[0], p[1], p[2], p[3], p[4], full, small))
    span = max(max(m[2] for m in msgs), max(p[3] for p in parts)) - min(m[1] for m in msgs)
    return scols, srow, msgs, pp, span


def oc_insert(con, mrows, prows):
    con.executemany("insert into message (id, session_id, time_created, time_updated, data) values (?,?,?,?,?)", mrows)
    con.executemany("insert into part (id, message_id, session_id, time_created, time_updated, data) values (?,?,?,?,?,?)", prows)


def session_row(scols, srow, sid, t_created, t_updated, title=None, slug=None):
    row = list(srow)
    row[scols.index("id")] = sid
    row[scols.index("time_created")] = t_created
    row[scols.index("time_updated")] = t_updated
    if title is not None:
        row[scols.index("title")] = title
    if slug is not None:
        row[scols.index("slug")] = slug
    return row


def gen_opencode(out, target, seed, mode, log, full_frac=0.09):
    rng = random.Random(seed)
    ids = OcIds(rng)
    scols, srow, msgs, parts, span = prep_prune()
    dest_dir = os.path.join(out, "opencode")
    db = os.path.join(dest_dir, "opencode.db")
    oc_empty_db(db)
    con = sqlite3.connect(db)
    con.execute("pragma journal_mode=off")
    con.execute("pragma synchronous=off")
    con.execute("pragma cache_size=-65536")
    base = 1790000000000
    step = span + 5000
    qmarks = ",".join("?" * len(scols))
    sessions, nmsg, nparts, copy_no = [], 0, 0, 0
    huge_sid = None
    if mode == "huge-opencode":
        huge_sid = ids.make("ses", base - 1000, descending=True)
        con.execute(f"insert into session ({','.join(scols)}) values ({qmarks})",
                    session_row(scols, srow, huge_sid, base - 1000, base - 1000, title="Benchmark: one huge session"))
        sessions.append(huge_sid)
    check_every = 8 if mode == "huge-opencode" else 2
    while True:
        t = base + copy_no * step
        if mode == "huge-opencode":
            sid = huge_sid
        else:
            sid = ids.make("ses", t - 100, descending=True)
            con.execute(f"insert into session ({','.join(scols)}) values ({qmarks})",
                        session_row(scols, srow, sid, t - 100, t + span, slug=f"bench-{copy_no}"))
            sessions.append(sid)
        mrows, prows = oc_session_copy(rng, ids, msgs, parts, t, sid, full_frac if mode == "huge-opencode" else 1.0, copy_no)
        oc_insert(con, mrows, prows)
        nmsg += len(mrows); nparts += len(prows); copy_no += 1
        if copy_no % check_every == 0:
            con.commit()
            size = os.path.getsize(db)
            if copy_no % (check_every * 250) == 0:
                log(f"  {copy_no} copies: {size:,} bytes, {nparts:,} parts")
            if size >= target:
                break
    if mode == "huge-opencode":
        con.execute("update session set time_updated=? where id=?", (base + copy_no * step, huge_sid))
    con.commit()
    con.close()
    size = os.path.getsize(db)
    log(f"{mode}: {size:,} bytes, {len(sessions)} sessions, {nmsg:,} messages, {nparts:,} parts ({copy_no} copies of prune)")
    res = {"files": 1, "bytes": size, "copies": copy_no, "sessions": len(sessions), "messages": nmsg, "parts": nparts,
           "paths": [db], "opencode_data_dir": dest_dir, "db": db}
    res["session_id"] = huge_sid or sessions[len(sessions) // 2]   # inspect/compact: the huge one, else a middle one
    return res


# ---------------------------------------------------------------------------------------------

MODES = ("many", "huge-claude", "huge-codex", "huge-opencode", "opencode-many")


def generator_hash():
    h = hashlib.sha256()
    h.update(open(os.path.abspath(__file__), "rb").read())
    return h.hexdigest()[:12]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("mode", choices=MODES)
    ap.add_argument("out")
    ap.add_argument("--size", type=parse_size, default=parse_size("100M"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--compact-every", type=parse_size, default=parse_size("8M"),
                    help="huge-claude/huge-codex: bytes between compactions (default 8M)")
    ap.add_argument("--force", action="store_true", help="wipe OUT first")
    ap.add_argument("-q", "--quiet", action="store_true")
    a = ap.parse_args()
    log = (lambda *x: None) if a.quiet else (lambda *x: print("gen_corpus:", *x, file=sys.stderr, flush=True))
    out = os.path.abspath(a.out)
    if os.path.realpath(out).startswith(os.path.realpath(SHARED) + os.sep):
        sys.exit("gen_corpus: refusing to write into shared/")
    if os.path.exists(out) and os.listdir(out):
        if not a.force:
            sys.exit(f"gen_corpus: {out} is not empty (use --force)")
        shutil.rmtree(out)
    os.makedirs(out, exist_ok=True)
    t = time.time()
    if a.mode == "many":
        res = gen_many(out, a.size, a.seed, log)
    elif a.mode == "huge-claude":
        res = gen_huge_claude(out, a.size, a.seed, a.compact_every, log)
    elif a.mode == "huge-codex":
        res = gen_huge_codex(out, a.size, a.seed, a.compact_every, log)
    else:
        res = gen_opencode(out, a.size, a.seed, a.mode, log)
    res.update(mode=a.mode, target_bytes=a.size, size=sys.argv[sys.argv.index("--size") + 1] if "--size" in sys.argv else "100M",
               seed=a.seed, generator=generator_hash(), gen_version=GEN_VERSION, seconds=round(time.time() - t, 1),
               created=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    def rel(v):   # paths relative to OUT, so that the corpus can be moved
        if isinstance(v, list):
            return [rel(x) for x in v]
        return os.path.relpath(v, out) if isinstance(v, str) and (v == out or v.startswith(out + os.sep)) else v
    res = {k: rel(v) for k, v in res.items()}
    with open(os.path.join(out, "corpus.json"), "w") as f:
        json.dump(res, f, indent=1)
    log(f"{a.mode} -> {out}: {res['bytes']:,} bytes in {res['seconds']} s")


if __name__ == "__main__":
    main()
