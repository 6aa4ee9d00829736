//! Reads every line of the Claude Code transcripts under a corpus folder
//! (default: the many-sessions 100 MB corpus of `benches/run.sh`) into
//! memory, then times, on one thread, four ways of taking a line's
//! top-level fields without a tree, and one floor:
//! - serde_json typed, fields borrowed as `&RawValue` (what session-doctor
//!   does: `formats::claude::parse::Fields`);
//! - sonic-rs typed through serde, fields as `LazyValue`;
//! - sonic-rs `to_object_iter` (its lazy SIMD skipping), `message` walked too;
//! - simd-json's tape of the whole line (a copy of each line, parsed in place);
//! - memchr counting the quotes (reads every byte once: the floor).
//! Prints GB/s for each over seven rounds, and each reader's median.
//! Figures in README.md.

use serde::Deserialize;
use serde_json::value::RawValue;
use std::time::Instant;

type RawJ<'a> = Option<&'a RawValue>;

#[derive(Deserialize, Default)]
#[serde(default)]
struct MessageJ<'a> {
    #[serde(borrow)]
    id: RawJ<'a>,
    #[serde(borrow)]
    model: RawJ<'a>,
    #[serde(borrow)]
    content: RawJ<'a>,
    #[serde(borrow)]
    usage: RawJ<'a>,
    #[serde(borrow)]
    stop_reason: RawJ<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct FieldsJ<'a> {
    #[serde(borrow)]
    uuid: RawJ<'a>,
    #[serde(borrow, rename = "parentUuid")]
    parent: RawJ<'a>,
    #[serde(borrow, rename = "type")]
    ty: RawJ<'a>,
    #[serde(borrow)]
    timestamp: RawJ<'a>,
    #[serde(borrow)]
    message: Option<MessageJ<'a>>,
    #[serde(borrow, rename = "toolUseResult")]
    tool_use_result: RawJ<'a>,
    #[serde(borrow)]
    attachment: RawJ<'a>,
    #[serde(borrow)]
    summary: RawJ<'a>,
}

type RawS<'a> = Option<sonic_rs::LazyValue<'a>>;

#[derive(Deserialize, Default)]
#[serde(default)]
struct MessageS<'a> {
    #[serde(borrow)]
    id: RawS<'a>,
    #[serde(borrow)]
    model: RawS<'a>,
    #[serde(borrow)]
    content: RawS<'a>,
    #[serde(borrow)]
    usage: RawS<'a>,
    #[serde(borrow)]
    stop_reason: RawS<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct FieldsS<'a> {
    #[serde(borrow)]
    uuid: RawS<'a>,
    #[serde(borrow, rename = "parentUuid")]
    parent: RawS<'a>,
    #[serde(borrow, rename = "type")]
    ty: RawS<'a>,
    #[serde(borrow)]
    timestamp: RawS<'a>,
    #[serde(borrow)]
    message: Option<MessageS<'a>>,
    #[serde(borrow, rename = "toolUseResult")]
    tool_use_result: RawS<'a>,
    #[serde(borrow)]
    attachment: RawS<'a>,
    #[serde(borrow)]
    summary: RawS<'a>,
}

/// GB/s of `bytes` read in `secs`.
fn rate(bytes: usize, secs: f64) -> f64 {
    bytes as f64 / secs / 1e9
}

fn main() {
    let dir = std::env::args().nth(1).unwrap_or_else(|| {
        let home = std::env::var("HOME").unwrap_or_default();
        format!("{home}/.cache/session-doctor-bench/many-100M-a79e891de1e1/claude")
    });
    let mut files = Vec::new();
    for e in walkdir::WalkDir::new(&dir).sort_by_file_name() {
        let e = e.expect("walk");
        if e.path().extension().is_some_and(|x| x == "jsonl") {
            files.push(std::fs::read(e.path()).expect("read"));
        }
    }
    let lines: Vec<&[u8]> = files
        .iter()
        .flat_map(|d| d.split(|&b| b == b'\n').filter(|l| !l.is_empty()))
        .collect();
    let bytes: usize = lines.iter().map(|l| l.len()).sum();
    println!(
        "{dir}: {} files, {} lines, {bytes} bytes",
        files.len(),
        lines.len()
    );
    println!(" round  serde_json  sonic-serde  sonic-iter  simd-json-tape  memchr-floor   (GB/s, one thread)");
    let rounds = 7;
    let mut all: Vec<[f64; 5]> = Vec::new();
    for round in 1..=rounds {
        // Each reader sums what it found, so nothing is optimized away and
        // the readers can be checked against each other.
        let t = Instant::now();
        let mut found_j = 0usize;
        for l in &lines {
            if let Ok(f) = std::str::from_utf8(l)
                .map_err(|_| ())
                .and_then(|s| serde_json::from_str::<FieldsJ>(s).map_err(|_| ()))
            {
                found_j += f.uuid.map_or(0, |u| u.get().len())
                    + f.message
                        .and_then(|m| m.content)
                        .map_or(0, |c| c.get().len());
            }
        }
        let a = t.elapsed().as_secs_f64();

        let t = Instant::now();
        let mut found_s = 0usize;
        for l in &lines {
            if let Ok(f) = sonic_rs::from_slice::<FieldsS>(l) {
                found_s += f.uuid.map_or(0, |u| u.as_raw_str().len())
                    + f.message
                        .and_then(|m| m.content)
                        .map_or(0, |c| c.as_raw_str().len());
            }
        }
        let b = t.elapsed().as_secs_f64();

        let t = Instant::now();
        let mut found_i = 0usize;
        for l in &lines {
            let Ok(s) = std::str::from_utf8(l) else {
                continue;
            };
            for kv in sonic_rs::to_object_iter(s) {
                let Ok((k, v)) = kv else { break };
                if k == "uuid" {
                    found_i += v.as_raw_str().len();
                } else if k == "message" {
                    for kv in sonic_rs::to_object_iter(v.as_raw_str()).flatten() {
                        if kv.0 == "content" {
                            found_i += kv.1.as_raw_str().len();
                        }
                    }
                }
            }
        }
        let c = t.elapsed().as_secs_f64();

        let t = Instant::now();
        let mut tape = 0usize;
        let mut buf = Vec::new();
        let mut buffers = simd_json::Buffers::default();
        for l in &lines {
            buf.clear();
            buf.extend_from_slice(l);
            if let Ok(d) = simd_json::Deserializer::from_slice_with_buffers(&mut buf, &mut buffers)
            {
                tape += d.into_tape().0.len();
            }
        }
        let d = t.elapsed().as_secs_f64();

        let t = Instant::now();
        let mut quotes = 0usize;
        for l in &lines {
            quotes += memchr::memchr_iter(b'"', l).count();
        }
        let e = t.elapsed().as_secs_f64();
        let r = [a, b, c, d, e].map(|t| rate(bytes, t));
        println!(
            "{round:>6}  {:>10.2}  {:>11.2}  {:>10.2}  {:>14.2}  {:>12.2}   (found {found_j} / {found_s} / {found_i}; tape {tape}; quotes {quotes})",
            r[0], r[1], r[2], r[3], r[4]
        );
        all.push(r);
    }
    let median = |k: usize| {
        let mut v: Vec<f64> = all.iter().map(|r| r[k]).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!(
        "median  {:>10.2}  {:>11.2}  {:>10.2}  {:>14.2}  {:>12.2}",
        median(0),
        median(1),
        median(2),
        median(3),
        median(4)
    );
}
