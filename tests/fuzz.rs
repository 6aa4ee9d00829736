//! Stable-toolchain fuzzing inside `cargo test` (issue 7): one test per
//! target of `session_doctor::fuzz`. Each test runs the seed corpus made from
//! the real fixtures (plus `$SD_FUZZ_EXTRA_CORPUS/<target>/` when set), then
//! mutates the seeds for `SD_FUZZ_SECS` seconds (default 2; CI sets 60):
//! byte, line and JSON mutations that keep inputs near valid shapes (ids
//! re-used from elsewhere in the input make cycles, dangling and stale
//! parents, duplicated lines make duplicate ids, cut tails make torn lines).
//! `SD_FUZZ_SEED` fixes the random seed (printed by every run; without it
//! and without `SD_FUZZ_SECS` the seed is fixed, so `cargo test` repeats). A crash is
//! saved to `target/tmp/fuzz-crashes/<target>-<hash>.bin` and fails the test,
//! unless its signature (`<source file>: <panic message>`) is listed in
//! `tests/fuzz_crashes/known.txt`: a crash found earlier, reported and not
//! fixed yet, whose minimized input is `tests/fuzz_crashes/<target>-<n>.bin`
//! (replayed by `fuzz_crashes_replay`).

use serde_json::Value;
use std::cell::{Cell, RefCell};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

thread_local! {
    /// Inside a target call: panics are recorded, not printed.
    static IN_TARGET: Cell<bool> = const { Cell::new(false) };
    /// Signature of the last panic in a target (`<file>: <first line>`) and its full message.
    static LAST_PANIC: RefCell<Option<(String, String)>> = const { RefCell::new(None) };
}

fn install_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !IN_TARGET.with(Cell::get) {
                return default(info);
            }
            let msg = info
                .payload()
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| info.payload().downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            let file = info
                .location()
                .map(|l| l.file().to_string())
                .unwrap_or_default();
            let sig = format!("{file}: {}", msg.lines().next().unwrap_or(""));
            let full = match info.location() {
                Some(l) => format!("{l}: {msg}"),
                None => msg,
            };
            LAST_PANIC.with(|p| *p.borrow_mut() = Some((sig, full)));
        }));
    });
}

/// Runs `target` on `input`: `Err((signature, message))` when it panics.
fn call(target: fn(&[u8]), input: &[u8]) -> Result<(), (String, String)> {
    install_hook();
    IN_TARGET.with(|f| f.set(true));
    let r = catch_unwind(AssertUnwindSafe(|| target(input)));
    IN_TARGET.with(|f| f.set(false));
    r.map_err(|_| {
        LAST_PANIC
            .with(|p| p.borrow_mut().take())
            .unwrap_or_else(|| ("?".into(), "?".into()))
    })
}

fn crash_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_crashes")
}

/// Whether a panic signature is known: listed as it is, or, for a broken
/// repair promise (`src/fuzz.rs: repair promise broken: k1, k2`), each of its
/// kinds listed (`src/fuzz.rs: repair promise broken: k1`).
fn is_known(sig: &str, known: &[String]) -> bool {
    const PROMISE: &str = "src/fuzz.rs: repair promise broken: ";
    if known.iter().any(|k| k == sig) {
        return true;
    }
    match sig.strip_prefix(PROMISE) {
        Some(kinds) => kinds
            .split(", ")
            .all(|k| known.iter().any(|x| *x == format!("{PROMISE}{k}"))),
        None => false,
    }
}

/// Signatures of the known crashes (`tests/fuzz_crashes/known.txt`: one
/// `<file>: <panic message>` a line, `#` starts a comment).
fn known() -> Vec<String> {
    std::fs::read_to_string(crash_dir().join("known.txt"))
        .unwrap_or_default()
        .lines()
        .map(|l| l.split(" #").next().unwrap_or("").trim().to_string())
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect()
}

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

fn budget() -> Duration {
    let secs = std::env::var("SD_FUZZ_SECS")
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| *s >= 0.0)
        .unwrap_or(2.0);
    Duration::from_secs_f64(secs)
}

/// splitmix64: small, seedable, good enough to pick mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
    fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
}

/// The run's seed and the target's own seed derived from it. `SD_FUZZ_SEED`
/// when set; else the clock when `SD_FUZZ_SECS` is set (a long run explores);
/// else a fixed seed, so a plain `cargo test` runs the same mutations every
/// time (a slower machine runs a prefix of them).
fn seed_of(name: &str) -> (u64, u64) {
    let base = std::env::var("SD_FUZZ_SEED")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or_else(|| {
            if std::env::var_os("SD_FUZZ_SECS").is_none() {
                return 0x5d_f0cc_0007;
            }
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(7)
        });
    let own = name
        .bytes()
        .fold(base, |h, b| h.rotate_left(5) ^ u64::from(b));
    (base, own)
}

/// Tokens the byte mutator inserts.
const TOKENS: &[&str] = &[
    "\"",
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "null",
    "true",
    "-1",
    "0",
    "1e999",
    "18446744073709551616",
    "-9223372036854775809",
    "\\u0000",
    "\\ud800",
    "\\\"",
    "\n",
    "\r\n",
    "\t",
    "é",
    "🎉",
    "\u{301}",
    "\"parentUuid\":",
    "\"parentID\":",
    "\"uuid\":",
    "\"type\":\"compaction\"",
    "data:image/png;base64,",
    "M\t",
    "P\t",
];

/// Keys the JSON mutator adds (the fields the parsers and rules read).
const KEYS: &[&str] = &[
    "parentUuid",
    "parentID",
    "uuid",
    "id",
    "type",
    "subtype",
    "role",
    "isCompactSummary",
    "isSidechain",
    "isMeta",
    "summary",
    "compactMetadata",
    "logicalParentUuid",
    "tail_start_id",
    "time",
    "tokens",
    "message",
    "content",
    "payload",
    "state",
    "output",
    "url",
    "text",
    "sessionId",
    "requestId",
    "usage",
    "error",
    "finish",
    "synthetic",
    "ignored",
    "auto",
    "overflow",
    "replacement_history",
    "toolUseResult",
    "attachments",
    "mime",
    "filename",
    "status",
    "callID",
    "tool",
    "input",
    "preservedSegment",
    "preservedMessages",
    "headUuid",
    "tailUuid",
    "uuids",
    "leafUuid",
    "compacted",
];

fn interesting(rng: &mut Rng) -> Value {
    use serde_json::json;
    match rng.below(16) {
        0 => Value::Null,
        1 => json!(true),
        2 => json!(0),
        3 => json!(-1),
        4 => json!(u64::MAX),
        5 => json!(i64::MIN),
        6 => json!(1.5e300),
        7 => json!(""),
        8 => json!([]),
        9 => json!({}),
        10 => json!("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="),
        11 => json!("data:image/png;base64,!!!not base64"),
        12 => json!("é🎉\u{301}x".repeat(1 + rng.below(3000))),
        13 => json!("A".repeat(1 + rng.below(200_000))),
        14 => json!({"trigger":"auto","preTokens":100,"preservedSegment":{"headUuid":"x","tailUuid":"y"}}),
        _ => (0..1 + rng.below(140)).fold(json!(1), |v, _| json!([v])),
    }
}

/// Every string of `v` that may be an id (short, no spaces).
fn id_strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) if (4..=100).contains(&s.len()) && !s.contains(' ') => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| id_strings(x, out)),
        Value::Object(o) => o.values().for_each(|x| id_strings(x, out)),
        _ => {}
    }
}

/// JSON pointers of the nodes of `v` (at most `cap`).
fn pointers(v: &Value, at: String, out: &mut Vec<String>, cap: usize) {
    if out.len() >= cap {
        return;
    }
    out.push(at.clone());
    match v {
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                pointers(x, format!("{at}/{i}"), out, cap);
            }
        }
        Value::Object(o) => {
            for (k, x) in o {
                let k = k.replace('~', "~0").replace('/', "~1");
                pointers(x, format!("{at}/{k}"), out, cap);
            }
        }
        _ => {}
    }
}

fn mutate_json(rng: &mut Rng, v: &mut Value, ids: &[String]) {
    let mut ptrs = Vec::new();
    pointers(v, String::new(), &mut ptrs, 4000);
    let p = ptrs[rng.below(ptrs.len())].clone();
    let donor = {
        let q = &ptrs[rng.below(ptrs.len())];
        v.pointer(q).cloned().unwrap_or(Value::Null)
    };
    let Some(node) = v.pointer_mut(&p) else {
        return;
    };
    match rng.below(8) {
        0 | 1 if !ids.is_empty() => *node = Value::String(ids[rng.below(ids.len())].clone()),
        2 => *node = interesting(rng),
        3 => *node = donor,
        4 => {
            if let Value::Object(o) = node {
                if !o.is_empty() && rng.chance(2) {
                    let k = o
                        .keys()
                        .nth(rng.below(o.len()))
                        .cloned()
                        .unwrap_or_default();
                    o.remove(&k);
                } else {
                    let k = KEYS[rng.below(KEYS.len())];
                    let val = if !ids.is_empty() && rng.chance(2) {
                        Value::String(ids[rng.below(ids.len())].clone())
                    } else {
                        interesting(rng)
                    };
                    o.insert(k.to_string(), val);
                }
            } else if let Value::Array(a) = node {
                if !a.is_empty() && rng.chance(2) {
                    let i = rng.below(a.len());
                    let x = a[i].clone();
                    a.insert(rng.below(a.len() + 1), x);
                } else if !a.is_empty() {
                    a.remove(rng.below(a.len()));
                }
            }
        }
        5 => {
            if let Value::String(s) = node {
                match rng.below(4) {
                    0 => *s = s.repeat(2 + rng.below(50)),
                    1 => {
                        let cut: String =
                            s.chars().take(rng.below(s.chars().count() + 1)).collect();
                        *s = cut;
                    }
                    2 => s.push_str(["é", "🎉", "\u{301}", "\u{0}", "\n"][rng.below(5)]),
                    _ => s.insert(0, '\u{feff}'),
                }
            }
        }
        6 => {
            if let Some(n) = node.as_i64() {
                *node = serde_json::json!(match rng.below(4) {
                    0 => n.wrapping_add(1),
                    1 => n.wrapping_sub(1),
                    2 => n.wrapping_neg(),
                    _ => n.wrapping_mul(1000),
                });
            } else if let Some(n) = node.as_f64() {
                *node = serde_json::json!(-n);
            }
        }
        _ => *node = interesting(rng),
    }
}

/// Mutates the JSON in one line (or in the whole input): the part from the
/// first `{` or `[` on, so a spec prefix (`M\t<id>\t`) or a selector byte stays.
fn mutate_json_in(rng: &mut Rng, bytes: &[u8], ids: &[String]) -> Option<Vec<u8>> {
    let start = bytes.iter().position(|&b| b == b'{' || b == b'[')?;
    let mut v: Value = serde_json::from_slice(&bytes[start..]).ok()?;
    mutate_json(rng, &mut v, ids);
    let pretty = bytes[start..].contains(&b'\n');
    let mut out = bytes[..start].to_vec();
    out.extend(if pretty {
        serde_json::to_vec_pretty(&v).ok()?
    } else {
        serde_json::to_vec(&v).ok()?
    });
    Some(out)
}

fn lines(data: &[u8]) -> Vec<Vec<u8>> {
    data.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect()
}

fn join(lines: &[Vec<u8>]) -> Vec<u8> {
    lines.join(&b'\n')
}

/// One to four mutations of `input`; `other` is another seed to splice from.
fn mutate(rng: &mut Rng, input: &[u8], other: &[u8]) -> Vec<u8> {
    let mut data = input.to_vec();
    let mut ids = Vec::new();
    for l in data.split(|&b| b == b'\n').take(500) {
        if let Some(s) = l.iter().position(|&b| b == b'{') {
            if let Ok(v) = serde_json::from_slice::<Value>(&l[s..]) {
                id_strings(&v, &mut ids);
            }
        }
    }
    for _ in 0..1 + rng.below(4) {
        let n = data.len();
        match rng.below(14) {
            // JSON-aware, the most productive: weighted x5.
            0..=4 => {
                let mut ls = lines(&data);
                let whole = ls.len() <= 1 || (data.first().is_some_and(|&b| b < 8));
                if whole {
                    if let Some(m) = mutate_json_in(rng, &data, &ids) {
                        data = m;
                    }
                } else {
                    let i = rng.below(ls.len());
                    if let Some(m) = mutate_json_in(rng, &ls[i], &ids) {
                        ls[i] = m;
                        data = join(&ls);
                    }
                }
            }
            5 => {
                // Duplicate a line (duplicate ids), maybe elsewhere.
                let mut ls = lines(&data);
                let i = rng.below(ls.len());
                let l = ls[i].clone();
                ls.insert(rng.below(ls.len() + 1), l);
                data = join(&ls);
            }
            6 => {
                let mut ls = lines(&data);
                if ls.len() > 1 {
                    ls.remove(rng.below(ls.len()));
                }
                data = join(&ls);
            }
            7 => {
                let mut ls = lines(&data);
                let (a, b) = (rng.below(ls.len()), rng.below(ls.len()));
                ls.swap(a, b);
                data = join(&ls);
            }
            8 => {
                // Splice a line of another seed.
                let mut ls = lines(&data);
                let os = lines(other);
                let l = os[rng.below(os.len())].clone();
                ls.insert(rng.below(ls.len() + 1), l);
                data = join(&ls);
            }
            9 => {
                // Cut the tail (a torn last line).
                data.truncate(rng.below(n + 1));
            }
            10 if n > 0 => {
                let i = rng.below(n);
                data[i] ^= 1 << rng.below(8);
            }
            11 => {
                let t = TOKENS[rng.below(TOKENS.len())].as_bytes();
                let i = rng.below(n + 1);
                data.splice(i..i, t.iter().copied());
            }
            12 if n > 0 => {
                let i = rng.below(n);
                let j = (i + 1 + rng.below(64)).min(n);
                data.drain(i..j);
            }
            _ => {
                if n > 0 {
                    let i = rng.below(n);
                    data[i] = rng.next() as u8;
                }
            }
        }
    }
    data
}

/// Seeds of `name`: from the fixtures, plus the files of
/// `$SD_FUZZ_EXTRA_CORPUS/<name>/` when set (e.g. `fuzz/run-corpus`, what
/// libFuzzer grew), at most 2000 of them.
fn corpus(name: &str) -> Vec<Vec<u8>> {
    let mut seeds = session_doctor::fuzz::seeds(name, &fixtures());
    let Some(extra) = std::env::var_os("SD_FUZZ_EXTRA_CORPUS").map(PathBuf::from) else {
        return seeds;
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(extra.join(name))
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    for f in files.into_iter().take(2000) {
        if let Ok(b) = std::fs::read(&f) {
            if !seeds.contains(&b) {
                seeds.push(b);
            }
        }
    }
    seeds
}

fn fuzz(name: &str) {
    let target = session_doctor::fuzz::target(name).expect("a known target");
    let seeds = corpus(name);
    assert!(!seeds.is_empty(), "{name}: no seeds from the fixtures");
    let known = known();
    let (base, seed) = seed_of(name);
    let mut rng = Rng(seed);
    let deadline = Instant::now() + budget();
    let saved = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-crashes");
    let mut crashes: Vec<(PathBuf, String)> = Vec::new();
    let mut known_hits: std::collections::BTreeMap<String, u64> = Default::default();
    let mut runs = 0u64;
    let mut run = |input: &[u8], crashes: &mut Vec<(PathBuf, String)>| {
        runs += 1;
        if let Err((sig, msg)) = call(target, input) {
            if is_known(&sig, &known) {
                *known_hits.entry(sig).or_default() += 1;
                return;
            }
            if crashes
                .iter()
                .any(|(_, m)| m.starts_with(&format!("[{sig}]")))
            {
                return; // one input per signature
            }
            let hash = input.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
                (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
            });
            let _ = std::fs::create_dir_all(&saved);
            let f = saved.join(format!("{name}-{hash:016x}.bin"));
            let _ = std::fs::write(&f, input);
            crashes.push((f, format!("[{sig}] {msg}")));
        }
    };
    // The seeds first (all of them: a regression run), then mutations.
    for s in &seeds {
        run(s, &mut crashes);
    }
    while Instant::now() < deadline && crashes.len() < 10 {
        let a = &seeds[rng.below(seeds.len())];
        let b = &seeds[rng.below(seeds.len())];
        let input = mutate(&mut rng, a, b);
        run(&input, &mut crashes);
    }
    println!(
        "fuzz {name}: {runs} iterations, seed corpus {}, crashes {} (known, not fixed yet: {}) (SD_FUZZ_SEED={base})",
        seeds.len(),
        crashes.len(),
        known_hits.values().sum::<u64>()
    );
    for (sig, n) in &known_hits {
        println!("  known crash x{n}: {sig}");
    }
    assert!(
        crashes.is_empty(),
        "{name}: {} new crash signature(s):\n{}",
        crashes.len(),
        crashes
            .iter()
            .map(|(f, m)| format!("{}: {m}", f.display()))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// Replays every saved crash input (`tests/fuzz_crashes/<target>-<n>.bin`)
/// through its target: a panic fails unless its signature is in `known.txt`;
/// a known crash that no longer happens is reported (remove its line).
#[test]
fn fuzz_crashes_replay() {
    let known = known();
    let mut files: Vec<PathBuf> = std::fs::read_dir(crash_dir())
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.retain(|f| f.extension().is_some_and(|x| x == "bin"));
    files.sort();
    let mut failures = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for f in &files {
        let stem = f.file_stem().unwrap().to_string_lossy().into_owned();
        let name = stem.rsplit_once('-').map_or(stem.as_str(), |(n, _)| n);
        let target = session_doctor::fuzz::target(name)
            .unwrap_or_else(|| panic!("{}: no target {name}", f.display()));
        let input = std::fs::read(f).unwrap();
        match call(target, &input) {
            Ok(()) => println!("{stem}: no crash (fixed)"),
            Err((sig, _)) if is_known(&sig, &known) => {
                println!("{stem}: still crashes (known): {sig}");
                seen.insert(sig);
            }
            Err((sig, msg)) => failures.push(format!("{stem}: [{sig}] {msg}")),
        }
    }
    let seen_kinds: std::collections::BTreeSet<String> = seen
        .iter()
        .flat_map(
            |s: &String| match s.strip_prefix("src/fuzz.rs: repair promise broken: ") {
                Some(kinds) => kinds
                    .split(", ")
                    .map(|k| format!("src/fuzz.rs: repair promise broken: {k}"))
                    .collect::<Vec<_>>(),
                None => vec![s.clone()],
            },
        )
        .collect();
    for k in &known {
        if !seen_kinds.contains(k) {
            println!("known crash no longer seen (fixed? remove it from known.txt): {k}");
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn fuzz_opencode_message() {
    fuzz("opencode_message");
}

#[test]
fn fuzz_opencode_part() {
    fuzz("opencode_part");
}

#[test]
fn fuzz_legacy_file() {
    fuzz("legacy_file");
}

#[test]
fn fuzz_claude_line() {
    fuzz("claude_line");
}

#[test]
fn fuzz_claude_transcript() {
    fuzz("claude_transcript");
}

#[test]
fn fuzz_codex_line() {
    fuzz("codex_line");
}

#[test]
fn fuzz_codex_rollout() {
    fuzz("codex_rollout");
}

#[test]
fn fuzz_whole_claude() {
    fuzz("whole_claude");
}

#[test]
fn fuzz_whole_codex() {
    fuzz("whole_codex");
}

#[test]
fn fuzz_whole_opencode_db() {
    fuzz("whole_opencode_db");
}

#[test]
fn fuzz_whole_legacy() {
    fuzz("whole_legacy");
}

#[test]
fn fuzz_whole_hermes() {
    fuzz("whole_hermes");
}

#[test]
fn fuzz_whole_docker_agent() {
    fuzz("whole_docker_agent");
}

/// Every target is tested here (a new target in `session_doctor::fuzz::TARGETS`
/// needs its test above).
#[test]
fn every_target_has_a_test() {
    let src = include_str!("fuzz.rs");
    for (name, _) in session_doctor::fuzz::TARGETS {
        assert!(
            src.contains(&format!("fuzz(\"{name}\")")),
            "target {name} has no test in tests/fuzz.rs"
        );
    }
}

/// Every node removal and string cut of the JSON in `bytes` (after its
/// first `{`/`[`), one candidate each.
fn json_reductions(bytes: &[u8]) -> Vec<Vec<u8>> {
    let Some(start) = bytes.iter().position(|&b| b == b'{' || b == b'[') else {
        return Vec::new();
    };
    let Ok(v) = serde_json::from_slice::<Value>(&bytes[start..]) else {
        return Vec::new();
    };
    let pretty = bytes[start..].contains(&b'\n');
    let mut ptrs = Vec::new();
    pointers(&v, String::new(), &mut ptrs, 20_000);
    let emit = |w: &Value| {
        let mut out = bytes[..start].to_vec();
        out.extend(if pretty {
            serde_json::to_vec_pretty(w).unwrap_or_default()
        } else {
            serde_json::to_vec(w).unwrap_or_default()
        });
        out
    };
    let mut out = Vec::new();
    for p in ptrs.iter().skip(1) {
        let (parent, last) = p.rsplit_once('/').unwrap_or(("", ""));
        let mut w = v.clone();
        match w.pointer_mut(parent) {
            Some(Value::Object(o)) => {
                o.remove(&last.replace("~1", "/").replace("~0", "~"));
            }
            Some(Value::Array(a)) => {
                if let Ok(i) = last.parse::<usize>() {
                    if i < a.len() {
                        a.remove(i);
                    }
                }
            }
            _ => continue,
        }
        out.push(emit(&w));
    }
    for p in &ptrs {
        if let Some(Value::String(s)) = v.pointer(p) {
            if s.chars().count() > 8 {
                let mut w = v.clone();
                if let Some(x) = w.pointer_mut(p) {
                    *x = Value::String(s.chars().take(8).collect());
                }
                out.push(emit(&w));
            }
        }
    }
    out
}

/// Shrinks a crash input keeping its panic signature: drops lines, JSON
/// nodes, and cuts strings, until nothing more can go.
/// `SD_FUZZ_MINIMIZE=<target>-<x>.bin cargo test --test fuzz -- --ignored fuzz_minimize`
/// writes `<file>.min`.
#[test]
#[ignore]
fn fuzz_minimize() {
    let Some(path) = std::env::var_os("SD_FUZZ_MINIMIZE").map(PathBuf::from) else {
        return;
    };
    let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
    let name = stem.rsplit_once('-').map_or(stem.as_str(), |(n, _)| n);
    let target = session_doctor::fuzz::target(name).expect("a target name before the last '-'");
    let mut cur = std::fs::read(&path).unwrap();
    let (sig, full) = call(target, &cur).expect_err("the input does not crash");
    println!(
        "signature: {sig}\npanic: {}",
        full.chars().take(700).collect::<String>()
    );
    let same = |c: &[u8]| call(target, c).err().is_some_and(|(s, _)| s == sig);
    loop {
        let before = cur.len();
        // Lines, from the end.
        let mut i = lines(&cur).len();
        while i > 0 {
            i -= 1;
            let mut ls = lines(&cur);
            if i >= ls.len() || ls.len() < 2 {
                continue;
            }
            ls.remove(i);
            let c = join(&ls);
            if same(&c) {
                cur = c;
            }
        }
        // JSON nodes, line by line (the whole input when it is one document).
        let n = lines(&cur).len();
        for i in 0..n {
            loop {
                let ls = lines(&cur);
                let whole = cur.first().is_some_and(|&b| b < 8) || ls.len() == 1;
                let target_bytes = if whole { cur.clone() } else { ls[i].clone() };
                let found = json_reductions(&target_bytes).into_iter().find(|r| {
                    let c = if whole {
                        r.clone()
                    } else {
                        let mut ls = ls.clone();
                        ls[i] = r.clone();
                        join(&ls)
                    };
                    same(&c)
                });
                match found {
                    Some(r) => {
                        cur = if whole {
                            r
                        } else {
                            let mut ls = ls.clone();
                            ls[i] = r;
                            join(&ls)
                        };
                    }
                    None => break,
                }
            }
            if cur.first().is_some_and(|&b| b < 8) || lines(&cur).len() == 1 {
                break;
            }
        }
        if cur.len() >= before {
            break;
        }
    }
    let out = path.with_extension("bin.min");
    std::fs::write(&out, &cur).unwrap();
    println!(
        "{} -> {} bytes: {}",
        path.display(),
        cur.len(),
        out.display()
    );
}

/// Writes the seed corpus of every target (`seeds` from the fixtures) to
/// `$SD_FUZZ_CORPUS_OUT/<target>/<hash>` for cargo-fuzz; run by
/// `fuzz/make_corpus.sh`.
#[test]
#[ignore]
fn fuzz_write_corpus() {
    let Some(out) = std::env::var_os("SD_FUZZ_CORPUS_OUT").map(PathBuf::from) else {
        return;
    };
    for (name, _) in session_doctor::fuzz::TARGETS {
        let dir = out.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let seeds = session_doctor::fuzz::seeds(name, &fixtures());
        for s in &seeds {
            let hash = s.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
                (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
            });
            std::fs::write(dir.join(format!("seed-{hash:016x}")), s).unwrap();
        }
        println!("{name}: {} seeds in {}", seeds.len(), dir.display());
    }
}

/// Replays every file in `$SD_FUZZ_REPLAY_DIR` (a cargo-fuzz artifacts
/// folder) through target `$SD_FUZZ_TARGET` and sorts the crashes into known
/// (`known.txt`) and new signatures; run by `scripts/fuzz_long.sh`. Prints
/// `replay <target>: <files> file(s), <crashing> crash(es), <known> known, <new> new`.
#[test]
#[ignore]
fn fuzz_replay_dir() {
    let (Some(dir), Ok(name)) = (
        std::env::var_os("SD_FUZZ_REPLAY_DIR").map(PathBuf::from),
        std::env::var("SD_FUZZ_TARGET"),
    ) else {
        return;
    };
    let target = session_doctor::fuzz::target(&name).expect("a known target");
    let known = known();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let (mut crashing, mut n_known) = (0, 0);
    let mut new: std::collections::BTreeMap<String, PathBuf> = Default::default();
    let mut by_sig: std::collections::BTreeMap<String, usize> = Default::default();
    for f in &files {
        let Ok(input) = std::fs::read(f) else {
            continue;
        };
        if let Err((sig, _)) = call(target, &input) {
            crashing += 1;
            *by_sig.entry(sig.clone()).or_default() += 1;
            if is_known(&sig, &known) {
                n_known += 1;
            } else {
                new.entry(sig).or_insert_with(|| f.clone());
            }
        }
    }
    for (sig, n) in &by_sig {
        println!("replay {name}: x{n} {sig}");
    }
    println!(
        "replay {name}: {} file(s), {crashing} crash(es), {n_known} known, {} new",
        files.len(),
        crashing - n_known
    );
    for (sig, f) in &new {
        println!("replay {name}: new: {sig} ({})", f.display());
    }
}
