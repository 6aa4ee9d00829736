//! The hostile cases, each built at test time from the fixtures into its own
//! folder. Every case is listed in tests/hostile/README.md.

use crate::util::*;
use crate::{Builder, Case, Check, Ctx, Expect, Special};
use serde_json::{json, Value};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

// ---------------------------------------------------------------- fixtures

const PLAIN_DB: &str = "opencode/plain/opencode.db";
const PLAIN_SID: &str = "ses_dfd222799ffeZaEGZwxSj0AU0r";
const PLAIN_MESSAGES: u64 = 6;
const STALE_DB: &str = "opencode/stale-parent/opencode.db";
const STALE_SID: &str = "ses_dfd1f60b1ffeUVxzisfNz0d8YX";
const KILO_DB: &str = "opencode/kilo/kilo.db";
const KILO_SID: &str = "ses_dfd1699dfffeTGRV3habI8PCDk";
const WEDGED_DB: &str = "opencode/wedged-413/opencode.db";
const WEDGED_SID: &str = "ses_dfc5b7f4affeWobb3V494h48Lq";
const LEGACY: &str = "opencode/legacy-1.1.65";
const LEGACY_SID: &str = "ses_dfd1ae85effe5u4syGjAIhhhc2";
const LEGACY_MESSAGES: u64 = 26;
const LEGACY_ASSISTANT: &str = "msg_202e5183c001cxCQ1pmRf0SZWd";
const CLAUDE_MULTI: &str = "claude-code/claude-code-gen/multi/projects/-home-dev-cc-dev-claude-multi-proj/0acd6738-1c9b-460c-ba5f-185135e4ad7f.jsonl";
const CLAUDE_SID: &str = "0acd6738-1c9b-460c-ba5f-185135e4ad7f";
const CLAUDE_IMAGE: &str = "claude-code/claude-code-gen/image/projects/-home-dev-cc-dev-claude-image-proj/ada37aa8-fdfe-41e2-ae55-88cfa2a2c290.jsonl";
const CLAUDE_DOUBLE: &str = "claude-code/claude-code-gen/double_compact/projects/-home-dev-cc-dev-claude-double-compact-proj/0a40fb08-409e-47b5-867c-464f5acf52d8.jsonl";
const CLAUDE_NOMETA: &str = "claude-code/claude-code-gen/double_compact_nometa/projects/-home-dev-cc-dev-claude-double-compact-proj/0a40fb08-409e-47b5-867c-464f5acf52d8.jsonl";
const CLAUDE_DOUBLE_SID: &str = "0a40fb08-409e-47b5-867c-464f5acf52d8";
const CODEX_SMALL: &str = "codex/localpush/sessions/rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl";
const CODEX_SMALL_NAME: &str =
    "rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl";
const CODEX_SID: &str = "019c8bfe-ec25-79e0-97d7-bda6a9c575ff";
const CODEX_MULTI: &str = "codex/codex-gen/multi/sessions/2026/11/22/rollout-2026-11-22T12-07-50-01a20327-d155-7513-b850-ad26df82d9ed.jsonl";
const CODEX_MULTI_SID: &str = "01a20327-d155-7513-b850-ad26df82d9ed";

const PROJ: &str = "-home-dev-hostile-proj";

// ----------------------------------------------------------- layout helpers

/// `dir/name/opencode.db`, a copy of fixture `rel`.
fn db(ctx: &Ctx, rel: &str, dir: &Path, name: &str) -> PathBuf {
    let file = Path::new(rel).file_name().unwrap();
    let p = dir.join(name).join(file);
    copy(&ctx.fx(rel), &p);
    p
}

/// `dir/claude/projects/PROJ/<sid>.jsonl`, a copy of fixture `rel`.
fn claude(ctx: &Ctx, rel: &str, dir: &Path) -> PathBuf {
    let file = Path::new(rel).file_name().unwrap();
    let p = dir.join("claude/projects").join(PROJ).join(file);
    copy(&ctx.fx(rel), &p);
    p
}

fn claude_projects(dir: &Path) -> PathBuf {
    dir.join("claude/projects")
}

/// `dir/codex/sessions/2026/02/23/<name>`, a copy of fixture `rel`.
fn codex(ctx: &Ctx, rel: &str, dir: &Path, name: &str) -> PathBuf {
    let p = dir.join("codex/sessions/2026/02/23").join(name);
    copy(&ctx.fx(rel), &p);
    p
}

/// `dir/legacy` holding `storage/`.
fn legacy(ctx: &Ctx, dir: &Path) -> PathBuf {
    let p = dir.join("legacy");
    copy_dir(&ctx.fx(LEGACY), &p);
    p
}

fn legacy_msg_dir(l: &Path) -> PathBuf {
    l.join("storage/message").join(LEGACY_SID)
}

fn p2o(p: &Path) -> OsString {
    p.as_os_str().to_os_string()
}

fn args(v: &[&dyn AsRefOs]) -> Vec<OsString> {
    v.iter().map(|a| a.os()).collect()
}

trait AsRefOs {
    fn os(&self) -> OsString;
}
impl AsRefOs for &str {
    fn os(&self) -> OsString {
        OsString::from(self)
    }
}
impl AsRefOs for PathBuf {
    fn os(&self) -> OsString {
        self.clone().into_os_string()
    }
}
impl AsRefOs for &Path {
    fn os(&self) -> OsString {
        self.as_os_str().to_os_string()
    }
}

// ------------------------------------------------------------------ checks

fn doc(o: &crate::runner::Outcome) -> Result<Value, String> {
    serde_json::from_slice(&o.stdout).map_err(|e| format!("stdout is not JSON: {e}"))
}

fn sessions(d: &Value) -> Vec<Value> {
    d["sessions"].as_array().cloned().unwrap_or_default()
}

/// list --format json shows `n` sessions.
fn sessions_eq(n: usize) -> Check {
    Box::new(move |o, _| {
        let d = doc(o)?;
        let got = sessions(&d).len();
        (got == n).then_some(()).ok_or(format!(
            "{got} sessions listed, expected {n}; errors: {}",
            d["errors"]
        ))
    })
}

fn total_messages(d: &Value) -> u64 {
    sessions(d)
        .iter()
        .filter_map(|s| s["messages"].as_u64())
        .sum()
}

/// list --format json counts `n` messages over all sessions.
fn messages_eq(n: u64) -> Check {
    Box::new(move |o, _| {
        let d = doc(o)?;
        let got = total_messages(&d);
        (got == n).then_some(()).ok_or(format!(
            "{got} messages listed, expected {n}; errors: {}",
            d["errors"]
        ))
    })
}

fn messages_ge(n: u64) -> Check {
    Box::new(move |o, _| {
        let d = doc(o)?;
        let got = total_messages(&d);
        (got >= n)
            .then_some(())
            .ok_or(format!("{got} messages listed, expected at least {n}"))
    })
}

/// list --format json counts at least `n` stored lines over all sessions:
/// messages and the lines that hold none (`metadata_lines`, Codex).
fn lines_ge(n: u64) -> Check {
    Box::new(move |o, _| {
        let d = doc(o)?;
        let meta: u64 = sessions(&d)
            .iter()
            .filter_map(|s| s["metadata_lines"].as_u64())
            .sum();
        let got = total_messages(&d) + meta;
        (got >= n).then_some(()).ok_or(format!(
            "{got} messages and lines that hold none listed, expected at least {n}"
        ))
    })
}

fn stdout_has(s: &'static str) -> Check {
    Box::new(move |o, _| {
        o.stdout_str()
            .contains(s)
            .then_some(())
            .ok_or(format!("stdout lacks `{s}`"))
    })
}

fn stdout_lacks(s: &'static str) -> Check {
    Box::new(move |o, _| {
        (!o.stdout_str().contains(s))
            .then_some(())
            .ok_or(format!("stdout contains `{s}`"))
    })
}

/// Session ids stored in an opencode db (for the concurrency case).
pub fn session_ids_in_db(p: &Path) -> Vec<String> {
    let Ok(c) =
        rusqlite::Connection::open_with_flags(p, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
    else {
        return vec![];
    };
    let Ok(mut st) = c.prepare("SELECT id FROM session ORDER BY id") else {
        return vec![];
    };
    st.query_map([], |r| r.get::<_, String>(0))
        .map(|it| it.flatten().collect())
        .unwrap_or_default()
}

// --------------------------------------------------------------- generators

/// Appends `n` messages (alternating user/assistant, one text part each) to
/// session `sid`; every `dangling_every`-th assistant names a missing parent.
fn oc_add(c: &rusqlite::Connection, sid: &str, n: usize, dangling_every: usize, tag: &str) {
    let t0: i64 = c
        .query_row("SELECT max(time_created) FROM message", [], |r| r.get(0))
        .unwrap_or(1_795_000_000_000);
    let tx = c.unchecked_transaction().unwrap();
    {
        let mut m = tx
            .prepare("INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?1, ?2, ?3, ?3, ?4)")
            .unwrap();
        let mut p = tx
            .prepare("INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?1, ?2, ?3, ?4, ?4, ?5)")
            .unwrap();
        let mut last_user = String::new();
        for i in 0..n {
            let id = format!("msg_{tag}{i:012}");
            let t = t0 + 1 + i as i64;
            let data = if i & 1 == 0 {
                last_user = id.clone();
                json!({"role":"user","time":{"created":t},"agent":"build",
                       "model":{"providerID":"stub","modelID":"stub-small"}})
            } else {
                let parent = if dangling_every > 0 && i % dangling_every == 1 {
                    format!("msg_gone{i:012}")
                } else {
                    last_user.clone()
                };
                json!({"parentID":parent,"role":"assistant","mode":"build","agent":"build",
                       "path":{"cwd":"/h","root":"/h"},"cost":0,
                       "tokens":{"total":20,"input":10,"output":10,"reasoning":0,"cache":{"write":0,"read":0}},
                       "modelID":"stub-small","providerID":"stub","time":{"created":t,"completed":t},"finish":"stop"})
            };
            m.execute(rusqlite::params![id, sid, t, data.to_string()])
                .unwrap();
            p.execute(rusqlite::params![
                format!("prt_{tag}{i:012}"),
                id,
                sid,
                t,
                json!({"type":"text","text":format!("hostile message {i}")}).to_string()
            ])
            .unwrap();
        }
    }
    tx.commit().unwrap();
}

/// Appends `n` message files (+ one part file each) to the legacy tree.
fn legacy_add(l: &Path, n: usize, dangling_every: usize, tag: &str) {
    let md = legacy_msg_dir(l);
    let mut last_user = String::new();
    for i in 0..n {
        let id = format!("msg_{tag}{i:012}");
        let t = 1_795_344_999_000i64 + i as i64;
        let m = if i & 1 == 0 {
            last_user = id.clone();
            json!({"id":id,"sessionID":LEGACY_SID,"role":"user","time":{"created":t},
                   "agent":"build","model":{"providerID":"stub","modelID":"stub-small"}})
        } else {
            let parent = if dangling_every > 0 && i % dangling_every == 1 {
                format!("msg_gone{i:012}")
            } else {
                last_user.clone()
            };
            json!({"id":id,"sessionID":LEGACY_SID,"role":"assistant","parentID":parent,
                   "time":{"created":t,"completed":t},"modelID":"stub-small","providerID":"stub",
                   "mode":"build","agent":"build","path":{"cwd":"/h","root":"/h"},"cost":0,
                   "tokens":{"input":10,"output":10,"reasoning":0,"cache":{"read":0,"write":0}},"finish":"stop"})
        };
        write(&md.join(format!("{id}.json")), m.to_string());
        let pid = format!("prt_{tag}{i:012}");
        write(
            &l.join("storage/part").join(&id).join(format!("{pid}.json")),
            json!({"id":pid,"sessionID":LEGACY_SID,"messageID":id,"type":"text","text":format!("hostile {i}")})
                .to_string(),
        );
    }
}

fn iso(i: usize) -> String {
    let day = 23 + i / 86_400;
    let s = i % 86_400;
    format!(
        "2026-11-{day:02}T{:02}:{:02}:{:02}.000Z",
        s / 3600,
        (s / 60) % 60,
        s % 60
    )
}

fn uuid(tag: u32, i: usize) -> String {
    format!("{tag:08x}-0000-4000-8000-{i:012x}")
}

/// One Claude Code line.
fn cl_line(uuid: &str, parent: Option<&str>, user: bool, text: &str, sid: &str, i: usize) -> Value {
    if user {
        json!({"parentUuid":parent,"isSidechain":false,"type":"user",
               "message":{"role":"user","content":text},"uuid":uuid,"timestamp":iso(i),
               "userType":"external","cwd":"/home/dev/hostile","sessionId":sid,"version":"2.1.197"})
    } else {
        json!({"parentUuid":parent,"isSidechain":false,
               "message":{"id":format!("msg_h{uuid}"),"type":"message","role":"assistant",
                          "model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":text}],
                          "stop_reason":"end_turn","stop_sequence":null,
                          "usage":{"input_tokens":3,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":5}},
               "requestId":format!("req_{uuid}"),"type":"assistant","uuid":uuid,"timestamp":iso(i),
               "userType":"external","cwd":"/home/dev/hostile","sessionId":sid,"version":"2.1.197"})
    }
}

/// The uuid of the last line that has one.
fn last_uuid(p: &Path) -> String {
    for l in lines(p).iter().rev() {
        if let Ok(v) = serde_json::from_slice::<Value>(l) {
            if let Some(u) = v["uuid"].as_str() {
                return u.to_string();
            }
        }
    }
    panic!("no uuid in {}", p.display())
}

/// Appends `n` chained lines; every `dangling_every`-th names a missing parent.
fn claude_add(p: &Path, sid: &str, n: usize, dangling_every: usize) {
    use std::io::Write;
    let mut parent = last_uuid(p);
    let mut f = std::io::BufWriter::new(std::fs::OpenOptions::new().append(true).open(p).unwrap());
    for i in 0..n {
        let u = uuid(0xb16, i);
        let par = if dangling_every > 0 && i % dangling_every == 1 {
            uuid(0xdead, i)
        } else {
            parent.clone()
        };
        let l = cl_line(
            &u,
            Some(&par),
            i & 1 == 0,
            &format!("hostile line {i}"),
            sid,
            i,
        );
        f.write_all(l.to_string().as_bytes()).unwrap();
        f.write_all(b"\n").unwrap();
        parent = u;
    }
    f.flush().unwrap();
}

fn cx_msg(user: bool, text: &str, i: usize) -> Value {
    let (role, kind) = if user {
        ("user", "input_text")
    } else {
        ("assistant", "output_text")
    };
    json!({"timestamp":iso(i),"type":"response_item",
           "payload":{"type":"message","role":role,"content":[{"type":kind,"text":text}]}})
}

fn cx_tokens(total: u64, last: u64, window: u64, i: usize) -> Value {
    json!({"timestamp":iso(i),"type":"event_msg","payload":{"type":"token_count","info":{
        "total_token_usage":{"input_tokens":total,"cached_input_tokens":0,"output_tokens":total,"reasoning_output_tokens":0,"total_tokens":total},
        "last_token_usage":{"input_tokens":last,"cached_input_tokens":0,"output_tokens":last,"reasoning_output_tokens":0,"total_tokens":last},
        "model_context_window":window},"rate_limits":null}})
}

/// Appends `n` response items (and a token_count every 100) to a rollout.
fn codex_add(p: &Path, n: usize) {
    use std::io::Write;
    let mut f = std::io::BufWriter::new(std::fs::OpenOptions::new().append(true).open(p).unwrap());
    for i in 0..n {
        let l = if i % 100 == 99 {
            cx_tokens(100_000 + i as u64 * 10, 10, 258_400, i)
        } else {
            cx_msg(i & 1 == 0, &format!("hostile item {i}"), i)
        };
        f.write_all(l.to_string().as_bytes()).unwrap();
        f.write_all(b"\n").unwrap();
    }
    f.flush().unwrap();
}

// ------------------------------------------------------------- JSON shapes

/// Every shape of invalid (or hostile) JSON; `named`: check must name it.
const SHAPES: &[(&str, bool)] = &[
    ("truncated", true),
    ("trailing-garbage", true),
    ("top-array", true),
    ("top-string", true),
    ("top-number", true),
    ("top-null", true),
    ("deep-array", true),
    ("deep-object", true),
    ("huge-number", false),
    ("invalid-escape", true),
    ("lone-surrogate", true),
    ("nul-byte", true),
    ("invalid-utf8", true),
    ("bom", true),
    ("empty", false),
];

const DEPTH: usize = 100_000;

/// The hostile bytes for `shape`, from `valid` (one JSON object, no newline).
fn shape(name: &str, valid: &[u8]) -> Vec<u8> {
    let with = |prefix: &[u8]| {
        let mut v = prefix.to_vec();
        v.extend_from_slice(&valid[1..]);
        v
    };
    match name {
        "truncated" => valid[..valid.len() / 2].to_vec(),
        "trailing-garbage" => [valid, b" }{ trailing garbage"].concat(),
        "top-array" => b"[1,2,3]".to_vec(),
        "top-string" => b"\"just a string\"".to_vec(),
        "top-number" => b"123456789012345678901234567890".to_vec(),
        "top-null" => b"null".to_vec(),
        "deep-array" => [vec![b'['; DEPTH], vec![b']'; DEPTH]].concat(),
        "deep-object" => [
            b"{\"a\":".repeat(DEPTH),
            b"1".to_vec(),
            vec![b'}'; DEPTH],
        ]
        .concat(),
        "huge-number" => with(
            b"{\"hugeA\":1e999999,\"hugeB\":-123456789012345678901234567890123,\"hugeC\":18446744073709551616,",
        ),
        "invalid-escape" => with(b"{\"bad\":\"\\q \\x41 \\u12\","),
        "lone-surrogate" => with(b"{\"lone\":\"\\ud800\",\"lone2\":\"\\udc00x\","),
        "nul-byte" => with(b"{\"nul\":\"a\0b\",\0"),
        "invalid-utf8" => with(b"{\"bad\":\"\xff\xfe\xc3(\xed\xa0\x80\","),
        "bom" => [b"\xEF\xBB\xBF".as_slice(), valid].concat(),
        "empty" => vec![],
        other => panic!("unknown shape {other}"),
    }
}

/// A JSON line of `p` (0-based `i`), without its newline.
fn line_of(p: &Path, i: usize) -> Vec<u8> {
    let l = lines(p).swap_remove(i);
    l.strip_suffix(b"\n").unwrap_or(&l).to_vec()
}

// ------------------------------------------------------------------- cases

fn b(f: impl Fn(&Ctx, &Path) -> Case + Send + Sync + 'static) -> Builder {
    Box::new(f)
}

pub fn all() -> Vec<(String, Builder)> {
    let mut v: Vec<(String, Builder)> = vec![];
    let mut add = |n: &str, f: Builder| v.push((n.to_string(), f));

    // ---- big first (they take longest): 100k messages per format with 10%
    // dangling parents under SD_HOSTILE_BIG=1, 10k otherwise.
    add(
        "big-opencode-db",
        b(|ctx, d| {
            let n = ctx.size(10_000, 100_000);
            let p = db(ctx, PLAIN_DB, d, "store");
            oc_add(&sqlite(&p), PLAIN_SID, n, 10, "big");
            Case::new("big-opencode-db", d)
                .input(p2o(&p))
                .session(PLAIN_SID)
                .expect(Expect {
                    list: Some(0),
                    check: Some(1),
                    ..Default::default()
                })
                .check("list-json", messages_eq(PLAIN_MESSAGES + n as u64))
                .heavy(if ctx.big { 2048 } else { 1024 }, 60)
        }),
    );
    add(
        "big-legacy-tree",
        b(|ctx, d| {
            let n = ctx.size(2_000, 10_000);
            let l = legacy(ctx, d);
            legacy_add(&l, n, 10, "big");
            Case::new("big-legacy-tree", d)
                .input(p2o(&l))
                .session(LEGACY_SID)
                .expect(Expect {
                    list: Some(0),
                    check: Some(1),
                    ..Default::default()
                })
                .check("list-json", messages_eq(LEGACY_MESSAGES + n as u64))
                .heavy(1024, 60)
        }),
    );
    add(
        "big-claude",
        b(|ctx, d| {
            let n = ctx.size(10_000, 100_000);
            let f = claude(ctx, CLAUDE_MULTI, d);
            claude_add(&f, CLAUDE_SID, n, 10);
            Case::new("big-claude", d)
                .input(p2o(&f))
                .session(CLAUDE_SID)
                .expect(Expect {
                    list: Some(0),
                    check: Some(1),
                    ..Default::default()
                })
                .check("list-json", messages_ge(n as u64))
                .heavy(if ctx.big { 2048 } else { 1024 }, 60)
        }),
    );
    add(
        "big-codex",
        b(|ctx, d| {
            let n = ctx.size(10_000, 100_000);
            let f = codex(ctx, CODEX_SMALL, d, CODEX_SMALL_NAME);
            codex_add(&f, n);
            Case::new("big-codex", d)
                .input(p2o(&f))
                .session(CODEX_SID)
                .expect(Expect {
                    list: Some(0),
                    ..Default::default()
                })
                // Each added line is read: a response item as a message, a
                // token count (one in 100) as a line that holds none.
                .check("list-json", messages_ge(n as u64 / 100 * 99))
                .check("list-json", lines_ge(n as u64))
                .heavy(if ctx.big { 2048 } else { 1024 }, 60)
        }),
    );
    add(
        "huge-line-claude",
        b(|ctx, d| {
            // One user line of 20 MB (200 MB with SD_HOSTILE_BIG=1).
            let n = ctx.size(20 << 20, 200 << 20);
            let f = claude(ctx, CLAUDE_MULTI, d);
            let parent = last_uuid(&f);
            let head = format!(
            "{{\"parentUuid\":\"{parent}\",\"isSidechain\":false,\"type\":\"user\",\"uuid\":\"{}\",\"timestamp\":\"2026-11-23T00:00:00.000Z\",\"sessionId\":\"{CLAUDE_SID}\",\"cwd\":\"/home/dev/hostile\",\"version\":\"2.1.197\",\"message\":{{\"role\":\"user\",\"content\":\"",
            uuid(0x1e, 1)
        );
            let big = d.join("big.part");
            write_streamed(&big, head.as_bytes(), b'x', n, b"\"}}\n");
            // Append without holding it in memory.
            let mut out = std::fs::OpenOptions::new().append(true).open(&f).unwrap();
            std::io::copy(&mut std::fs::File::open(&big).unwrap(), &mut out).unwrap();
            std::fs::remove_file(&big).unwrap();
            Case::new("huge-line-claude", d)
                .input(p2o(&f))
                .session(CLAUDE_SID)
                .heavy(if ctx.big { 2048 } else { 1024 }, 60)
        }),
    );
    add(
        "huge-line-codex",
        b(|ctx, d| {
            let n = ctx.size(20 << 20, 50 << 20);
            let f = codex(ctx, CODEX_SMALL, d, CODEX_SMALL_NAME);
            let big = d.join("big.part");
            write_streamed(
            &big,
            b"{\"timestamp\":\"2026-02-23T19:40:00.000Z\",\"type\":\"response_item\",\"payload\":{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"",
            b'y',
            n,
            b"\"}]}}\n",
        );
            let mut out = std::fs::OpenOptions::new().append(true).open(&f).unwrap();
            std::io::copy(&mut std::fs::File::open(&big).unwrap(), &mut out).unwrap();
            std::fs::remove_file(&big).unwrap();
            Case::new("huge-line-codex", d)
                .input(p2o(&f))
                .session(CODEX_SID)
                .heavy(if ctx.big { 2048 } else { 1024 }, 60)
        }),
    );
    add(
        "image-50mb-claude",
        b(|ctx, d| {
            // A pasted base64 image of 5 MB (50 MB with SD_HOSTILE_BIG=1), then a
            // later small image: compact strips the big one.
            let n = ctx.size(5 << 20, 50 << 20);
            let f = claude(ctx, CLAUDE_MULTI, d);
            let parent = last_uuid(&f);
            let u1 = uuid(0x1a, 1);
            let head = format!(
            "{{\"parentUuid\":\"{parent}\",\"isSidechain\":false,\"type\":\"user\",\"uuid\":\"{u1}\",\"timestamp\":\"2026-11-23T00:00:00.000Z\",\"sessionId\":\"{CLAUDE_SID}\",\"cwd\":\"/home/dev/hostile\",\"version\":\"2.1.197\",\"message\":{{\"role\":\"user\",\"content\":[{{\"type\":\"text\",\"text\":\"look\"}},{{\"type\":\"image\",\"source\":{{\"type\":\"base64\",\"media_type\":\"image/png\",\"data\":\"iVBORw0KGgoA"
        );
            let big = d.join("big.part");
            write_streamed(&big, head.as_bytes(), b'A', n, b"\"}}]}}\n");
            let mut out = std::fs::OpenOptions::new().append(true).open(&f).unwrap();
            std::io::copy(&mut std::fs::File::open(&big).unwrap(), &mut out).unwrap();
            std::fs::remove_file(&big).unwrap();
            let a = cl_line(
                &uuid(0x1a, 2),
                Some(&u1),
                false,
                "a big image",
                CLAUDE_SID,
                2,
            );
            let mut u = cl_line(
                &uuid(0x1a, 3),
                Some(&uuid(0x1a, 2)),
                true,
                "",
                CLAUDE_SID,
                3,
            );
            u["message"]["content"] = json!([{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgoAAAA"}}]);
            append(&f, nl(a.to_string().into_bytes()).as_slice());
            append(&f, nl(u.to_string().into_bytes()).as_slice());
            Case::new("image-50mb-claude", d)
                .input(p2o(&f))
                .session(CLAUDE_SID)
                .heavy(if ctx.big { 2048 } else { 1024 }, 60)
        }),
    );
    add(
        "image-50mb-opencode",
        b(|ctx, d| {
            let n = ctx.size(5 << 20, 50 << 20);
            let p = db(ctx, PLAIN_DB, d, "store");
            let c = sqlite(&p);
            let (mid, t): (String, i64) = c
                .query_row(
                    "SELECT id, time_created FROM message ORDER BY time_created LIMIT 1",
                    [],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .unwrap();
            let url = format!("data:image/png;base64,iVBORw0KGgoA{}", "A".repeat(n));
            let data = json!({"type":"file","mime":"image/png","filename":"huge.png","url":url})
                .to_string();
            c.execute(
            "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES ('prt_zzhugeimage', ?1, ?2, ?3, ?3, ?4)",
            rusqlite::params![mid, PLAIN_SID, t, data],
        )
        .unwrap();
            drop(c);
            Case::new("image-50mb-opencode", d)
                .input(p2o(&p))
                .session(PLAIN_SID)
                .heavy(if ctx.big { 2048 } else { 1024 }, 60)
        }),
    );

    // ---- --out edge cases: copies must never land on (or beside) an original.
    add(
        "out-parent-of-two-stores-force",
        b(|ctx, d| {
            // The issue's reproduction: repair --force --out S S/opencode S/kilo.
            let s = d.join("srcstore");
            db(ctx, PLAIN_DB, &s, "opencode");
            db(ctx, KILO_DB, &s, "kilo");
            let (o, k) = (s.join("opencode"), s.join("kilo"));
            Case::new("out-parent-of-two-stores-force", d)
                .input(p2o(&o))
                .input(p2o(&k))
                .session(PLAIN_SID)
                .run(
                    "repair --force --out S S/opencode S/kilo",
                    args(&[&"repair", &"--force", &"--out", &s, &o, &k]),
                    Some(2),
                )
                .run(
                    "repair --out S (no force)",
                    args(&[&"repair", &"--out", &s, &o, &k]),
                    Some(2),
                )
                // compact copies one store: S/opencode.db lands on no source.
                .run_out_allowed(
                    "compact --force --out S",
                    args(&[
                        &"compact",
                        &"--force",
                        &"--session",
                        &PLAIN_SID,
                        &"--out",
                        &s,
                        &o,
                        &k,
                    ]),
                    &s.join("opencode.db"),
                )
                .run(
                    "repair --force --out S S (walked)",
                    args(&[&"repair", &"--force", &"--out", &s, &s]),
                    Some(2),
                )
        }),
    );
    add(
        "out-parent-of-two-stores-wal-force",
        b(|ctx, d| {
            let s = d.join("srcstore");
            oc_with_wal(ctx, &s.join("opencode"), 3);
            db(ctx, KILO_DB, &s, "kilo");
            let (o, k) = (s.join("opencode"), s.join("kilo"));
            Case::new("out-parent-of-two-stores-wal-force", d)
                .input(p2o(&o))
                .input(p2o(&k))
                .session(PLAIN_SID)
                .run(
                    "repair --force --out S S/opencode S/kilo",
                    args(&[&"repair", &"--force", &"--out", &s, &o, &k]),
                    Some(2),
                )
                // compact copies one store: S/opencode.db lands on no source.
                .run_out_allowed(
                    "compact --force --out S",
                    args(&[
                        &"compact",
                        &"--force",
                        &"--session",
                        &PLAIN_SID,
                        &"--out",
                        &s,
                        &o,
                        &k,
                    ]),
                    &s.join("opencode.db"),
                )
        }),
    );
    add(
        "out-is-source-dir",
        b(|ctx, d| {
            let p = db(ctx, STALE_DB, d, "srcdb");
            let s = d.join("srcdb");
            Case::new("out-is-source-dir", d)
                .input(p2o(&p))
                .session(STALE_SID)
                .run(
                    "repair --out D D/opencode.db",
                    args(&[&"repair", &"--out", &s, &p]),
                    Some(2),
                )
                .run(
                    "repair --force --out D D/opencode.db",
                    args(&[&"repair", &"--force", &"--out", &s, &p]),
                    Some(2),
                )
                .run(
                    "repair --force --out D D",
                    args(&[&"repair", &"--force", &"--out", &s, &s]),
                    Some(2),
                )
                .run(
                    "compact --force --out D",
                    args(&[
                        &"compact",
                        &"--force",
                        &"--session",
                        &STALE_SID,
                        &"--out",
                        &s,
                        &p,
                    ]),
                    Some(2),
                )
        }),
    );
    add(
        "out-is-source-dir-wal",
        b(|ctx, d| {
            let s = d.join("srcdb");
            let p = oc_with_wal(ctx, &s, 3);
            Case::new("out-is-source-dir-wal", d)
                .input(p2o(&p))
                .session(PLAIN_SID)
                .run(
                    "repair --force --out D D/opencode.db",
                    args(&[&"repair", &"--force", &"--out", &s, &p]),
                    Some(2),
                )
                .run(
                    "repair --force --out D D",
                    args(&[&"repair", &"--force", &"--out", &s, &s]),
                    Some(2),
                )
                .run(
                    "compact --force --out D",
                    args(&[
                        &"compact",
                        &"--force",
                        &"--session",
                        &PLAIN_SID,
                        &"--out",
                        &s,
                        &p,
                    ]),
                    Some(2),
                )
        }),
    );
    add(
        "out-inside-source-dir",
        b(|ctx, d| {
            let p = db(ctx, STALE_DB, d, "srcdb");
            let sub = d.join("srcdb/new-sub");
            // Issue 10: the db was given as a file, so a new folder beside it
            // is allowed (the copy never lands on the source or its side files).
            Case::new("out-inside-source-dir", d)
                .input(p2o(&p))
                .session(STALE_SID)
                .run_out_allowed(
                    "repair --out D/new-sub",
                    args(&[&"repair", &"--out", &sub, &p]),
                    &sub,
                )
                .run_out_allowed(
                    "repair --force --out D/new-sub/deeper",
                    args(&[&"repair", &"--force", &"--out", &sub.join("deeper"), &p]),
                    &sub,
                )
                .run_out_allowed(
                    "compact --out D/new-sub",
                    args(&[&"compact", &"--session", &STALE_SID, &"--out", &sub, &p]),
                    &sub,
                )
        }),
    );
    add(
        "out-inside-existing-subdir",
        b(|ctx, d| {
            let s = d.join("srcdb");
            copy_dir(&ctx.fx("opencode/stale-parent"), &s);
            mkdir(&s.join("exports"));
            let p = s.join("opencode.db");
            Case::new("out-inside-existing-subdir", d)
                .input(p2o(&p))
                .session(STALE_SID)
                .run_out_allowed(
                    "repair --force --out D/exports",
                    args(&[&"repair", &"--force", &"--out", &s.join("exports"), &p]),
                    &s.join("exports/opencode.db"),
                )
                .run_out_allowed(
                    "compact --force --out D/exports",
                    args(&[
                        &"compact",
                        &"--force",
                        &"--session",
                        &STALE_SID,
                        &"--out",
                        &s.join("exports"),
                        &p,
                    ]),
                    &s.join("exports/opencode.db"),
                )
        }),
    );
    add(
        "out-symlink-to-source-dir",
        b(|ctx, d| {
            let p = db(ctx, STALE_DB, d, "srcdb");
            let link = d.join("outlink");
            symlink("srcdb", &link);
            let link2 = d.join("outlink-inside");
            symlink("srcdb/sub-that-is-missing", &link2);
            Case::new("out-symlink-to-source-dir", d)
                .input(p2o(&p))
                .session(STALE_SID)
                .run(
                    "repair --force --out L (L -> D)",
                    args(&[&"repair", &"--force", &"--out", &link, &p]),
                    Some(2),
                )
                .run(
                    "repair --out L (L -> D)",
                    args(&[&"repair", &"--out", &link, &p]),
                    Some(2),
                )
                .run(
                    "repair --force --out L (L -> D/missing)",
                    args(&[&"repair", &"--force", &"--out", &link2, &p]),
                    Some(2),
                )
                .run(
                    "compact --force --out L",
                    args(&[
                        &"compact",
                        &"--force",
                        &"--session",
                        &STALE_SID,
                        &"--out",
                        &link,
                        &p,
                    ]),
                    Some(2),
                )
        }),
    );
    add(
        "out-via-dotdot",
        b(|ctx, d| {
            let s = d.join("srcdb");
            let p = db(ctx, STALE_DB, d, "srcdb");
            mkdir(&s.join("exports"));
            let mut c = Case::new("out-via-dotdot", d)
                .input(p2o(&p))
                .session(STALE_SID)
                .run(
                    "repair --force --out D/exports/..",
                    args(&[&"repair", &"--force", &"--out", &s.join("exports/.."), &p]),
                    Some(2),
                )
                .run(
                    "repair --force --out D/../srcdb",
                    args(&[&"repair", &"--force", &"--out", &s.join("../srcdb"), &p]),
                    Some(2),
                );
            // Relative: cwd D/exports, --out .. ../opencode.db
            c.extra.push(crate::Run {
                label: "cwd D/exports: repair --force --out .. ../opencode.db".into(),
                args: args(&[&"repair", &"--force", &"--out", &"..", &"../opencode.db"]),
                cwd: Some(s.join("exports")),
                expect: Some(2),
                names: vec![],
                out_allowed: None,
            });
            c.extra.push(crate::Run {
                label: "cwd D/exports: compact --force --out ..".into(),
                args: args(&[
                    &"compact",
                    &"--force",
                    &"--session",
                    &STALE_SID,
                    &"--out",
                    &"..",
                    &"../opencode.db",
                ]),
                cwd: Some(s.join("exports")),
                expect: Some(2),
                names: vec![],
                out_allowed: None,
            });
            c
        }),
    );
    add(
        "out-contains-source",
        b(|ctx, d| {
            // S/x/opencode.db, --out S: the copy S/opencode.db is not the original;
            // the original (S/x) must stay as it was, whatever the exit code.
            let s = d.join("outer");
            let p = db(ctx, STALE_DB, &s, "x");
            let mut c = Case::new("out-contains-source", d)
                .input(p2o(&p))
                .session(STALE_SID)
                .run(
                    "repair --force --out S",
                    args(&[&"repair", &"--force", &"--out", &s, &p]),
                    None,
                )
                .run(
                    "repair --force --out S (input S/x)",
                    args(&[&"repair", &"--force", &"--out", &s, &s.join("x")]),
                    None,
                )
                .run(
                    "compact --force --out S",
                    args(&[
                        &"compact",
                        &"--force",
                        &"--session",
                        &STALE_SID,
                        &"--out",
                        &s,
                        &p,
                    ]),
                    None,
                );
            c.roots = vec![s.join("x")];
            c
        }),
    );
    add(
        "out-legacy-datadir",
        b(|ctx, d| {
            let l = legacy(ctx, d);
            // A dangling parent so that repair has a change to write.
            let m = legacy_msg_dir(&l).join(format!("{LEGACY_ASSISTANT}.json"));
            let mut v: Value = serde_json::from_slice(&std::fs::read(&m).unwrap()).unwrap();
            v["parentID"] = json!("msg_missing_parent");
            write(&m, serde_json::to_vec_pretty(&v).unwrap());
            let st = l.join("storage");
            Case::new("out-legacy-datadir", d)
                .input(p2o(&l))
                .session(LEGACY_SID)
                .run(
                    "repair --force --out L L",
                    args(&[&"repair", &"--force", &"--out", &l, &l]),
                    Some(2),
                )
                .run(
                    "repair --force --out L L/storage",
                    args(&[&"repair", &"--force", &"--out", &l, &st]),
                    Some(2),
                )
                .run(
                    "repair --force --out L/storage L/storage",
                    args(&[&"repair", &"--force", &"--out", &st, &st]),
                    Some(2),
                )
                .run(
                    "repair --force --out L/storage/message L",
                    args(&[&"repair", &"--force", &"--out", &st.join("message"), &l]),
                    Some(2),
                )
                .run(
                    "compact --force --out L L/storage",
                    args(&[
                        &"compact",
                        &"--force",
                        &"--session",
                        &LEGACY_SID,
                        &"--out",
                        &l,
                        &st,
                    ]),
                    Some(2),
                )
        }),
    );
    add(
        "out-claude-transcript-folder",
        b(|ctx, d| {
            // double_compact_nometa: repair has a stale parent to fix.
            let f = claude(ctx, CLAUDE_NOMETA, d);
            let proj = f.parent().unwrap().to_path_buf();
            let projects = claude_projects(d);
            let cfg = d.join("claude");
            Case::new("out-claude-transcript-folder", d)
                .input(p2o(&f))
                .session(CLAUDE_DOUBLE_SID)
                .run(
                    "repair --force --out <project dir> <file>",
                    args(&[&"repair", &"--force", &"--out", &proj, &f]),
                    Some(2),
                )
                .run(
                    "repair --force --out <config dir> <file>",
                    args(&[&"repair", &"--force", &"--out", &cfg, &f]),
                    Some(2),
                )
                .run(
                    "repair --force --out <projects> <projects>",
                    args(&[&"repair", &"--force", &"--out", &projects, &projects]),
                    Some(2),
                )
                .run(
                    "repair --force --out <config dir> <projects>",
                    args(&[&"repair", &"--force", &"--out", &cfg, &projects]),
                    Some(2),
                )
                .run(
                    "compact --force --out <project dir>",
                    args(&[
                        &"compact",
                        &"--force",
                        &"--session",
                        &CLAUDE_DOUBLE_SID,
                        &"--out",
                        &proj,
                        &f,
                    ]),
                    Some(2),
                )
        }),
    );
    add(
        "out-claude-subagents-folder",
        b(|ctx, d| {
            let f = claude(ctx, CLAUDE_MULTI, d);
            let sub = f.parent().unwrap().join(CLAUDE_SID).join("subagents");
            let mut parent: Option<String> = None;
            let side: Vec<Vec<u8>> = (0..4)
                .map(|i| {
                    let u = uuid(0xa9, i);
                    let mut v = cl_line(
                        &u,
                        parent.as_deref(),
                        i & 1 == 0,
                        "sub-agent",
                        CLAUDE_SID,
                        i,
                    );
                    v["isSidechain"] = json!(true);
                    v["agentId"] = json!("a0b1c2d3");
                    parent = Some(u);
                    nl(v.to_string().into_bytes())
                })
                .collect();
            write_lines(&sub.join("agent-a0b1c2d3.jsonl"), &side);
            Case::new("out-claude-subagents-folder", d)
                .input(p2o(&f))
                .session(CLAUDE_SID)
                .run(
                    "repair --force --out <id>/subagents",
                    args(&[&"repair", &"--force", &"--out", &sub, &f]),
                    Some(2),
                )
                .run(
                    "repair --force --out <id>",
                    args(&[
                        &"repair",
                        &"--force",
                        &"--out",
                        &sub.parent().unwrap().to_path_buf(),
                        &f,
                    ]),
                    Some(2),
                )
                .run(
                    "compact --force --out <id>/subagents",
                    args(&[
                        &"compact",
                        &"--force",
                        &"--session",
                        &CLAUDE_SID,
                        &"--out",
                        &sub,
                        &f,
                    ]),
                    Some(2),
                )
        }),
    );
    add(
        "out-codex-home",
        b(|ctx, d| {
            let f = codex(ctx, CODEX_SMALL, d, CODEX_SMALL_NAME);
            let day = f.parent().unwrap().to_path_buf();
            let home = d.join("codex");
            Case::new("out-codex-home", d)
                .input(p2o(&f))
                .session(CODEX_SID)
                .run(
                    "repair --force --out <day dir> <file>",
                    args(&[&"repair", &"--force", &"--out", &day, &f]),
                    Some(2),
                )
                .run(
                    "repair --force --out <codex home> <home>/sessions",
                    args(&[
                        &"repair",
                        &"--force",
                        &"--out",
                        &home,
                        &home.join("sessions"),
                    ]),
                    Some(2),
                )
                .run(
                    "compact --force --out <codex home>",
                    args(&[
                        &"compact",
                        &"--force",
                        &"--session",
                        &CODEX_SID,
                        &"--out",
                        &home,
                        &f,
                    ]),
                    Some(2),
                )
        }),
    );
    add(
        "concurrent-repairs-one-out",
        b(|ctx, d| {
            let a = db(ctx, PLAIN_DB, d, "a");
            let bb = db(ctx, STALE_DB, d, "b");
            let mut c = Case::new("concurrent-repairs-one-out", d);
            c.standard = false;
            c.special = Some(Special::ConcurrentRepair {
                a: (a, PLAIN_SID.into()),
                b: (bb, STALE_SID.into()),
                rounds: 4,
            });
            c
        }),
    );
    add(
        "repair-twice-one-out",
        b(|ctx, d| {
            let a = db(ctx, STALE_DB, d, "a");
            let mut c = Case::new("repair-twice-one-out", d);
            c.standard = false;
            c.special = Some(Special::RepairTwice { source: a });
            c
        }),
    );

    // ---- names
    add(
        "codex-multibyte-name",
        b(|ctx, d| {
            let name = format!("rollout-{}a.jsonl", "é".repeat(60));
            let f = codex(ctx, CODEX_SMALL, d, &name);
            Case::new("codex-multibyte-name", d)
                .input(p2o(&f))
                .session(CODEX_SID)
                .expect(Expect {
                    list: Some(0),
                    ..Default::default()
                })
                .check("list-json", sessions_eq(1))
        }),
    );
    add(
        "codex-multibyte-name-no-meta",
        b(|ctx, d| {
            // No session_meta: the id comes from the name (the slicing path).
            let names = [
                format!("rollout-{}a.jsonl", "é".repeat(60)),
                "rollout-é.jsonl".to_string(),
                format!("rollout-2026-01-01T00-00-00-{}.jsonl", "ü".repeat(36)),
            ];
            let mut c = Case::new("codex-multibyte-name-no-meta", d);
            for n in &names {
                let f = codex(ctx, CODEX_SMALL, d, n);
                let ls = lines(&f);
                write_lines(&f, &ls[1..]);
            }
            c.inputs.push(p2o(&d.join("codex")));
            c.expect = Expect {
                list: Some(0),
                ..Default::default()
            };
            c.check("list-json", sessions_eq(3))
        }),
    );
    add(
        "codex-not-rollout-named",
        b(|ctx, d| {
            let f = d.join("codex/sessions/2026/11/22/my-notes.jsonl");
            copy(&ctx.fx(CODEX_MULTI), &f);
            Case::new("codex-not-rollout-named", d)
                .input(p2o(&d.join("codex")))
                .session(CODEX_MULTI_SID)
                .expect(Expect {
                    list: Some(0),
                    ..Default::default()
                })
                .check("list-json", sessions_eq(1))
        }),
    );
    add(
        "nonutf8-db-folder",
        b(|ctx, d| {
            let dir = d.join(raw(b"store-\xff"));
            let p = dir.join("opencode.db");
            copy(&ctx.fx(PLAIN_DB), &p);
            let _ = p;
            // Walked: the folder name is met while walking, not given.
            Case::new("nonutf8-db-folder", d)
                .input(p2o(d))
                .session(PLAIN_SID)
                .expect(Expect {
                    list: Some(0),
                    ..Default::default()
                })
                .check("list-json", messages_eq(PLAIN_MESSAGES))
        }),
    );
    add(
        "nonutf8-claude-names",
        b(|ctx, d| {
            // \xff.jsonl and \xfe.jsonl: lossy names would collide in the copy.
            let proj = claude_projects(d).join(PROJ);
            copy(&ctx.fx(CLAUDE_MULTI), &proj.join(raw(b"\xff.jsonl")));
            copy(&ctx.fx(CLAUDE_IMAGE), &proj.join(raw(b"\xfe.jsonl")));
            Case::new("nonutf8-claude-names", d)
            .input(p2o(&claude_projects(d)))
            .expect(Expect { list: Some(0), repair: Some(0), ..Default::default() })
            .check("list-json", sessions_eq(2))
            .check(
                "repair-json",
                Box::new(|_, out| {
                    let mut got: Vec<Vec<u8>> = files_under(out)
                        .iter()
                        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
                        .map(|p| {
                            use std::os::unix::ffi::OsStrExt;
                            p.file_name().unwrap().as_bytes().to_vec()
                        })
                        .collect();
                    got.sort();
                    let want = vec![b"\xfe.jsonl".to_vec(), b"\xff.jsonl".to_vec()];
                    (got == want).then_some(()).ok_or(format!(
                        "copies in --out are {:?}, expected the two names \\xfe.jsonl and \\xff.jsonl",
                        got.iter().map(|g| String::from_utf8_lossy(g).into_owned()).collect::<Vec<_>>()
                    ))
                }),
            )
        }),
    );
    add(
        "nonutf8-legacy-file",
        b(|ctx, d| {
            let l = legacy(ctx, d);
            let md = legacy_msg_dir(&l);
            let src = std::fs::read(md.join(format!("{LEGACY_ASSISTANT}.json"))).unwrap();
            write(&md.join(raw(b"msg_\xff\xfe.json")), &src);
            mkdir(&l.join("storage/part").join(raw(b"msg_\xff")));
            write(
                &l.join("storage/part")
                    .join(raw(b"msg_\xff"))
                    .join(raw(b"prt_\xff.json")),
                b"{\"type\":\"text\"}",
            );
            Case::new("nonutf8-legacy-file", d)
                .input(p2o(&l))
                .session(LEGACY_SID)
        }),
    );
    add(
        "multibyte-title-opencode",
        b(|ctx, d| {
            let p = db(ctx, PLAIN_DB, d, "store");
            let c = sqlite(&p);
            let title = format!("{}🦀{}x", "é".repeat(99), "日本語".repeat(40));
            c.execute("UPDATE session SET title = ?1", [&title])
                .unwrap();
            c.execute("UPDATE part SET data = json_set(data, '$.text', ?1) WHERE json_extract(data, '$.type') = 'text'", [&title]).unwrap();
            drop(c);
            Case::new("multibyte-title-opencode", d)
                .input(p2o(&p))
                .session(PLAIN_SID)
                .expect(Expect {
                    list: Some(0),
                    ..Default::default()
                })
        }),
    );
    add(
        "multibyte-title-claude",
        b(|ctx, d| {
            let f = claude(ctx, CLAUDE_MULTI, d);
            let title = format!("{}🦀{}", "é".repeat(99), "日本語".repeat(40));
            append(
                &f,
                nl(
                    json!({"type":"summary","summary":title,"leafUuid":last_uuid(&f)})
                        .to_string()
                        .into_bytes(),
                )
                .as_slice(),
            );
            append(
                &f,
                nl(
                    json!({"type":"custom-title","customTitle":title,"sessionId":CLAUDE_SID})
                        .to_string()
                        .into_bytes(),
                )
                .as_slice(),
            );
            Case::new("multibyte-title-claude", d)
                .input(p2o(&f))
                .session(CLAUDE_SID)
                .expect(Expect {
                    list: Some(0),
                    ..Default::default()
                })
        }),
    );

    // ---- live-ish databases
    add(
        "wal-uncheckpointed",
        b(|ctx, d| {
            let p = oc_with_wal(ctx, &d.join("store"), 4);
            Case::new("wal-uncheckpointed", d)
                .input(p2o(&p))
                .session(PLAIN_SID)
                .expect(Expect {
                    list: Some(0),
                    ..Default::default()
                })
                .check("list-json", messages_eq(PLAIN_MESSAGES + 4))
        }),
    );
    add(
        "wal-torn",
        b(|ctx, d| {
            let p = oc_with_wal(ctx, &d.join("store"), 40);
            let w = d.join("store/opencode.db-wal");
            let len = std::fs::metadata(&w).unwrap().len();
            std::fs::OpenOptions::new()
                .write(true)
                .open(&w)
                .unwrap()
                .set_len(len - 1500)
                .unwrap();
            Case::new("wal-torn", d)
                .input(p2o(&p))
                .session(PLAIN_SID)
                .expect(Expect {
                    list: Some(0),
                    ..Default::default()
                })
                .check("list-json", messages_ge(PLAIN_MESSAGES))
        }),
    );
    add(
        "wal-garbage-shm",
        b(|ctx, d| {
            let p = oc_with_wal(ctx, &d.join("store"), 4);
            write(&d.join("store/opencode.db-shm"), Rng::new(7).bytes(32768));
            Case::new("wal-garbage-shm", d)
                .input(p2o(&p))
                .session(PLAIN_SID)
                .check("list-json", messages_eq(PLAIN_MESSAGES + 4))
        }),
    );
    add(
        "wal-empty-shm-garbage",
        b(|ctx, d| {
            let p = db(ctx, PLAIN_DB, d, "store");
            write(&d.join("store/opencode.db-wal"), b"");
            write(&d.join("store/opencode.db-shm"), Rng::new(8).bytes(1000));
            Case::new("wal-empty-shm-garbage", d)
                .input(p2o(&p))
                .session(PLAIN_SID)
                .check("list-json", messages_eq(PLAIN_MESSAGES))
        }),
    );
    add(
        "wal-garbage",
        b(|ctx, d| {
            let p = db(ctx, PLAIN_DB, d, "store");
            write(&d.join("store/opencode.db-wal"), Rng::new(9).bytes(70000));
            Case::new("wal-garbage", d)
                .input(p2o(&p))
                .session(PLAIN_SID)
        }),
    );
    add(
        "kilo-wal-uncheckpointed",
        b(|ctx, d| {
            let p = with_wal(ctx, KILO_DB, &d.join("kilo"), KILO_SID, 5);
            let base = count_messages(&ctx.fx(KILO_DB));
            Case::new("kilo-wal-uncheckpointed", d)
                .input(p2o(&p))
                .session(KILO_SID)
                .check("list-json", messages_eq(base + 5))
        }),
    );
    add(
        "hot-journal",
        b(|ctx, d| {
            let p = hot_journal(ctx, &d.join("store"));
            Case::new("hot-journal", d)
                .input(p2o(&p))
                .session(PLAIN_SID)
                .expect(Expect {
                    list: Some(0),
                    ..Default::default()
                })
                .check("list-json", messages_eq(PLAIN_MESSAGES))
                .check("inspect-json", stdout_lacks("HOSTILE"))
                .check("check-json", stdout_lacks("unreadable"))
        }),
    );
    add(
        "journal-garbage",
        b(|ctx, d| {
            let p = d.join("store/opencode.db");
            copy(&ctx.fx(PLAIN_DB), &p);
            let c = sqlite(&p);
            let _: String = c
                .query_row("PRAGMA journal_mode=DELETE", [], |r| r.get(0))
                .unwrap();
            drop(c);
            write(
                &d.join("store/opencode.db-journal"),
                Rng::new(10).bytes(9000),
            );
            Case::new("journal-garbage", d)
                .input(p2o(&p))
                .session(PLAIN_SID)
        }),
    );

    // ---- FIFOs and devices
    add(
        "fifo-json-in-legacy-tree",
        b(|ctx, d| {
            let l = legacy(ctx, d);
            mkfifo(&legacy_msg_dir(&l).join("msg_zzfifo.json"));
            mkfifo(
                &l.join("storage/part")
                    .join(LEGACY_ASSISTANT)
                    .join("prt_zzfifo.json"),
            );
            Case::new("fifo-json-in-legacy-tree", d)
                .input(p2o(&l))
                .session(LEGACY_SID)
                .bad_item("msg_zzfifo.json")
                .bad_item("prt_zzfifo.json")
        }),
    );
    add(
        "fifo-as-wal",
        b(|ctx, d| {
            let p = db(ctx, PLAIN_DB, d, "store");
            mkfifo(&d.join("store/opencode.db-wal"));
            Case::new("fifo-as-wal", d)
                .input(p2o(&p))
                .session(PLAIN_SID)
                .bad_item("opencode.db-wal")
        }),
    );
    add(
        "fifo-as-shm-and-journal",
        b(|ctx, d| {
            let p = db(ctx, PLAIN_DB, d, "store");
            mkfifo(&d.join("store/opencode.db-shm"));
            mkfifo(&d.join("store/opencode.db-journal"));
            Case::new("fifo-as-shm-and-journal", d)
                .input(p2o(&p))
                .session(PLAIN_SID)
        }),
    );
    add(
        "fifo-jsonl-beside-sessions",
        b(|ctx, d| {
            let f = claude(ctx, CLAUDE_MULTI, d);
            mkfifo(
                &f.parent()
                    .unwrap()
                    .join("deadbeef-0000-4000-8000-00000000fifo.jsonl"),
            );
            mkfifo(&d.join(
                "claude/projects/sessions/2026/01/01/rollout-2026-01-01T00-00-00-fifo.jsonl",
            ));
            Case::new("fifo-jsonl-beside-sessions", d)
                .input(p2o(&claude_projects(d)))
                .session(CLAUDE_SID)
                .bad_item("00000000fifo.jsonl")
        }),
    );
    add(
        "fifo-as-input",
        b(|_ctx, d| {
            let a = d.join("fifos/opencode.db");
            let bb = d.join("fifos/x.jsonl");
            let c = d.join(
                "fifos/rollout-2026-01-01T00-00-00-aaaaaaaa-0000-4000-8000-000000000000.jsonl",
            );
            for p in [&a, &bb, &c] {
                mkfifo(p);
            }
            Case::new("fifo-as-input", d)
                .input(p2o(&a))
                .input(p2o(&bb))
                .input(p2o(&c))
                .expect(Expect::all(2))
                .bad_path("opencode.db")
                .bad_path("x.jsonl")
                .bad_path("rollout-2026-01-01T00-00-00-aaaaaaaa")
        }),
    );
    add(
        "legacy-json-symlink-dev-zero",
        b(|ctx, d| {
            let l = legacy(ctx, d);
            symlink(
                "/dev/zero",
                &l.join("storage/part")
                    .join(LEGACY_ASSISTANT)
                    .join("prt_zzzero.json"),
            );
            symlink("/dev/zero", &legacy_msg_dir(&l).join("msg_zzzero.json"));
            Case::new("legacy-json-symlink-dev-zero", d)
                .input(p2o(&l))
                .session(LEGACY_SID)
                .bad_item("prt_zzzero.json")
                .bad_item("msg_zzzero.json")
        }),
    );
    add(
        "models-json-dev-zero",
        b(|ctx, d| {
            let p = db(ctx, WEDGED_DB, d, "store");
            Case::new("models-json-dev-zero", d)
                .input(p2o(&p))
                .session(WEDGED_SID)
                .flag("--models-json")
                .flag("/dev/zero")
                .flag("--model")
                .flag("anthropic/claude-sonnet-4-5")
                .bad_item("/dev/zero")
        }),
    );
    add(
        "models-json-fifo",
        b(|ctx, d| {
            let p = db(ctx, WEDGED_DB, d, "store");
            let fifo = d.join("models.json");
            mkfifo(&fifo);
            let mut c = Case::new("models-json-fifo", d)
                .input(p2o(&p))
                .session(WEDGED_SID)
                .flag("--model")
                .flag("anthropic/claude-sonnet-4-5")
                .bad_item("models.json");
            c.flags.push("--models-json".into());
            c.flags.push(p2o(&fifo));
            c
        }),
    );
    add(
        "device-links-as-inputs",
        b(|_ctx, d| {
            let dl = d.join("devlinks");
            symlink("/dev/null", &dl.join("opencode.db"));
            symlink("/dev/zero", &dl.join("kilo.db"));
            symlink(
                "/dev/zero",
                &dl.join("0acd6738-1c9b-460c-ba5f-00000000zero.jsonl"),
            );
            symlink(
                "/dev/zero",
                &dl.join("rollout-2026-01-01T00-00-00-bbbbbbbb-0000-4000-8000-000000000000.jsonl"),
            );
            Case::new("device-links-as-inputs", d)
                .input(p2o(&dl.join("opencode.db")))
                .input(p2o(&dl.join("kilo.db")))
                .input(p2o(&dl.join("0acd6738-1c9b-460c-ba5f-00000000zero.jsonl")))
                .input(p2o(&dl.join(
                    "rollout-2026-01-01T00-00-00-bbbbbbbb-0000-4000-8000-000000000000.jsonl",
                )))
                .expect(Expect::all(2))
                .bad_path("opencode.db")
                .bad_path("kilo.db")
                .bad_path("00000000zero.jsonl")
                .bad_path("rollout-2026-01-01T00-00-00-bbbbbbbb")
        }),
    );
    add(
        "device-links-in-walked-folder",
        b(|ctx, d| {
            let w = d.join("walk");
            db(ctx, PLAIN_DB, &w, "good");
            symlink("/dev/zero", &w.join("zero/kilo.db"));
            symlink("/dev/null", &w.join("null/opencode.db"));
            symlink(
                "/dev/zero",
                &w.join("proj/zzzzzzzz-0000-4000-8000-000000000000.jsonl"),
            );
            symlink("/dev/zero", &w.join("sessions/2026/01/01/rollout-2026-01-01T00-00-00-cccccccc-0000-4000-8000-000000000000.jsonl"));
            Case::new("device-links-in-walked-folder", d)
                .input(p2o(&w))
                .session(PLAIN_SID)
        }),
    );
    add(
        "subagent-dev-zero-and-fifo",
        b(|ctx, d| {
            let f = claude(ctx, CLAUDE_MULTI, d);
            let sub = f.parent().unwrap().join(CLAUDE_SID).join("subagents");
            symlink("/dev/zero", &sub.join("agent-zzzero.jsonl"));
            mkfifo(&sub.join("agent-zzfifo.jsonl"));
            Case::new("subagent-dev-zero-and-fifo", d)
                .input(p2o(&claude_projects(d)))
                .session(CLAUDE_SID)
                .bad_item("agent-zzzero.jsonl")
                .bad_item("agent-zzfifo.jsonl")
        }),
    );

    // ---- parent cycles
    add(
        "claude-parent-cycle",
        b(|ctx, d| {
            let f = claude(ctx, CLAUDE_MULTI, d);
            let (a, bb, c) = (uuid(0xc1, 1), uuid(0xc1, 2), uuid(0xc1, 3));
            for (u, p, user) in [(&a, &c, true), (&bb, &a, false), (&c, &bb, true)] {
                append(
                    &f,
                    &nl(cl_line(u, Some(p), user, "cycle", CLAUDE_SID, 1)
                        .to_string()
                        .into_bytes()),
                );
            }
            Case::new("claude-parent-cycle", d)
                .input(p2o(&f))
                .session(CLAUDE_SID)
        }),
    );
    add(
        "claude-self-parent",
        b(|ctx, d| {
            let f = claude(ctx, CLAUDE_MULTI, d);
            let a = uuid(0xc2, 1);
            append(
                &f,
                &nl(cl_line(&a, Some(&a), true, "self", CLAUDE_SID, 1)
                    .to_string()
                    .into_bytes()),
            );
            Case::new("claude-self-parent", d)
                .input(p2o(&f))
                .session(CLAUDE_SID)
        }),
    );
    add(
        "claude-logical-parent-self",
        b(|ctx, d| {
            // A compact_boundary whose logicalParentUuid and preserved segment
            // name the boundary itself.
            let f = claude(ctx, CLAUDE_DOUBLE, d);
            let s = std::fs::read_to_string(&f).unwrap();
            let s = s.replace(
                "b721d162-9695-4faf-8eb1-a9e20667e7eb",
                "ea00730b-e30d-4340-94b9-47ba2dcb02d6",
            );
            write(&f, s);
            Case::new("claude-logical-parent-self", d)
                .input(p2o(&f))
                .session(CLAUDE_DOUBLE_SID)
        }),
    );
    add(
        "opencode-parent-cycle",
        b(|ctx, d| {
            let p = db(ctx, PLAIN_DB, d, "store");
            let c = sqlite(&p);
            let t: i64 = c
                .query_row("SELECT max(time_created) FROM message", [], |r| r.get(0))
                .unwrap();
            for (id, parent, dt) in [
                ("msg_zzcyc1", "msg_zzcyc2", 1),
                ("msg_zzcyc2", "msg_zzcyc1", 2),
            ] {
                let data = json!({"parentID":parent,"role":"assistant","mode":"build","agent":"build","path":{"cwd":"/h","root":"/h"},"cost":0,"tokens":{"total":20,"input":10,"output":10,"reasoning":0,"cache":{"write":0,"read":0}},"modelID":"stub-small","providerID":"stub","time":{"created":t+dt,"completed":t+dt},"finish":"stop"});
                c.execute("INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?1, ?2, ?3, ?3, ?4)", rusqlite::params![id, PLAIN_SID, t + dt, data.to_string()]).unwrap();
            }
            drop(c);
            Case::new("opencode-parent-cycle", d)
                .input(p2o(&p))
                .session(PLAIN_SID)
        }),
    );
    add(
        "opencode-self-parent",
        b(|ctx, d| {
            let p = db(ctx, PLAIN_DB, d, "store");
            let c = sqlite(&p);
            c.execute("UPDATE message SET data = json_set(data, '$.parentID', id) WHERE json_extract(data, '$.role') = 'assistant'", []).unwrap();
            c.execute("UPDATE message SET data = json_set(data, '$.parentID', id) WHERE id = (SELECT id FROM message WHERE json_extract(data, '$.role') = 'user' ORDER BY id LIMIT 1)", []).unwrap();
            drop(c);
            Case::new("opencode-self-parent", d)
                .input(p2o(&p))
                .session(PLAIN_SID)
        }),
    );
    add(
        "legacy-parent-cycle",
        b(|ctx, d| {
            let l = legacy(ctx, d);
            let md = legacy_msg_dir(&l);
            let ids: Vec<String> = std::fs::read_dir(&md)
                .unwrap()
                .flatten()
                .map(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .trim_end_matches(".json")
                        .to_string()
                })
                .collect();
            let mut ids = ids;
            ids.sort();
            // Every message's parent is the next one, the last's the first.
            for (i, id) in ids.iter().enumerate() {
                let p = md.join(format!("{id}.json"));
                let mut v: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
                v["parentID"] = json!(ids[(i + 1) % ids.len()]);
                write(&p, v.to_string());
            }
            Case::new("legacy-parent-cycle", d)
                .input(p2o(&l))
                .session(LEGACY_SID)
        }),
    );

    // ---- symlinks
    add(
        "symlinked-store-folders",
        b(|ctx, d| {
            db(ctx, PLAIN_DB, &d.join("real"), "opencode");
            let f = claude(ctx, CLAUDE_MULTI, &d.join("real"));
            let _ = f;
            copy_dir(&ctx.fx(LEGACY), &d.join("real/legacy"));
            let data = d.join("data");
            symlink("../real/opencode", &data.join("oc"));
            symlink("../real/claude", &data.join("cl"));
            symlink("../real/legacy", &data.join("lg"));
            Case::new("symlinked-store-folders", d)
                .input(p2o(&data.join("oc")))
                .input(p2o(&data.join("cl")))
                .input(p2o(&data.join("lg")))
                .session(PLAIN_SID)
                .expect(Expect {
                    list: Some(0),
                    ..Default::default()
                })
                .check("list-json", sessions_eq(3))
        }),
    );
    add(
        "symlink-loops-in-walked-folder",
        b(|ctx, d| {
            let w = d.join("walk");
            db(ctx, PLAIN_DB, &w, "a");
            symlink("..", &w.join("a/up"));
            symlink(".", &w.join("self"));
            symlink("../b", &w.join("b/again"));
            symlink("loop2", &w.join("loop1"));
            symlink("loop1", &w.join("loop2"));
            symlink("/nonexistent/target", &w.join("dangling"));
            symlink(d, &w.join("to-case-root"));
            // Exit code not pinned (a loop may be reported as an I/O
            // error); the store beside the loops must still be read.
            Case::new("symlink-loops-in-walked-folder", d)
                .input(p2o(&w))
                .session(PLAIN_SID)
                .check("list-json", sessions_eq(1))
        }),
    );
    add(
        "symlink-loops-claude-projects",
        b(|ctx, d| {
            let f = claude(ctx, CLAUDE_MULTI, d);
            let proj = f.parent().unwrap().to_path_buf();
            symlink("..", &proj.join("up"));
            symlink("../../projects", &claude_projects(d).join("again"));
            symlink(".", &proj.join(CLAUDE_SID).join("subagents/self"));
            Case::new("symlink-loops-claude-projects", d)
                .input(p2o(&claude_projects(d)))
                .session(CLAUDE_SID)
                .check("list-json", sessions_eq(1))
        }),
    );
    add(
        "symlink-loops-legacy-and-codex",
        b(|ctx, d| {
            let l = legacy(ctx, d);
            symlink("..", &l.join("storage/part/loop"));
            symlink("../message", &l.join("storage/message/again"));
            let f = codex(ctx, CODEX_SMALL, d, CODEX_SMALL_NAME);
            symlink("../..", &f.parent().unwrap().join("up"));
            Case::new("symlink-loops-legacy-and-codex", d)
                .input(p2o(&l))
                .input(p2o(&d.join("codex")))
                .session(LEGACY_SID)
        }),
    );

    // ---- budget flags
    for (name, flags) in [
        ("headroom-nan", vec!["--headroom", "nan"]),
        ("headroom-minus-5", vec!["--headroom", "-5"]),
        ("headroom-1e308", vec!["--headroom", "1e308"]),
        ("headroom-inf", vec!["--headroom", "inf"]),
        (
            "budget-zero",
            vec![
                "--context",
                "0",
                "--max-output",
                "0",
                "--input-limit",
                "0",
                "--max-request-bytes",
                "0",
            ],
        ),
        (
            "budget-u64-max",
            vec![
                "--context",
                "18446744073709551615",
                "--max-output",
                "18446744073709551615",
                "--input-limit",
                "18446744073709551615",
                "--max-request-bytes",
                "18446744073709551615",
            ],
        ),
        (
            "budget-output-over-context",
            vec![
                "--context",
                "1000",
                "--max-output",
                "5000",
                "--max-request-bytes",
                "1",
            ],
        ),
    ] {
        add(
            name,
            b(move |ctx, d| {
                let p = db(ctx, WEDGED_DB, d, "store");
                let mut c = Case::new(name, d).input(p2o(&p)).session(WEDGED_SID);
                c.flags = flags.iter().map(OsString::from).collect();
                c
            }),
        );
    }

    // ---- broken databases
    add(
        "db-truncated",
        b(|ctx, d| {
            let p = d.join("trunc-db/opencode.db");
            let bytes = std::fs::read(ctx.fx(PLAIN_DB)).unwrap();
            write(&p, &bytes[..bytes.len() / 2]);
            Case::new("db-truncated", d)
                .input(p2o(&p))
                .session(PLAIN_SID)
                .bad_item("trunc-db")
        }),
    );
    add(
        "db-header-only",
        b(|ctx, d| {
            let p = d.join("hdr-db/opencode.db");
            let bytes = std::fs::read(ctx.fx(PLAIN_DB)).unwrap();
            write(&p, &bytes[..100]);
            Case::new("db-header-only", d)
                .input(p2o(&p))
                .expect(Expect::all(2))
                .bad_path("hdr-db")
        }),
    );
    add(
        "db-random-bytes",
        b(|_ctx, d| {
            let p = d.join("rand-db/opencode.db");
            write(&p, Rng::new(1).bytes(65536));
            let k = d.join("rand-db/kilo.db");
            write(&k, Rng::new(2).bytes(4096));
            Case::new("db-random-bytes", d)
                .input(p2o(&p))
                .input(p2o(&k))
                .expect(Expect::all(2))
                .bad_path("rand-db/opencode.db")
                .bad_path("rand-db/kilo.db")
        }),
    );
    add(
        "db-sqlite-magic-then-random",
        b(|_ctx, d| {
            let p = d.join("magic-db/opencode.db");
            let mut v = b"SQLite format 3\0".to_vec();
            v.extend(Rng::new(3).bytes(16384));
            write(&p, v);
            Case::new("db-sqlite-magic-then-random", d)
                .input(p2o(&p))
                .expect(Expect::all(2))
                .bad_path("magic-db")
        }),
    );
    add(
        "db-corrupt-page",
        b(|ctx, d| {
            let p = d.join("corrupt-db/opencode.db");
            copy(&ctx.fx(PLAIN_DB), &p);
            let mut bytes = std::fs::read(&p).unwrap();
            let mut r = Rng::new(4);
            // Scribble over every page but the first (b-tree pages of every table).
            for page in 1..bytes.len() / 4096 {
                let at = page * 4096 + 8;
                let junk = r.bytes(64);
                bytes[at..at + 64].copy_from_slice(&junk);
            }
            write(&p, bytes);
            Case::new("db-corrupt-page", d)
                .input(p2o(&p))
                .session(PLAIN_SID)
                .bad_item("corrupt-db")
        }),
    );
    add(
        "db-zero-length",
        b(|_ctx, d| {
            let p = d.join("empty-db/opencode.db");
            write(&p, b"");
            Case::new("db-zero-length", d).input(p2o(&p))
        }),
    );
    add(
        "db-wrong-schema",
        b(|_ctx, d| {
            let p = d.join("other-db/opencode.db");
            mkdir(p.parent().unwrap());
            let c = sqlite(&p);
            c.execute_batch(
                "CREATE TABLE foo (x); INSERT INTO foo VALUES (1); CREATE TABLE message (x, y);",
            )
            .unwrap();
            drop(c);
            Case::new("db-wrong-schema", d)
                .input(p2o(&p))
                .expect(Expect::all(2))
                .bad_path("other-db")
        }),
    );
    add(
        "db-missing-column",
        b(|ctx, d| {
            let p = db(ctx, PLAIN_DB, d, "nocol-db");
            let c = sqlite(&p);
            c.execute_batch("ALTER TABLE message DROP COLUMN data;")
                .unwrap();
            drop(c);
            Case::new("db-missing-column", d)
                .input(p2o(&p))
                .bad_item("nocol-db")
        }),
    );
    add(
        "db-missing-part-column-and-table",
        b(|ctx, d| {
            let p = db(ctx, PLAIN_DB, d, "nocol-db");
            let c = sqlite(&p);
            c.execute_batch(
                "PRAGMA foreign_keys=OFF;
                 CREATE TABLE zz_part (id, session_id, time_created, time_updated, data);
                 INSERT INTO zz_part SELECT id, session_id, time_created, time_updated, data FROM part;
                 DROP TABLE part;
                 ALTER TABLE zz_part RENAME TO part;",
            )
            .unwrap();
            drop(c);
            let p2 = db(ctx, PLAIN_DB, d, "notable-db");
            let c = sqlite(&p2);
            c.execute_batch("PRAGMA foreign_keys=OFF; DROP TABLE part; DROP TABLE session;")
                .unwrap();
            drop(c);
            Case::new("db-missing-part-column-and-table", d)
                .input(p2o(&p))
                .input(p2o(&p2))
                .bad_item("nocol-db")
                .bad_item("notable-db")
        }),
    );
    add(
        "db-null-ids",
        b(|ctx, d| {
            let p = db(ctx, PLAIN_DB, d, "null-db");
            let c = sqlite(&p);
            loosen(&c, "message");
            loosen(&c, "part");
            loosen(&c, "session");
            c.execute_batch(&format!(
            "INSERT INTO message VALUES (NULL, '{PLAIN_SID}', 1795344450000, 1795344450000, '{{\"role\":\"user\",\"time\":{{\"created\":1795344450000}}}}');
             INSERT INTO message VALUES ('msg_zznullsession', NULL, 1795344450001, 1795344450001, '{{\"role\":\"user\",\"time\":{{\"created\":1795344450001}}}}');
             INSERT INTO message VALUES ('msg_zznulltime', '{PLAIN_SID}', NULL, NULL, '{{\"role\":\"user\",\"time\":{{\"created\":1795344450002}}}}');
             INSERT INTO message VALUES ('msg_zznulldata', '{PLAIN_SID}', 1795344450003, 1795344450003, NULL);
             INSERT INTO part VALUES (NULL, NULL, NULL, NULL, NULL, NULL);
             INSERT INTO part VALUES ('prt_zznullmsg', NULL, '{PLAIN_SID}', 1, 1, '{{\"type\":\"text\",\"text\":\"x\"}}');
             INSERT INTO part VALUES ('prt_zznulldata', 'msg_zznulldata', '{PLAIN_SID}', 1, 1, NULL);
             INSERT INTO session (id, title) VALUES (NULL, NULL);"
        ))
        .unwrap();
            drop(c);
            Case::new("db-null-ids", d)
                .input(p2o(&p))
                .session(PLAIN_SID)
                .bad_item("null-db")
        }),
    );
    add(
        "db-column-types",
        b(|ctx, d| {
            let p = db(ctx, PLAIN_DB, d, "types-db");
            let c = sqlite(&p);
            loosen(&c, "message");
            loosen(&c, "part");
            c.execute_batch(&format!(
            "INSERT INTO message VALUES ('msg_zzint', '{PLAIN_SID}', 1795344450000, 1795344450000, 12345);
             INSERT INTO message VALUES ('msg_zzreal', '{PLAIN_SID}', 1795344450001, 1795344450001, 3.5);
             INSERT INTO message VALUES ('msg_zztexttime', '{PLAIN_SID}', 'yesterday', 'x', '{{\"role\":\"user\",\"time\":{{\"created\":\"yesterday\"}}}}');
             INSERT INTO message VALUES (42, '{PLAIN_SID}', 1795344450003, 1795344450003, '{{\"role\":\"user\",\"time\":{{\"created\":1795344450003}}}}');
             INSERT INTO message VALUES ('msg_zzbigtime', '{PLAIN_SID}', 9223372036854775807, -9223372036854775808, '{{\"role\":\"user\",\"time\":{{\"created\":9223372036854775807}}}}');
             INSERT INTO message VALUES ('msg_zzrealtime', '{PLAIN_SID}', 1e300, -1e300, '{{\"role\":\"user\",\"time\":{{\"created\":1e300}}}}');
             INSERT INTO part VALUES ('prt_zzint', 'msg_zzint', '{PLAIN_SID}', 1, 1, 7);
             INSERT INTO part VALUES (99, 42, 7, 'x', 'y', '{{\"type\":\"text\",\"text\":\"int ids\"}}');"
        ))
        .unwrap();
            drop(c);
            Case::new("db-column-types", d)
                .input(p2o(&p))
                .session(PLAIN_SID)
                .bad_item("types-db")
        }),
    );
    add(
        "db-blob-data",
        b(|ctx, d| {
            let p = db(ctx, PLAIN_DB, d, "blob-db");
            let c = sqlite(&p);
            c.execute_batch(&format!(
            "UPDATE part SET data = X'00FFFE7B2274797065223A2274657874227D' WHERE id = (SELECT id FROM part ORDER BY id LIMIT 1);
             UPDATE part SET data = CAST(data AS BLOB) WHERE id = (SELECT id FROM part ORDER BY id LIMIT 1 OFFSET 1);
             UPDATE message SET data = CAST(data AS BLOB) WHERE id = (SELECT id FROM message ORDER BY id LIMIT 1);
             INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) SELECT 'prt_zzbigblob', id, '{PLAIN_SID}', 1, 1, zeroblob(3000000) FROM message ORDER BY id LIMIT 1;"
        ))
        .unwrap();
            drop(c);
            Case::new("db-blob-data", d)
                .input(p2o(&p))
                .session(PLAIN_SID)
                .bad_item("blob-db")
        }),
    );
    add(
        "db-nul-and-invalid-utf8-rows",
        b(|ctx, d| {
            let p = db(ctx, PLAIN_DB, d, "bytes-db");
            let c = sqlite(&p);
            // TEXT values holding a raw NUL and invalid UTF-8 (cast from blobs).
            c.execute_batch(
            "PRAGMA foreign_keys=OFF;
             UPDATE part SET data = CAST(X'7B2274797065223A2274657874222C2274657874223A2261006222007D' AS TEXT) WHERE id = (SELECT id FROM part ORDER BY id LIMIT 1);
             UPDATE part SET data = CAST(X'7B2274797065223A2274657874222C2274657874223A22FFFEC328227D' AS TEXT) WHERE id = (SELECT id FROM part ORDER BY id LIMIT 1 OFFSET 1);
             UPDATE message SET id = CAST(X'6D73675FFF00' AS TEXT) WHERE id = (SELECT id FROM message ORDER BY id DESC LIMIT 1);
             UPDATE session SET title = CAST(X'54FF00C3' AS TEXT);",
        )
        .unwrap();
            drop(c);
            Case::new("db-nul-and-invalid-utf8-rows", d)
                .input(p2o(&p))
                .session(PLAIN_SID)
                .bad_item("bytes-db")
        }),
    );
    add(
        "db-duplicate-ids",
        b(|ctx, d| {
            let p = db(ctx, PLAIN_DB, d, "dup-db");
            let c = sqlite(&p);
            loosen(&c, "message");
            loosen(&c, "part");
            c.execute_batch(
            "INSERT INTO message SELECT id, session_id, time_created + 1, time_updated, data FROM message;
             INSERT INTO part SELECT id, message_id, session_id, time_created, time_updated, data FROM part;",
        )
        .unwrap();
            drop(c);
            Case::new("db-duplicate-ids", d)
                .input(p2o(&p))
                .session(PLAIN_SID)
                .expect(Expect {
                    check: Some(1),
                    ..Default::default()
                })
                .check("check-json", stdout_has("duplicate-id"))
        }),
    );
    add(
        "db-json-shapes-in-rows",
        b(|ctx, d| {
            let p = db(ctx, PLAIN_DB, d, "shapes-db");
            let c = sqlite(&p);
            let (mid, valid): (String, String) = c
                .query_row(
                    "SELECT message_id, data FROM part ORDER BY id LIMIT 1",
                    [],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .unwrap();
            for (i, (s, _)) in SHAPES.iter().enumerate() {
                if s.starts_with("deep") {
                    continue;
                }
                let bytes = shape(s, valid.as_bytes());
                c.execute(
                "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?1, ?2, ?3, 1, 1, CAST(?4 AS TEXT))",
                rusqlite::params![format!("prt_zzshape{i:02}"), mid, PLAIN_SID, bytes],
            )
            .unwrap();
            }
            drop(c);
            Case::new("db-json-shapes-in-rows", d)
                .input(p2o(&p))
                .session(PLAIN_SID)
                .bad_item("prt_zzshape00")
        }),
    );
    add(
        "db-deep-nesting-rows",
        b(|ctx, d| {
            let p = db(ctx, PLAIN_DB, d, "deep-db");
            let c = sqlite(&p);
            let mid: String = c
                .query_row("SELECT id FROM message ORDER BY id LIMIT 1", [], |r| {
                    r.get(0)
                })
                .unwrap();
            c.execute(
            "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES ('prt_zzdeeparray', ?1, ?2, 1, 1, ?3)",
            rusqlite::params![mid, PLAIN_SID, String::from_utf8(shape("deep-array", b"{}")).unwrap()],
        )
        .unwrap();
            c.execute(
            "UPDATE message SET data = ?1 WHERE id = (SELECT id FROM message ORDER BY id DESC LIMIT 1)",
            [String::from_utf8(shape("deep-object", b"{}")).unwrap()],
        )
        .unwrap();
            drop(c);
            Case::new("db-deep-nesting-rows", d)
                .input(p2o(&p))
                .session(PLAIN_SID)
                .bad_item("prt_zzdeeparray")
        }),
    );
    add(
        "huge-usage-opencode",
        b(|ctx, d| {
            let p = db(ctx, PLAIN_DB, d, "store");
            let c = sqlite(&p);
            let rows: Vec<(String, String)> = c
                .prepare("SELECT id, data FROM message")
                .unwrap()
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .unwrap()
                .flatten()
                .collect();
            for (id, data) in rows {
                let mut v: Value = serde_json::from_str(&data).unwrap();
                if v["role"] == "assistant" {
                    let m = u64::MAX;
                    v["tokens"] = json!({"total":m,"input":m,"output":m,"reasoning":m,"cache":{"write":m,"read":m}});
                    v["cost"] = json!(1e308);
                    c.execute(
                        "UPDATE message SET data = ?1 WHERE id = ?2",
                        [v.to_string(), id],
                    )
                    .unwrap();
                }
            }
            drop(c);
            Case::new("huge-usage-opencode", d)
                .input(p2o(&p))
                .session(PLAIN_SID)
        }),
    );

    // ---- invalid JSON of every shape: Claude lines, legacy files
    for &(s, named) in SHAPES {
        let name = format!("claude-json-{s}");
        add(
            &name.clone(),
            b(move |ctx, d| {
                let f = claude(ctx, CLAUDE_MULTI, d);
                let mut ls = lines(&f);
                let valid = line_of(&f, 4);
                ls.insert(5, nl(shape(s, &valid)));
                write_lines(&f, &ls);
                let c = Case::new(&name, d).input(p2o(&f)).session(CLAUDE_SID);
                if named {
                    c.bad_item(CLAUDE_SID)
                } else {
                    c
                }
            }),
        );
    }
    add(
        "claude-torn-tail",
        b(|ctx, d| {
            let f = claude(ctx, CLAUDE_MULTI, d);
            let valid = line_of(&f, 4);
            append(&f, &valid[..valid.len() / 2]);
            Case::new("claude-torn-tail", d)
                .input(p2o(&f))
                .session(CLAUDE_SID)
                .expect(Expect {
                    check: Some(1),
                    ..Default::default()
                })
                .bad_item(CLAUDE_SID)
        }),
    );
    add(
        "claude-blank-and-crlf-lines",
        b(|ctx, d| {
            let f = claude(ctx, CLAUDE_MULTI, d);
            let mut ls = lines(&f);
            ls.insert(3, b"\n".to_vec());
            ls.insert(4, b"   \t  \n".to_vec());
            let l = ls[6].clone();
            ls[6] = [l.strip_suffix(b"\n").unwrap_or(&l), b"\r\n"].concat();
            write_lines(&f, &ls);
            Case::new("claude-blank-and-crlf-lines", d)
                .input(p2o(&f))
                .session(CLAUDE_SID)
        }),
    );
    add(
        "claude-duplicate-uuids",
        b(|ctx, d| {
            let f = claude(ctx, CLAUDE_MULTI, d);
            let mut ls = lines(&f);
            let dup = ls[2].clone();
            for _ in 0..2000 {
                ls.push(dup.clone());
            }
            write_lines(&f, &ls);
            Case::new("claude-duplicate-uuids", d)
                .input(p2o(&f))
                .session(CLAUDE_SID)
        }),
    );
    add(
        "huge-usage-claude",
        b(|ctx, d| {
            let f = claude(ctx, CLAUDE_MULTI, d);
            let ls: Vec<Vec<u8>> = lines(&f)
            .into_iter()
            .map(|l| {
                let mut v: Value = match serde_json::from_slice(&l) {
                    Ok(v) => v,
                    Err(_) => return l,
                };
                if v["message"]["usage"].is_object() {
                    let m = u64::MAX;
                    v["message"]["usage"] = json!({"input_tokens":m,"output_tokens":m,"cache_creation_input_tokens":m,"cache_read_input_tokens":m});
                    nl(v.to_string().into_bytes())
                } else {
                    l
                }
            })
            .collect();
            write_lines(&f, &ls);
            Case::new("huge-usage-claude", d)
                .input(p2o(&f))
                .session(CLAUDE_SID)
        }),
    );
    for &(s, named) in SHAPES {
        let name = format!("legacy-json-{s}");
        add(
            &name.clone(),
            b(move |ctx, d| {
                let l = legacy(ctx, d);
                let md = legacy_msg_dir(&l);
                let mut v: Value = serde_json::from_slice(
                    &std::fs::read(md.join(format!("{LEGACY_ASSISTANT}.json"))).unwrap(),
                )
                .unwrap();
                v["id"] = json!("msg_zzhostile");
                write(
                    &md.join("msg_zzhostile.json"),
                    shape(s, v.to_string().as_bytes()),
                );
                let c = Case::new(&name, d).input(p2o(&l)).session(LEGACY_SID);
                if named || s == "empty" {
                    c.bad_item("msg_zzhostile")
                } else {
                    c
                }
            }),
        );
    }
    add(
        "legacy-json-session-and-part-shapes",
        b(|ctx, d| {
            let l = legacy(ctx, d);
            let sess = walkdir::WalkDir::new(l.join("storage/session"))
                .into_iter()
                .flatten()
                .find(|e| e.file_type().is_file())
                .unwrap()
                .into_path();
            write(&sess, b"[\"not a session\"]");
            write(
                &l.join("storage/part")
                    .join(LEGACY_ASSISTANT)
                    .join("prt_zztrunc.json"),
                b"{\"id\":\"prt_zztrunc\",\"type\":\"te",
            );
            write(&l.join("storage/project/zz.json"), b"\xff\xfe garbage");
            Case::new("legacy-json-session-and-part-shapes", d)
                .input(p2o(&l))
                .bad_item("prt_zztrunc")
        }),
    );
    add(
        "legacy-duplicate-ids",
        b(|ctx, d| {
            let l = legacy(ctx, d);
            let md = legacy_msg_dir(&l);
            let src = std::fs::read(md.join(format!("{LEGACY_ASSISTANT}.json"))).unwrap();
            for i in 0..3 {
                write(&md.join(format!("msg_zzdup{i}.json")), &src);
            }
            Case::new("legacy-duplicate-ids", d)
                .input(p2o(&l))
                .session(LEGACY_SID)
        }),
    );
    add(
        "huge-usage-legacy",
        b(|ctx, d| {
            let l = legacy(ctx, d);
            for e in std::fs::read_dir(legacy_msg_dir(&l)).unwrap().flatten() {
                let mut v: Value =
                    serde_json::from_slice(&std::fs::read(e.path()).unwrap()).unwrap();
                if v["role"] == "assistant" {
                    let m = u64::MAX;
                    v["tokens"] =
                        json!({"input":m,"output":m,"reasoning":m,"cache":{"read":m,"write":m}});
                    write(&e.path(), v.to_string());
                }
            }
            Case::new("huge-usage-legacy", d)
                .input(p2o(&l))
                .session(LEGACY_SID)
        }),
    );

    // ---- Codex lines
    add(
        "codex-json-shapes",
        b(|ctx, d| {
            let f = codex(ctx, CODEX_SMALL, d, CODEX_SMALL_NAME);
            let mut ls = lines(&f);
            let valid = line_of(&f, 10);
            for &(s, _) in SHAPES.iter().rev() {
                if !s.starts_with("deep") {
                    ls.insert(20, nl(shape(s, &valid)));
                }
            }
            write_lines(&f, &ls);
            append(&f, &valid[..valid.len() / 2]);
            Case::new("codex-json-shapes", d)
                .input(p2o(&f))
                .session(CODEX_SID)
                .bad_item("rollout-2026-02-23T20-34-25")
        }),
    );
    add(
        "codex-deep-nesting",
        b(|ctx, d| {
            let f = codex(ctx, CODEX_SMALL, d, CODEX_SMALL_NAME);
            let mut ls = lines(&f);
            ls.insert(12, nl(shape("deep-array", b"{}")));
            ls.insert(13, nl(shape("deep-object", b"{}")));
            let deep_payload = [
            b"{\"timestamp\":\"2026-02-23T19:34:26.099Z\",\"type\":\"response_item\",\"payload\":".to_vec(),
            shape("deep-array", b"{}"),
            b"}".to_vec(),
        ]
        .concat();
            ls.insert(14, nl(deep_payload));
            write_lines(&f, &ls);
            Case::new("codex-deep-nesting", d)
                .input(p2o(&f))
                .session(CODEX_SID)
                .bad_item("rollout-2026-02-23T20-34-25")
        }),
    );
    add(
        "codex-first-line-garbage",
        b(|ctx, d| {
            let f = codex(ctx, CODEX_SMALL, d, CODEX_SMALL_NAME);
            let mut ls = lines(&f);
            ls[0] = b"\x00\xff garbage first line\n".to_vec();
            write_lines(&f, &ls);
            Case::new("codex-first-line-garbage", d)
                .input(p2o(&f))
                .bad_item("rollout-2026-02-23T20-34-25")
        }),
    );
    add(
        "huge-usage-codex",
        b(|ctx, d| {
            let f = codex(ctx, CODEX_SMALL, d, CODEX_SMALL_NAME);
            let m = u64::MAX;
            append(&f, &nl(cx_tokens(m, m, m, 1).to_string().into_bytes()));
            append(&f, &nl(cx_msg(false, "after", 2).to_string().into_bytes()));
            append(&f, &nl(cx_tokens(m - 1, m, m, 3).to_string().into_bytes()));
            Case::new("huge-usage-codex", d)
                .input(p2o(&f))
                .session(CODEX_SID)
        }),
    );

    // ---- empty, unrelated, unreadable, missing
    add(
        "empty-file-inputs",
        b(|_ctx, d| {
            write(&d.join("e/empty.jsonl"), b"");
            write(&d.join("e2/opencode.db"), b"");
            write(
                &d.join(
                    "e3/rollout-2026-01-01T00-00-00-dddddddd-0000-4000-8000-000000000000.jsonl",
                ),
                b"",
            );
            Case::new("empty-file-inputs", d)
                .input(p2o(&d.join("e/empty.jsonl")))
                .input(p2o(&d.join("e2/opencode.db")))
                .input(p2o(&d.join(
                    "e3/rollout-2026-01-01T00-00-00-dddddddd-0000-4000-8000-000000000000.jsonl",
                )))
        }),
    );
    add(
        "empty-dir",
        b(|_ctx, d| {
            mkdir(&d.join("nothing"));
            Case::new("empty-dir", d)
                .input(p2o(&d.join("nothing")))
                .expect(Expect::all(2))
                .bad_path("nothing")
        }),
    );
    add(
        "unrelated-files-only",
        b(|_ctx, d| {
            let u = d.join("unrelated");
            write(&u.join("README.md"), b"# hello\n");
            write(&u.join("notes.json"), b"{\"a\":1}");
            write(&u.join("data.jsonl"), b"{\"x\":1}\n{\"y\":2}\n");
            write(&u.join("image.png"), b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR");
            write(&u.join("sub/other.db"), Rng::new(5).bytes(1000));
            write(&u.join("sub/storage.txt"), b"not a tree");
            Case::new("unrelated-files-only", d)
                .input(p2o(&u))
                .expect(Expect::all(2))
                .bad_path("unrelated")
        }),
    );
    add(
        "unreadable-db",
        b(|ctx, d| {
            let p = db(ctx, PLAIN_DB, d, "locked-db");
            chmod(&p, 0o000);
            let mut c = Case::new("unreadable-db", d)
                .input(p2o(&p))
                .bad_path("locked-db");
            if ctx.unprivileged {
                c.expect = Expect::all(2);
            }
            c
        }),
    );
    add(
        "unreadable-legacy-file",
        b(|ctx, d| {
            let l = legacy(ctx, d);
            chmod(
                &legacy_msg_dir(&l).join(format!("{LEGACY_ASSISTANT}.json")),
                0o000,
            );
            let c = Case::new("unreadable-legacy-file", d)
                .input(p2o(&l))
                .session(LEGACY_SID);
            if ctx.unprivileged {
                c.bad_item(LEGACY_ASSISTANT)
            } else {
                c
            }
        }),
    );
    add(
        "unreadable-claude-file",
        b(|ctx, d| {
            let f = claude(ctx, CLAUDE_MULTI, d);
            let other = f
                .parent()
                .unwrap()
                .join("ada37aa8-fdfe-41e2-ae55-88cfa2a2c290.jsonl");
            copy(&ctx.fx(CLAUDE_IMAGE), &other);
            chmod(&other, 0o000);
            let c = Case::new("unreadable-claude-file", d)
                .input(p2o(&claude_projects(d)))
                .session(CLAUDE_SID);
            if ctx.unprivileged {
                c.bad_item("ada37aa8-fdfe-41e2-ae55-88cfa2a2c290")
            } else {
                c
            }
        }),
    );
    add(
        "unreadable-dir-in-walk",
        b(|ctx, d| {
            let w = d.join("walk");
            db(ctx, PLAIN_DB, &w, "good");
            db(ctx, KILO_DB, &w, "locked-dir");
            chmod(&w.join("locked-dir"), 0o000);
            let c = Case::new("unreadable-dir-in-walk", d)
                .input(p2o(&w))
                .session(PLAIN_SID);
            if ctx.unprivileged {
                c.bad_item("locked-dir")
            } else {
                c
            }
        }),
    );
    add(
        "unreadable-rollout",
        b(|ctx, d| {
            let f = codex(ctx, CODEX_SMALL, d, CODEX_SMALL_NAME);
            chmod(&f, 0o000);
            let mut c = Case::new("unreadable-rollout", d).input(p2o(&f));
            if ctx.unprivileged {
                c.expect = Expect::all(2);
                c = c.bad_path("rollout-2026-02-23T20-34-25");
            }
            c
        }),
    );
    add(
        "missing-input",
        b(|_ctx, d| {
            Case::new("missing-input", d)
                .input(p2o(&d.join("does-not-exist")))
                .expect(Expect::all(2))
                .bad_path("does-not-exist")
        }),
    );
    add(
        "good-store-plus-unreadable-inputs",
        b(|ctx, d| {
            // An input that could not be read gives 2 after the others ran.
            let p = db(ctx, PLAIN_DB, d, "good");
            let g = d.join("garbage/opencode.db");
            write(&g, Rng::new(6).bytes(4096));
            Case::new("good-store-plus-unreadable-inputs", d)
                .input(p2o(&p))
                .input(p2o(&d.join("does-not-exist")))
                .input(p2o(&g))
                .session(PLAIN_SID)
                .expect(Expect {
                    list: Some(2),
                    check: Some(2),
                    repair: Some(2),
                    ..Default::default()
                })
                .bad_path("does-not-exist")
                .bad_path("garbage/opencode.db")
                .check("list-json", sessions_eq(1))
        }),
    );
    add(
        "default-paths-hostile-home",
        b(|ctx, d| {
            // No PATH: the default data dirs of a hostile HOME are read.
            let home = d.join("home");
            copy(
                &ctx.fx(PLAIN_DB),
                &home.join(".local/share/opencode/opencode.db"),
            );
            write(
                &home.join(".local/share/kilo/kilo.db"),
                Rng::new(11).bytes(2048),
            );
            let f = home
                .join(".claude/projects")
                .join(PROJ)
                .join(format!("{CLAUDE_SID}.jsonl"));
            copy(&ctx.fx(CLAUDE_MULTI), &f);
            symlink("..", &f.parent().unwrap().join("up"));
            let r = home
                .join(".codex/sessions/2026/01/01")
                .join(format!("rollout-{}a.jsonl", "é".repeat(40)));
            copy(&ctx.fx(CODEX_SMALL), &r);
            symlink("/dev/zero", &home.join(".cache/opencode/models.json"));
            mkfifo(&home.join(".cache/kilo/models.json"));
            let mut c = Case::new("default-paths-hostile-home", d).session(PLAIN_SID);
            c.home = Some(home);
            c
        }),
    );
    v
}

// ------------------------------------------------------- SQLite builders

/// Recreates `table` with untyped, unconstrained columns (NULLs, duplicate
/// ids and any storage class allowed), keeping its rows.
fn loosen(c: &rusqlite::Connection, table: &str) {
    let cols: Vec<String> = c
        .prepare(&format!("PRAGMA table_info({table})"))
        .unwrap()
        .query_map([], |r| r.get::<_, String>(1))
        .unwrap()
        .flatten()
        .collect();
    let list = cols.join(", ");
    c.execute_batch(&format!(
        "PRAGMA foreign_keys=OFF;
         CREATE TABLE zz_loose ({list});
         INSERT INTO zz_loose SELECT {list} FROM {table};
         DROP TABLE {table};
         ALTER TABLE zz_loose RENAME TO {table};"
    ))
    .unwrap();
}

/// Messages in the db at `p`, opened immutable: a WAL-mode db opened only
/// read-only would get `-wal`/`-shm` files beside it (here, in fixtures/).
fn count_messages(p: &Path) -> u64 {
    let uri = format!("file:{}?immutable=1", p.display());
    let c = rusqlite::Connection::open_with_flags(
        uri,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI,
    )
    .unwrap();
    c.query_row("SELECT count(*) FROM message", [], |r| r.get::<_, i64>(0))
        .unwrap() as u64
}

/// `dir/opencode.db` with a `-wal` (and `-shm`) holding `add` committed
/// messages not yet checkpointed into the db.
fn oc_with_wal(ctx: &Ctx, dir: &Path, add: usize) -> PathBuf {
    with_wal(ctx, PLAIN_DB, dir, PLAIN_SID, add)
}

fn with_wal(ctx: &Ctx, rel: &str, dir: &Path, sid: &str, add: usize) -> PathBuf {
    let name = Path::new(rel)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let scratch = tempfile::tempdir_in(&ctx.scratch).unwrap();
    let s = scratch.path().join(&name);
    std::fs::copy(ctx.fx(rel), &s).unwrap();
    let c = sqlite(&s);
    let mode: String = c
        .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    c.execute_batch("PRAGMA wal_autocheckpoint=0;").unwrap();
    oc_add(&c, sid, add, 0, "wal");
    // Copy while the connection is open: the -wal still holds the rows.
    mkdir(dir);
    for suffix in ["", "-wal", "-shm"] {
        let from = scratch.path().join(format!("{name}{suffix}"));
        assert!(from.exists(), "{} missing", from.display());
        std::fs::copy(&from, dir.join(format!("{name}{suffix}"))).unwrap();
    }
    drop(c);
    let wal = std::fs::metadata(dir.join(format!("{name}-wal")))
        .unwrap()
        .len();
    assert!(wal > 0, "the -wal is empty");
    dir.join(name)
}

/// `dir/opencode.db` in rollback-journal mode with a hot `-journal`: a writer
/// that spilled an uncommitted transaction into the db file and then died.
/// Verified: SQLite itself rolls it back to the committed rows.
fn hot_journal(ctx: &Ctx, dir: &Path) -> PathBuf {
    let scratch = tempfile::tempdir_in(&ctx.scratch).unwrap();
    let s = scratch.path().join("opencode.db");
    std::fs::copy(ctx.fx(PLAIN_DB), &s).unwrap();
    {
        let c = sqlite(&s);
        let m: String = c
            .query_row("PRAGMA journal_mode=DELETE", [], |r| r.get(0))
            .unwrap();
        assert_eq!(m, "delete");
    }
    let committed = std::fs::read(&s).unwrap();
    let c = sqlite(&s);
    c.execute_batch(
        "PRAGMA cache_size=5;
         BEGIN;
         UPDATE message SET data = replace(data, '\"role\"', '\"HOSTILE_role\"');
         DELETE FROM part WHERE rowid % 2 = 0;
         CREATE TABLE zz_spill (x);
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
           INSERT INTO zz_spill SELECT randomblob(2000) FROM n;",
    )
    .unwrap();
    // "Crash": copy the files as they are on disk mid-transaction.
    mkdir(dir);
    std::fs::copy(&s, dir.join("opencode.db")).unwrap();
    let j = scratch.path().join("opencode.db-journal");
    assert!(j.exists(), "no -journal mid-transaction");
    std::fs::copy(&j, dir.join("opencode.db-journal")).unwrap();
    drop(c);
    let torn = std::fs::read(dir.join("opencode.db")).unwrap();
    assert_ne!(
        torn, committed,
        "the transaction did not spill into the db file"
    );
    // SQLite recovers the committed rows from a copy of db + hot journal.
    let v = tempfile::tempdir_in(&ctx.scratch).unwrap();
    std::fs::copy(dir.join("opencode.db"), v.path().join("opencode.db")).unwrap();
    std::fs::copy(
        dir.join("opencode.db-journal"),
        v.path().join("opencode.db-journal"),
    )
    .unwrap();
    let r = sqlite(&v.path().join("opencode.db"));
    let n: i64 = r
        .query_row(
            "SELECT count(*) FROM message WHERE data LIKE '%\"role\"%'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(
        n as u64, PLAIN_MESSAGES,
        "SQLite did not roll the hot journal back"
    );
    let ok: String = r
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ok, "ok");
    // And the real sqlite3 shell, when installed, agrees.
    let v2 = tempfile::tempdir_in(&ctx.scratch).unwrap();
    std::fs::copy(dir.join("opencode.db"), v2.path().join("opencode.db")).unwrap();
    std::fs::copy(
        dir.join("opencode.db-journal"),
        v2.path().join("opencode.db-journal"),
    )
    .unwrap();
    if let Ok(o) = std::process::Command::new("sqlite3")
        .arg(v2.path().join("opencode.db"))
        .arg("SELECT count(*) FROM message WHERE data LIKE '%\"role\"%';")
        .output()
    {
        if o.status.success() {
            assert_eq!(
                String::from_utf8_lossy(&o.stdout).trim(),
                PLAIN_MESSAGES.to_string()
            );
        }
    }
    dir.join("opencode.db")
}
