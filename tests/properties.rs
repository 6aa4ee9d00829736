//! Property test (issue 7): generated sessions, built from real fixture
//! shapes (Claude Code lines of `double_compact_nometa`, opencode rows of
//! `opencode/compact` in the schema of `opencode/plain`), with generated
//! parent links, compaction boundaries, big texts, images and faults
//! (dangling parents, parent cycles, stale parents after a compaction,
//! re-written duplicate lines), are written to a temp dir; the binary runs
//! `repair` and `compact --session ID --max-request-bytes N` into a temp out
//! dir. Properties: the inputs are byte-identical with no new file beside
//! them; `repair` exits 0 and `check --format json` on its copy has no
//! `stale-parent`, `dangling-parent`, `parent-cycle` or `duplicate-id` of
//! error severity; `compact` exits 0 or 1 and its copy, when written, loads.
//!
//! Faults are placed where repair promises to fix them. Shapes the tools get
//! wrong today (tests/fuzz_crashes/known.txt: a dangling parent whose only
//! earlier candidates sit before a compaction boundary, a re-written copy of
//! a message with a dangling parent, a re-written copy of a message with an
//! image, which `compact` cannot write) are left out unless
//! `SD_PROPTEST_ALL_FAULTS=1`. `PROPTEST_CASES` sets the number of cases
//! (default 16, a few seconds in debug mode).

use proptest::prelude::*;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// What a generated session is made of, in order.
#[derive(Debug, Clone)]
enum Step {
    User { text: usize, image: Option<usize> },
    Assistant { text: usize },
    Compact,
}

/// A fault; the numbers pick positions (taken modulo what fits).
#[derive(Debug, Clone)]
enum Fault {
    Dangling(usize),
    Cycle(usize, usize),
    Stale(usize, usize),
    Duplicate(usize),
}

fn text_len() -> impl Strategy<Value = usize> {
    prop_oneof![8 => 1usize..400, 1 => 20_000usize..300_000]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (text_len(), proptest::option::weighted(0.2, 100usize..40_000))
            .prop_map(|(text, image)| Step::User { text, image }),
        5 => text_len().prop_map(|text| Step::Assistant { text }),
        1 => Just(Step::Compact),
    ]
}

fn fault() -> impl Strategy<Value = Fault> {
    prop_oneof![
        (0usize..64).prop_map(Fault::Dangling),
        (0usize..64, 0usize..64).prop_map(|(a, b)| Fault::Cycle(a, b)),
        (0usize..64, 0usize..64).prop_map(|(a, b)| Fault::Stale(a, b)),
        (0usize..64).prop_map(Fault::Duplicate),
    ]
}

fn all_faults() -> bool {
    std::env::var_os("SD_PROPTEST_ALL_FAULTS").is_some()
}

/// Text of `n` characters (not only ASCII: char boundaries matter when cut).
fn text(n: usize, salt: usize) -> String {
    let unit = format!("line {salt}: héllo wörld, some text to keep; ");
    unit.chars().cycle().take(n).collect()
}

/// Base64 of `n` bytes (an image as far as the parsers can tell).
fn image_b64(n: usize) -> String {
    use base64::Engine;
    let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
    bytes.extend((0..n).map(|i| (i * 31 % 251) as u8));
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

// ------------------------------------------------------------ Claude Code

const CLAUDE_SID: &str = "5b2c7f4e-1d3a-4c8e-9f60-2a7b8c9d0e1f";

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    User,
    Assistant,
    Boundary,
    Summary,
}

/// The template lines: user, assistant, boundary, summary.
fn claude_templates() -> [Value; 4] {
    let f = fixtures().join(
        "claude-code/claude-code-gen/double_compact_nometa/projects/-home-dev-cc-dev-claude-double-compact-proj/0a40fb08-409e-47b5-867c-464f5acf52d8.jsonl",
    );
    let lines: Vec<Value> = std::fs::read_to_string(f)
        .expect("fixture")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    let find =
        |pred: &dyn Fn(&Value) -> bool| lines.iter().find(|v| pred(v)).cloned().expect("shape");
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    [
        find(&|v| {
            s(v, "type").as_deref() == Some("user")
                && v.pointer("/message/content/0/type").and_then(Value::as_str) == Some("text")
        }),
        find(&|v| {
            s(v, "type").as_deref() == Some("assistant")
                && v.pointer("/message/content/0/type").and_then(Value::as_str) == Some("text")
        }),
        find(&|v| s(v, "subtype").as_deref() == Some("compact_boundary")),
        find(&|v| v.get("isCompactSummary").and_then(Value::as_bool) == Some(true)),
    ]
}

fn uuid(k: usize) -> String {
    format!("{:08x}-0000-4000-8000-{:012x}", 0x1000 + k, k)
}

/// A Claude Code transcript: its lines (one JSON document each).
fn claude_session(steps: &[Step], faults: &[Fault]) -> Vec<String> {
    let [tu, ta, tb, ts] = claude_templates();
    let mut lines: Vec<(Kind, usize, Value)> = Vec::new(); // (kind, segment, line)
    let mut prev: Option<String> = None;
    let mut seg = 0usize;
    let ts_of = |k: usize| format!("2026-11-22T12:{:02}:{:02}.000Z", (k / 60) % 60, k % 60);
    for (k, st) in steps.iter().enumerate() {
        let n = lines.len();
        match st {
            Step::User { text: t, image } => {
                let mut v = tu.clone();
                let mut content = vec![json!({"type": "text", "text": text(*t, k)})];
                if let Some(b) = image {
                    content.push(json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": image_b64(*b)}}));
                }
                v["message"]["content"] = Value::Array(content);
                v["parentUuid"] = prev.clone().map_or(Value::Null, Value::String);
                v["uuid"] = uuid(n).into();
                v["timestamp"] = ts_of(n).into();
                v["sessionId"] = CLAUDE_SID.into();
                prev = Some(uuid(n));
                lines.push((Kind::User, seg, v));
            }
            Step::Assistant { text: t } => {
                let mut v = ta.clone();
                v["message"]["content"] = json!([{"type": "text", "text": text(*t, k)}]);
                v["message"]["id"] = format!("msg_gen{n}").into();
                v["requestId"] = format!("req_gen{n}").into();
                v["parentUuid"] = prev.clone().map_or(Value::Null, Value::String);
                v["uuid"] = uuid(n).into();
                v["timestamp"] = ts_of(n).into();
                v["sessionId"] = CLAUDE_SID.into();
                prev = Some(uuid(n));
                lines.push((Kind::Assistant, seg, v));
            }
            Step::Compact => {
                if lines.is_empty() {
                    continue;
                }
                seg += 1;
                let mut b = tb.clone();
                b["parentUuid"] = Value::Null;
                b["logicalParentUuid"] = prev.clone().map_or(Value::Null, Value::String);
                b["uuid"] = uuid(n).into();
                b["timestamp"] = ts_of(n).into();
                b["sessionId"] = CLAUDE_SID.into();
                lines.push((Kind::Boundary, seg, b));
                let mut s = ts.clone();
                s["parentUuid"] = uuid(n).into();
                s["uuid"] = uuid(n + 1).into();
                s["timestamp"] = ts_of(n + 1).into();
                s["sessionId"] = CLAUDE_SID.into();
                s["message"]["content"] = text(300, k).into();
                prev = Some(uuid(n + 1));
                lines.push((Kind::Summary, seg, s));
            }
        }
    }
    // Faults: at most one parent fault per segment (a dangling parent or a
    // cycle makes every later message of its segment fail to resolve, and
    // repair's candidates must stay in the segment), on user/assistant lines.
    let msgs: Vec<usize> = (0..lines.len())
        .filter(|&i| matches!(lines[i].0, Kind::User | Kind::Assistant))
        .collect();
    if msgs.is_empty() {
        return lines.iter().map(|l| l.2.to_string()).collect();
    }
    let mut used_seg: HashSet<usize> = HashSet::new();
    let mut touched: HashSet<usize> = HashSet::new();
    let mut dups: Vec<(usize, bool)> = Vec::new();
    // A user/assistant/summary line before `i` in its segment (repair's candidate).
    let has_candidate = |lines: &[(Kind, usize, Value)], i: usize| {
        (0..i).any(|j| lines[j].1 == lines[i].1 && lines[j].0 != Kind::Boundary)
    };
    for f in faults {
        match *f {
            Fault::Dangling(x) => {
                let t = msgs[x % msgs.len()];
                let sg = lines[t].1;
                if t == 0 || touched.contains(&t) || used_seg.contains(&sg) {
                    continue;
                }
                if !has_candidate(&lines, t) && !all_faults() {
                    continue;
                }
                lines[t].2["parentUuid"] = format!("{:08x}-dead-4000-8000-000000000000", t).into();
                used_seg.insert(sg);
                touched.insert(t);
            }
            Fault::Cycle(x, y) => {
                let a = msgs[x % msgs.len()];
                let sg = lines[a].1;
                if touched.contains(&a) || used_seg.contains(&sg) {
                    continue;
                }
                let later: Vec<usize> =
                    (a + 1..lines.len()).filter(|&j| lines[j].1 == sg).collect();
                if later.is_empty() || (a != 0 && !has_candidate(&lines, a)) {
                    continue;
                }
                let b = later[y % later.len()];
                if (a..=b).any(|j| touched.contains(&j)) {
                    continue;
                }
                lines[a].2["parentUuid"] = lines[b].2["uuid"].clone();
                used_seg.insert(sg);
                touched.extend(a..=b);
            }
            Fault::Stale(x, y) => {
                let t = msgs[x % msgs.len()];
                let sg = lines[t].1;
                if sg == 0 || touched.contains(&t) || used_seg.contains(&sg) {
                    continue;
                }
                let old: Vec<usize> = (0..t)
                    .filter(|&j| lines[j].1 < sg && lines[j].0 == Kind::User)
                    .collect();
                if old.is_empty() {
                    continue;
                }
                let p = old[y % old.len()];
                lines[t].2["parentUuid"] = lines[p].2["uuid"].clone();
                used_seg.insert(sg);
                touched.insert(t);
            }
            Fault::Duplicate(x) => {
                let t = msgs[x % msgs.len()];
                let image = lines[t]
                    .2
                    .pointer("/message/content")
                    .and_then(Value::as_array)
                    .is_some_and(|c| c.iter().any(|b| b["type"] == "image"));
                if (touched.contains(&t) || image) && !all_faults() {
                    continue;
                }
                // Right after the line, or at the end (a resumed session re-writes it later).
                dups.push((t, x % 2 == 1));
            }
        }
    }
    // Claude Code re-writes a line with the same content; only the
    // bookkeeping fields (timestamp) differ.
    let copy = |v: &Value| {
        let mut c = v.clone();
        c["timestamp"] = "2026-11-22T13:00:00.000Z".into();
        c.to_string()
    };
    let mut out: Vec<String> = Vec::new();
    for (i, (_, _, v)) in lines.iter().enumerate() {
        out.push(v.to_string());
        for _ in dups.iter().filter(|&&(d, end)| d == i && !end) {
            out.push(copy(v));
        }
    }
    for &(d, _) in dups.iter().filter(|&&(_, end)| end) {
        out.push(copy(&lines[d].2));
    }
    out
}

// --------------------------------------------------------------- opencode

const OC_SID: &str = "ses_dfd222799ffeZaEGZwxSj0AU0r";

struct OcRow {
    id: String,
    time: i64,
    data: Value,
    parts: Vec<(String, Value)>,
}

/// opencode message and part rows (the shapes of fixtures/opencode/compact).
fn opencode_session(steps: &[Step], faults: &[Fault]) -> Vec<OcRow> {
    let user = |t: i64| -> Value {
        json!({"role":"user","time":{"created":t},"agent":"build","model":{"providerID":"stub","modelID":"stub-small"},"summary":{"diffs":[]}})
    };
    let assistant = |parent: &str, t: i64, summary: bool| -> Value {
        let mut v = json!({"parentID":parent,"role":"assistant","mode":"build","agent":"build",
            "path":{"cwd":"/home/dev/work/compact/proj","root":"/home/dev/work/compact/proj"},"cost":0.004,
            "tokens":{"total":2781,"input":1512,"output":1269,"reasoning":0,"cache":{"write":0,"read":0}},
            "modelID":"stub-small","providerID":"stub","time":{"created":t,"completed":t+500},"finish":"stop"});
        if summary {
            v["summary"] = true.into();
            v["mode"] = "compaction".into();
            v["agent"] = "compaction".into();
        }
        v
    };
    let mid = |n: usize| format!("msg_gen{n:06}AAAAAAAAAAAAAAAA");
    let pid = |n: usize, k: usize| format!("prt_gen{n:06}{k:02}AAAAAAAAAAAAAA");
    let mut rows: Vec<OcRow> = Vec::new();
    let mut last_user: Option<String> = None;
    let mut users: Vec<usize> = Vec::new(); // plain user rows
    let mut compactions: Vec<usize> = Vec::new(); // rows of compaction requests
    let t0 = 1_795_344_605_000i64;
    for (k, st) in steps.iter().enumerate() {
        let n = rows.len();
        let t = t0 + 1000 * n as i64;
        match st {
            Step::User { text: len, image } => {
                let mut parts = vec![(pid(n, 0), json!({"type":"text","text":text(*len, k)}))];
                if let Some(b) = image {
                    parts.push((pid(n, 1), json!({"type":"file","mime":"image/png","filename":"pic.png","url":format!("data:image/png;base64,{}", image_b64(*b))})));
                }
                rows.push(OcRow {
                    id: mid(n),
                    time: t,
                    data: user(t),
                    parts,
                });
                last_user = Some(mid(n));
                users.push(n);
            }
            Step::Assistant { text: len } => {
                let Some(p) = last_user.clone() else { continue };
                let parts = vec![
                    (
                        pid(n, 0),
                        json!({"type":"step-start","snapshot":"c22a7b324a0f598fca4e5c6c5b42e6263ba0350d"}),
                    ),
                    (
                        pid(n, 1),
                        json!({"type":"text","text":text(*len, k),"time":{"start":t,"end":t+100}}),
                    ),
                    (
                        pid(n, 2),
                        json!({"type":"step-finish","reason":"stop","tokens":{"input":1512,"output":1269,"reasoning":0,"cache":{"write":0,"read":0}},"cost":0.004}),
                    ),
                ];
                rows.push(OcRow {
                    id: mid(n),
                    time: t,
                    data: assistant(&p, t, false),
                    parts,
                });
            }
            Step::Compact => {
                if last_user.is_none() {
                    continue;
                }
                rows.push(OcRow {
                    id: mid(n),
                    time: t,
                    data: user(t),
                    parts: vec![(
                        pid(n, 0),
                        json!({"type":"compaction","auto":true,"overflow":false}),
                    )],
                });
                compactions.push(n);
                rows.push(OcRow {
                    id: mid(n + 1),
                    time: t + 10,
                    data: assistant(&mid(n), t + 10, true),
                    parts: vec![(pid(n + 1, 0), json!({"type":"text","text":text(400, k)}))],
                });
                rows.push(OcRow {
                    id: mid(n + 2),
                    time: t + 20,
                    data: user(t + 20),
                    parts: vec![(pid(n + 2, 0), json!({"type":"text","metadata":{"compaction_continue":true},"synthetic":true,"text":"Continue if you have next steps, or stop and ask for clarification if you are unsure how to proceed."}))],
                });
                last_user = Some(mid(n + 2));
            }
        }
    }
    let assistants: Vec<usize> = (0..rows.len())
        .filter(|&i| rows[i].data["role"] == "assistant" && rows[i].data.get("summary").is_none())
        .collect();
    let mut touched: HashSet<usize> = HashSet::new();
    for f in faults {
        if assistants.is_empty() {
            break;
        }
        match *f {
            Fault::Dangling(x) => {
                let a = assistants[x % assistants.len()];
                if touched.insert(a) {
                    rows[a].data["parentID"] = format!("msg_gone{a:06}AAAAAAAAAAAAAAAA").into();
                }
            }
            Fault::Cycle(x, y) => {
                let a = assistants[x % assistants.len()];
                if y % 2 == 0 {
                    // An assistant that is its own parent.
                    if touched.insert(a) {
                        rows[a].data["parentID"] = rows[a].id.clone().into();
                    }
                } else if let Some(u) = rows[a].data["parentID"]
                    .as_str()
                    .and_then(|p| rows.iter().position(|r| r.id == p))
                {
                    // A user turn whose parent is its own reply.
                    if users.contains(&u) && !touched.contains(&a) && touched.insert(u) {
                        rows[u].data["parentID"] = rows[a].id.clone().into();
                        touched.insert(a);
                    }
                }
            }
            Fault::Stale(x, y) => {
                let a = assistants[x % assistants.len()];
                let Some(&c) = compactions.iter().rev().find(|&&c| c < a) else {
                    continue;
                };
                let before: Vec<usize> = users.iter().copied().filter(|&u| u < c).collect();
                if before.is_empty() || !touched.insert(a) {
                    continue;
                }
                rows[a].data["parentID"] = rows[before[y % before.len()]].id.clone().into();
            }
            Fault::Duplicate(_) => {} // ids are primary keys in SQLite
        }
    }
    rows
}

/// Writes the rows into a copy of fixtures/opencode/plain/opencode.db (its
/// session row kept, its messages and parts replaced), journal mode DELETE.
fn write_opencode_db(dir: &Path, rows: &[OcRow]) -> PathBuf {
    let db = dir.join("opencode.db");
    std::fs::copy(fixtures().join("opencode/plain/opencode.db"), &db).unwrap();
    let mut perm = std::fs::metadata(&db).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perm.set_readonly(false);
    std::fs::set_permissions(&db, perm).unwrap();
    let mut c = rusqlite::Connection::open(&db).unwrap();
    c.execute_batch("PRAGMA journal_mode=DELETE; DELETE FROM part; DELETE FROM message;")
        .unwrap();
    let tx = c.transaction().unwrap();
    for r in rows {
        tx.execute(
            "INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?1, ?2, ?3, ?3, ?4)",
            rusqlite::params![r.id, OC_SID, r.time, r.data.to_string()],
        )
        .unwrap();
        for (pid, p) in &r.parts {
            tx.execute(
                "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
                rusqlite::params![pid, r.id, OC_SID, r.time, p.to_string()],
            )
            .unwrap();
        }
    }
    tx.commit().unwrap();
    c.execute_batch("VACUUM").unwrap();
    drop(c);
    db
}

// ------------------------------------------------------------------ runs

/// Every file and folder under `root` with its bytes.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    walkdir::WalkDir::new(root)
        .sort_by_file_name()
        .into_iter()
        .map(|e| {
            let e = e.unwrap();
            let rel = e.path().strip_prefix(root).unwrap().to_path_buf();
            let bytes = e
                .file_type()
                .is_file()
                .then(|| std::fs::read(e.path()).unwrap());
            (rel, bytes)
        })
        .collect()
}

/// The binary in a private home (HOME, XDG_*, CODEX_HOME, CLAUDE_CONFIG_DIR, TMPDIR).
fn bin(home: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_session-doctor"));
    c.env("HOME", home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CACHE_HOME", home.join("cache"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_STATE_HOME", home.join("state"))
        .env("CODEX_HOME", home.join("codex"))
        .env("CLAUDE_CONFIG_DIR", home.join("claude"))
        .env("TMPDIR", home.join("tmp"))
        .env("NO_COLOR", "1")
        .current_dir(home);
    c
}

fn run(home: &Path, args: &[&dyn AsRef<std::ffi::OsStr>]) -> (i32, String, String) {
    let o = bin(home)
        .args(args.iter().map(|a| a.as_ref()))
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

const REPAIRED: &[&str] = &[
    "stale-parent",
    "dangling-parent",
    "parent-cycle",
    "duplicate-id",
];

/// Error findings of the codes repair fixes, from `check --format json` on `path`.
fn repairable_errors(home: &Path, path: &Path) -> Result<Vec<String>, String> {
    let (code, out, err) = run(home, &[&"check", &"--format", &"json", &path]);
    if code == 2 {
        return Err(format!("check exit 2 on {}: {err}", path.display()));
    }
    let v: Value = serde_json::from_str(&out).map_err(|e| format!("check JSON: {e}: {out}"))?;
    Ok(v["sessions"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|s| s["findings"].as_array().cloned().unwrap_or_default())
        .filter(|f| {
            f["severity"] == "error" && REPAIRED.contains(&f["code"].as_str().unwrap_or(""))
        })
        .map(|f| format!("{} {} {}", f["code"], f["message_id"], f["detail"]))
        .collect())
}

/// Runs repair and compact on the store at `input` (inside `src_root`) and
/// checks the properties; `Err` says which failed.
fn check_store(
    home: &Path,
    src_root: &Path,
    input: &Path,
    session: &str,
    limit: u64,
) -> Result<(), String> {
    let before = snapshot(src_root);
    if std::env::var_os("SD_PROPTEST_VERBOSE").is_some() {
        let found = repairable_errors(home, input).unwrap_or_default();
        eprintln!(
            "case: {} repairable error(s) in the input: {:?}",
            found.len(),
            found
                .iter()
                .map(|f| f.split(' ').next().unwrap_or(""))
                .collect::<Vec<_>>()
        );
    }
    let out = home.join("out");
    let _ = std::fs::remove_dir_all(&out);
    let rep = out.join("repair");
    let (code, stdout, stderr) = run(home, &[&"repair", &"--out", &rep, &input]);
    if code != 0 {
        return Err(format!("repair exit {code}: {stdout}\n{stderr}"));
    }
    let left = repairable_errors(home, &rep)?;
    if !left.is_empty() {
        return Err(format!("the repaired copy still has:\n{}", left.join("\n")));
    }
    let cmp = out.join("compact");
    let limit_s = limit.to_string();
    let (code, stdout, stderr) = run(
        home,
        &[
            &"compact",
            &"--session",
            &session,
            &"--max-request-bytes",
            &limit_s,
            &"--out",
            &cmp,
            &input,
        ],
    );
    if code != 0 && code != 1 {
        return Err(format!("compact exit {code}: {stdout}\n{stderr}"));
    }
    if cmp.exists()
        && walkdir::WalkDir::new(&cmp).into_iter().flatten().any(|e| {
            let p = e.path().to_string_lossy().into_owned();
            p.ends_with(".jsonl") || p.ends_with(".db")
        })
    {
        repairable_errors(home, &cmp).map_err(|e| format!("the compacted copy: {e}"))?;
    }
    let after = snapshot(src_root);
    if before != after {
        let changed: Vec<String> = before
            .keys()
            .chain(after.keys())
            .filter(|k| before.get(*k) != after.get(*k))
            .map(|k| k.display().to_string())
            .collect();
        return Err(format!("the inputs changed or gained files: {changed:?}"));
    }
    Ok(())
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16)
}

fn session_input() -> impl Strategy<Value = (Vec<Step>, Vec<Fault>)> {
    (
        (
            text_len(),
            proptest::option::weighted(0.2, 100usize..40_000),
        ),
        proptest::collection::vec(step(), 2..16),
        proptest::collection::vec(fault(), 0..5),
    )
        .prop_map(|((t, img), mut steps, faults)| {
            // Sessions start with a user turn.
            steps.insert(
                0,
                Step::User {
                    text: t,
                    image: img,
                },
            );
            (steps, faults)
        })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn claude_code_repair_and_compact((steps, faults) in session_input()) {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join("tmp")).unwrap();
        let src = home.path().join("src");
        let proj = src.join("projects/-home-dev-proj");
        std::fs::create_dir_all(&proj).unwrap();
        let file = proj.join(format!("{CLAUDE_SID}.jsonl"));
        let lines = claude_session(&steps, &faults);
        let body = lines.join("\n") + "\n";
        std::fs::write(&file, &body).unwrap();
        let limit = (body.len() as u64 / 3).max(20_000);
        let r = check_store(home.path(), &src, &file, CLAUDE_SID, limit);
        prop_assert!(r.is_ok(), "{}\ntranscript:\n{}", r.unwrap_err(), lines.iter().map(|l| l.chars().take(300).collect::<String>()).collect::<Vec<_>>().join("\n"));
    }

    #[test]
    fn opencode_repair_and_compact((steps, faults) in session_input()) {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join("tmp")).unwrap();
        let src = home.path().join("src/opencode");
        std::fs::create_dir_all(&src).unwrap();
        let rows = opencode_session(&steps, &faults);
        let db = write_opencode_db(&src, &rows);
        let size = std::fs::metadata(&db).unwrap().len();
        let limit = (size / 3).max(20_000);
        let r = check_store(home.path(), &src, &db, OC_SID, limit);
        prop_assert!(r.is_ok(), "{}\nrows:\n{}", r.unwrap_err(), rows.iter().map(|r| format!("{} {}", r.id, r.data.to_string().chars().take(200).collect::<String>())).collect::<Vec<_>>().join("\n"));
    }
}
