//! Regression tests for issue 7 ("Originals are sacred under every flag and
//! every input"), one per item, named after it.

mod common;

use common::*;
use predicates::str::contains;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn cc_gen(scenario: &str) -> PathBuf {
    fixtures()
        .join("claude-code/claude-code-gen")
        .join(scenario)
}

/// The one `.jsonl` directly in a claude-code-gen scenario folder.
fn claude_file(scenario: &str) -> PathBuf {
    walkdir::WalkDir::new(cc_gen(scenario))
        .into_iter()
        .map(|e| e.unwrap().into_path())
        .find(|p| {
            p.extension().is_some_and(|x| x == "jsonl")
                && !p.to_string_lossy().contains("subagents")
                && !p
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("agent-")
        })
        .expect("a transcript")
}

fn codex_rollout() -> PathBuf {
    walkdir::WalkDir::new(fixtures().join("codex/codex-gen/multi"))
        .into_iter()
        .map(|e| e.unwrap().into_path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("rollout-")
        })
        .expect("a rollout")
}

fn run_json(args: &[&std::ffi::OsStr]) -> (Option<i32>, Value, String) {
    let out = bin().args(args).output().unwrap();
    let doc = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (
        out.status.code(),
        doc,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn os(s: &str) -> &std::ffi::OsStr {
    std::ffi::OsStr::new(s)
}

/// A db with a `-wal` and `-shm` holding a change not yet in the main file
/// (copied while the writer is open, as a crash leaves them).
fn db_with_wal(src_db: &Path, dst_dir: &Path, name: &str) {
    let work = tempfile::tempdir().unwrap();
    let db = work.path().join(name);
    std::fs::copy(src_db, &db).unwrap();
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.query_row("PRAGMA journal_mode=WAL", [], |_| Ok(()))
        .unwrap();
    conn.execute_batch(
        "PRAGMA wal_autocheckpoint=0; UPDATE session SET title='title only in the wal';",
    )
    .unwrap();
    std::fs::create_dir_all(dst_dir).unwrap();
    for sfx in ["", "-wal", "-shm"] {
        std::fs::copy(
            work.path().join(format!("{name}{sfx}")),
            dst_dir.join(format!("{name}{sfx}")),
        )
        .unwrap();
    }
    drop(conn);
}

// ---------------------------------------------------------------------------
// Item 1: data loss.

#[test]
fn issue7_item1_force_into_the_folder_holding_the_sources_removes_nothing() {
    let t = tempfile::tempdir().unwrap();
    let s = t.path().join("S");
    std::fs::create_dir_all(s.join("opencode")).unwrap();
    std::fs::create_dir_all(s.join("kilo")).unwrap();
    std::fs::copy(
        oc("plain").join("opencode.db"),
        s.join("opencode/opencode.db"),
    )
    .unwrap();
    std::fs::copy(oc("kilo").join("kilo.db"), s.join("kilo/kilo.db")).unwrap();
    let before = snapshot(&s);
    bin()
        .args(["repair", "--force", "--out"])
        .arg(&s)
        .arg(s.join("opencode"))
        .arg(s.join("kilo"))
        .assert()
        .code(2)
        .stderr(contains("refusing"));
    assert_eq!(before, snapshot(&s), "an original was touched");

    // The same with a -wal beside the opencode db (it was replaced before).
    let w = t.path().join("W");
    db_with_wal(
        &oc("plain").join("opencode.db"),
        &w.join("opencode"),
        "opencode.db",
    );
    std::fs::create_dir_all(w.join("kilo")).unwrap();
    std::fs::copy(oc("kilo").join("kilo.db"), w.join("kilo/kilo.db")).unwrap();
    let before = snapshot(&w);
    {
        let files = vec![w.join("opencode"), w.join("kilo")];
        bin()
            .args(["repair", "--force", "--out"])
            .arg(&w)
            .args(&files)
            .assert()
            .code(2)
            .stderr(contains("refusing"));
        // The same folder reached through `..` and through a symbolic link.
        bin()
            .args(["repair", "--force", "--out"])
            .arg(w.join("kilo/.."))
            .args(&files)
            .assert()
            .code(2);
        let link = t.path().join("link-to-W");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&w, &link).unwrap();
        bin()
            .args(["repair", "--force", "--out"])
            .arg(&link)
            .args(&files)
            .assert()
            .code(2);
    }
    assert_eq!(
        before,
        snapshot(&w),
        "an original or its side file was touched"
    );
}

#[test]
fn issue7_item1_force_never_replaces_a_legacy_tree_or_a_transcript() {
    let t = tempfile::tempdir().unwrap();
    // A legacy storage/ tree: --out its parent would write storage/ over it.
    let l = t.path().join("L");
    copy_dir(&oc("legacy-1.1.65").join("storage"), &l.join("storage"));
    let before = snapshot(&l);
    bin()
        .args(["repair", "--force", "--out"])
        .arg(&l)
        .arg(l.join("storage"))
        .assert()
        .code(2)
        .stderr(contains("refusing"));
    assert_eq!(before, snapshot(&l));
    // A Claude transcript in a config dir: --out the config dir would write
    // projects/<cwd>/<id>.jsonl over it.
    let c = t.path().join("claude");
    let f = claude_file("multi");
    let dst = c.join("projects/-home-dev-p");
    std::fs::create_dir_all(&dst).unwrap();
    std::fs::copy(&f, dst.join(f.file_name().unwrap())).unwrap();
    let before = snapshot(&c);
    bin()
        .args(["repair", "--force", "--out"])
        .arg(&c)
        .arg(dst.join(f.file_name().unwrap()))
        .assert()
        .code(2)
        .stderr(contains("refusing"));
    assert_eq!(before, snapshot(&c));
}

#[test]
fn issue7_item1_force_replaces_only_copies_this_tool_wrote() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("out");
    std::fs::create_dir_all(out.join("storage/keep")).unwrap();
    std::fs::write(out.join("opencode.db"), b"not a copy of ours").unwrap();
    std::fs::write(out.join("storage/keep/x.json"), b"{}").unwrap();
    let before = snapshot(&out);
    for src in [oc("plain"), oc("legacy-1.1.65")] {
        bin()
            .args(["repair", "--force", "--out"])
            .arg(&out)
            .arg(&src)
            .assert()
            .code(2)
            .stderr(contains("not written by session-doctor"));
    }
    assert_eq!(before, snapshot(&out));
    // A copy it wrote itself is replaced.
    let out2 = t.path().join("out2");
    for _ in 0..2 {
        bin()
            .args(["repair", "--force", "--out"])
            .arg(&out2)
            .arg(oc("legacy-1.1.65"))
            .assert()
            .success();
    }
    assert!(out2.join("storage/session").is_dir());
}

// ---------------------------------------------------------------------------
// Item 2: panic on a multi-byte rollout name.

#[test]
fn issue7_item2_a_multibyte_rollout_name_does_not_panic_and_the_rest_is_read() {
    let t = tempfile::tempdir().unwrap();
    let name = format!("rollout-{}a.jsonl", "é".repeat(30));
    std::fs::copy(codex_rollout(), t.path().join(&name)).unwrap();
    copy_dir(&oc("plain"), &t.path().join("plain"));
    let (code, doc, err) =
        run_json(&[os("list"), os("--format"), os("json"), t.path().as_os_str()]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(doc["sessions"].as_array().unwrap().len(), 2, "{doc:#}");
}

// ---------------------------------------------------------------------------
// Item 3: databases with a -wal are read from a consistent snapshot and every
// copy is verified.

#[test]
fn issue7_item3_a_wal_database_is_read_whole_and_its_copy_verified() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("store");
    db_with_wal(&oc("plain").join("opencode.db"), &dir, "opencode.db");
    let before = snapshot(&dir);
    let (code, doc, err) = run_json(&[os("list"), os("--format"), os("json"), dir.as_os_str()]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(doc["sessions"][0]["title"], "title only in the wal");
    let out = t.path().join("out");
    bin()
        .arg("repair")
        .arg(&dir)
        .arg("--out")
        .arg(&out)
        .assert()
        .success();
    let c = rusqlite::Connection::open(out.join("opencode.db")).unwrap();
    let ok: String = c
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ok, "ok");
    assert_eq!(before, snapshot(&dir));
}

#[test]
fn issue7_item3_a_malformed_database_is_an_error_not_a_healthy_exit() {
    let t = tempfile::tempdir().unwrap();
    let db = t.path().join("opencode.db");
    let bytes = std::fs::read(oc("plain").join("opencode.db")).unwrap();
    // Keep the header and the first page, garble the rest.
    let mut b = bytes.clone();
    for x in b.iter_mut().skip(4096) {
        *x = 0xA5;
    }
    std::fs::write(&db, &b).unwrap();
    for cmd in ["list", "check"] {
        let (code, doc, _) = run_json(&[os(cmd), os("--format"), os("json"), db.as_os_str()]);
        assert_eq!(code, Some(2), "{cmd}: {doc:#}");
        assert!(
            doc["errors"][0]["path"]
                .as_str()
                .unwrap()
                .ends_with("opencode.db"),
            "{doc:#}"
        );
    }
}

// ---------------------------------------------------------------------------
// Item 4: a hot journal is rolled back in a private copy.

/// A rollback-mode opencode db whose writer stopped mid-transaction: the
/// db file holds uncommitted pages, the `-journal` the originals.
fn hot_journal(dst: &Path) -> usize {
    let work = tempfile::tempdir().unwrap();
    let db = work.path().join("opencode.db");
    std::fs::copy(oc("plain").join("opencode.db"), &db).unwrap();
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.query_row("PRAGMA journal_mode=DELETE", [], |_| Ok(()))
        .unwrap();
    let messages: usize = conn
        .query_row("SELECT count(*) FROM message", [], |r| r.get(0))
        .unwrap();
    conn.execute_batch(
        "PRAGMA cache_size=1; BEGIN; DELETE FROM message; \
         CREATE TABLE junk(x); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i<3000) \
         INSERT INTO junk SELECT randomblob(1000) FROM n;",
    )
    .unwrap();
    assert!(work.path().join("opencode.db-journal").exists());
    std::fs::create_dir_all(dst).unwrap();
    for f in ["opencode.db", "opencode.db-journal"] {
        std::fs::copy(work.path().join(f), dst.join(f)).unwrap();
    }
    drop(conn);
    messages
}

#[test]
fn issue7_item4_a_hot_journal_is_rolled_back_in_a_private_copy() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("store");
    let messages = hot_journal(&dir);
    let before = snapshot(&dir);
    let (code, doc, err) = run_json(&[os("list"), os("--format"), os("json"), dir.as_os_str()]);
    assert_eq!(code, Some(0), "{err} {doc:#}");
    assert_eq!(doc["sessions"].as_array().unwrap().len(), 1);
    assert_eq!(doc["sessions"][0]["messages"], messages);
    let out = t.path().join("out");
    bin()
        .arg("repair")
        .arg(&dir)
        .arg("--out")
        .arg(&out)
        .assert()
        .success();
    let c = rusqlite::Connection::open(out.join("opencode.db")).unwrap();
    let n: usize = c
        .query_row("SELECT count(*) FROM message", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, messages);
    assert!(!out.join("opencode.db-journal").exists());
    assert_eq!(before, snapshot(&dir));
}

// ---------------------------------------------------------------------------
// Item 5: private copies are private and cleaned up.

fn run_dirs(cache: &Path) -> Vec<PathBuf> {
    match std::fs::read_dir(cache.join("session-doctor/tmp")) {
        Ok(rd) => rd.map(|e| e.unwrap().path()).collect(),
        Err(_) => Vec::new(),
    }
}

#[test]
fn issue7_item5_private_copies_are_0700_and_removed_after_the_run() {
    use std::os::unix::fs::PermissionsExt;
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("store");
    db_with_wal(&oc("plain").join("opencode.db"), &dir, "opencode.db");
    let cache = t.path().join("cache");
    // A folder left by a killed run (its process is gone) is reclaimed.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let stale = cache.join(format!("session-doctor/tmp/run-{dead}-x"));
    std::fs::create_dir_all(&stale).unwrap();
    std::fs::write(stale.join("snapshot.db"), b"x").unwrap();
    bin()
        .env("XDG_CACHE_HOME", &cache)
        .arg("check")
        .arg(&dir)
        .assert()
        .success();
    let base = cache.join("session-doctor/tmp");
    assert_eq!(
        std::fs::metadata(&base).unwrap().permissions().mode() & 0o777,
        0o700
    );
    assert!(run_dirs(&cache).is_empty(), "{:?}", run_dirs(&cache));
}

#[test]
fn issue7_item5_sigint_removes_the_private_copy_and_exits_130() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("store");
    // A big db with a -wal, so the snapshot takes a while.
    let work = t.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let db = work.join("opencode.db");
    std::fs::copy(oc("plain").join("opencode.db"), &db).unwrap();
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.query_row("PRAGMA journal_mode=WAL", [], |_| Ok(()))
        .unwrap();
    conn.execute_batch(
        "PRAGMA wal_autocheckpoint=0; CREATE TABLE junk(x); \
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i<150000) \
         INSERT INTO junk SELECT randomblob(1000) FROM n;",
    )
    .unwrap();
    std::fs::create_dir_all(&dir).unwrap();
    for sfx in ["", "-wal", "-shm"] {
        std::fs::copy(
            work.join(format!("opencode.db{sfx}")),
            dir.join(format!("opencode.db{sfx}")),
        )
        .unwrap();
    }
    drop(conn);
    let cache = t.path().join("cache");
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin!("session-doctor"));
    hermetic(&mut cmd);
    let mut child = cmd
        .env("XDG_CACHE_HOME", &cache)
        .arg("repair")
        .arg(&dir)
        .arg("--out")
        .arg(t.path().join("out"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while run_dirs(&cache).is_empty() && start.elapsed() < Duration::from_secs(20) {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    if child.try_wait().unwrap().is_none() {
        rustix::process::kill_process(
            rustix::process::Pid::from_child(&child),
            rustix::process::Signal::INT,
        )
        .unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(130));
    } else {
        eprintln!("the run ended before it could be interrupted; only the clean-up is checked");
    }
    assert!(run_dirs(&cache).is_empty(), "{:?}", run_dirs(&cache));
    // No temp file is left in the output folder either.
    if let Ok(rd) = std::fs::read_dir(t.path().join("out")) {
        for e in rd {
            let n = e.unwrap().file_name().to_string_lossy().into_owned();
            assert!(!n.ends_with(".tmp"), "{n}");
        }
    }
}

// ---------------------------------------------------------------------------
// Items 6 and 7: FIFOs and devices never hang or eat memory.

fn mkfifo(p: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        p,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
}

/// Runs the binary with a 30 s timeout; `None` on a hang.
fn run_timed(args: &[&std::ffi::OsStr]) -> Option<std::process::Output> {
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin!("session-doctor"));
    hermetic(&mut cmd);
    let mut child = cmd
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return Some(child.wait_with_output().unwrap());
        }
        if start.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn issue7_item6_fifos_in_a_legacy_tree_and_as_a_wal_do_not_hang() {
    let t = tempfile::tempdir().unwrap();
    let storage = t.path().join("legacy/storage");
    copy_dir(&oc("legacy-1.1.65").join("storage"), &storage);
    let msg_dir = std::fs::read_dir(storage.join("message"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let fifo = msg_dir.join("msg_fifo.json");
    mkfifo(&fifo);
    let out = run_timed(&[os("check"), os("--format"), os("json"), storage.as_os_str()])
        .expect("check hung on a FIFO in a legacy tree");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let unreadable = with_code(&doc, "unreadable");
    assert!(
        unreadable.iter().any(|f| f["place"]
            .as_str()
            .is_some_and(|l| l.contains("msg_fifo.json"))
            && f["error"].as_str().is_some_and(|e| e.contains("FIFO"))),
        "{doc:#}"
    );
    // The copy skips it and is written.
    let o = run_timed(&[
        os("repair"),
        storage.as_os_str(),
        os("--out"),
        t.path().join("out").as_os_str(),
    ])
    .expect("repair hung on a FIFO");
    assert_eq!(o.status.code(), Some(0));

    let w = t.path().join("wal");
    std::fs::create_dir_all(&w).unwrap();
    std::fs::copy(oc("plain").join("opencode.db"), w.join("opencode.db")).unwrap();
    mkfifo(&w.join("opencode.db-wal"));
    let out = run_timed(&[os("list"), w.join("opencode.db").as_os_str()])
        .expect("list hung on a FIFO -wal");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("opencode.db-wal") && err.contains("FIFO"),
        "{err}"
    );
}

#[test]
fn issue7_item7_dev_zero_as_a_json_file_or_models_json_is_refused_by_type() {
    let t = tempfile::tempdir().unwrap();
    let storage = t.path().join("legacy/storage");
    copy_dir(&oc("legacy-1.1.65").join("storage"), &storage);
    let msg_dir = std::fs::read_dir(storage.join("message"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::os::unix::fs::symlink("/dev/zero", msg_dir.join("msg_zero.json")).unwrap();
    let out = run_timed(&[os("check"), os("--format"), os("json"), storage.as_os_str()])
        .expect("check hung on /dev/zero");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        with_code(&doc, "unreadable").iter().any(|f| f["error"]
            .as_str()
            .is_some_and(|e| e.contains("character device"))),
        "{doc:#}"
    );
    let out = run_timed(&[
        os("check"),
        os("--format"),
        os("json"),
        os("--models-json"),
        os("/dev/zero"),
        oc("plain").as_os_str(),
    ])
    .expect("--models-json /dev/zero hung");
    assert_eq!(out.status.code(), Some(2));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["errors"][0]["path"], "/dev/zero", "{doc:#}");
    // A models file that is not JSON is an error too.
    let bad = t.path().join("models.json");
    std::fs::write(&bad, b"{not json").unwrap();
    let (code, doc, _) = run_json(&[
        os("list"),
        os("--format"),
        os("json"),
        os("--models-json"),
        bad.as_os_str(),
        oc("plain").as_os_str(),
    ]);
    assert_eq!(code, Some(2));
    assert!(doc["errors"][0]["reason"]
        .as_str()
        .unwrap()
        .contains("not a models.dev JSON"));
}

// ---------------------------------------------------------------------------
// Item 9: a JSONL file appended while it is read.

#[test]
fn issue7_item9_a_transcript_appended_while_repaired_gives_whole_copies() {
    use std::io::Write;
    let t = tempfile::tempdir().unwrap();
    let src = claude_file("multi");
    let proj = t.path().join("claude/projects/-w");
    std::fs::create_dir_all(&proj).unwrap();
    let file = proj.join(src.file_name().unwrap());
    std::fs::copy(&src, &file).unwrap();
    let text = std::fs::read_to_string(&src).unwrap();
    let last: Value = text
        .lines()
        .rev()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["type"] == "assistant" && v.get("uuid").is_some())
        .unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let stop = stop.clone();
        let file = file.clone();
        let last = last.clone();
        std::thread::spawn(move || {
            let mut parent = last["uuid"].as_str().unwrap().to_string();
            let mut n = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let mut v = last.clone();
                let id = format!("00000000-0000-4000-8000-{n:012}");
                v["uuid"] = Value::String(id.clone());
                v["parentUuid"] = Value::String(parent.clone());
                let line = format!("{v}\n");
                let (a, b) = line.split_at(line.len() / 2);
                let mut f = std::fs::OpenOptions::new()
                    .append(true)
                    .open(&file)
                    .unwrap();
                f.write_all(a.as_bytes()).unwrap();
                f.flush().unwrap();
                std::thread::sleep(Duration::from_millis(1));
                f.write_all(b.as_bytes()).unwrap();
                parent = id;
                n += 1;
            }
        })
    };
    for k in 0..8 {
        let out = t.path().join(format!("out{k}"));
        let o = bin()
            .arg("repair")
            .arg(&file)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let copy = out.join("projects/-w").join(file.file_name().unwrap());
        let bytes = std::fs::read(&copy).unwrap();
        assert_eq!(bytes.last(), Some(&b'\n'), "copy {k} ends inside a line");
        let (_, doc, _) = run_json(&[os("check"), os("--format"), os("json"), copy.as_os_str()]);
        for code in ["torn-tail", "dangling-parent", "unreadable"] {
            assert!(
                with_code(&doc, code).is_empty(),
                "copy {k}: {code}: {doc:#}"
            );
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
}

// ---------------------------------------------------------------------------
// Item 10: every failure is named and makes the exit code 2; repair goes on.

#[test]
fn issue7_item10_repair_writes_the_other_stores_and_says_which_failed() {
    let t = tempfile::tempdir().unwrap();
    let a = t.path().join("in/a");
    let b = t.path().join("in/b");
    copy_dir(&oc("plain"), &a);
    copy_dir(&oc("compact"), &b);
    let out = t.path().join("out");
    // b's copy place is taken by a file this tool did not write.
    std::fs::create_dir_all(out.join("b")).unwrap();
    std::fs::write(out.join("b/opencode.db"), b"someone else's").unwrap();
    let (code, doc, _) = run_json(&[
        os("repair"),
        os("--format"),
        os("json"),
        os("--out"),
        out.as_os_str(),
        a.as_os_str(),
        b.as_os_str(),
    ]);
    assert_eq!(code, Some(2), "{doc:#}");
    let copies = doc["copies"].as_array().unwrap();
    assert_eq!(copies.len(), 2);
    assert_eq!(copies[0]["written"], true, "{doc:#}");
    assert_eq!(copies[1]["written"], false);
    assert!(copies[1]["error"].as_str().unwrap().contains("exists"));
    assert!(out.join("a/opencode.db").is_file());
    assert_eq!(
        std::fs::read(out.join("b/opencode.db")).unwrap(),
        b"someone else's"
    );
    assert!(!doc["errors"].as_array().unwrap().is_empty());
}

#[test]
fn issue7_item10_a_store_with_a_missing_column_is_exit_2_with_its_name() {
    let t = tempfile::tempdir().unwrap();
    let db = t.path().join("opencode.db");
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute_batch(
        "CREATE TABLE session(id TEXT, time_created INTEGER, title TEXT); \
         INSERT INTO session VALUES ('ses_a', 1, 't'); \
         CREATE TABLE message(id TEXT, time_created INTEGER, data TEXT); \
         CREATE TABLE part(id TEXT, message_id TEXT, data TEXT);",
    )
    .unwrap();
    drop(c);
    for cmd in ["list", "check"] {
        let (code, doc, _) = run_json(&[os(cmd), os("--format"), os("json"), db.as_os_str()]);
        assert_eq!(code, Some(2), "{cmd} {doc:#}");
        let reason = doc["errors"][0]["reason"].as_str().unwrap();
        assert!(reason.contains("table message"), "{reason}");
        assert!(doc["errors"][0]["path"]
            .as_str()
            .unwrap()
            .ends_with("opencode.db"));
    }
}

// ---------------------------------------------------------------------------
// Item 11: concurrent writers to one --out.

#[test]
fn issue7_item11_two_concurrent_repairs_into_one_out_never_both_succeed() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("out");
    let spawn = || {
        let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin!("session-doctor"));
        hermetic(&mut cmd);
        cmd.arg("repair")
            .arg(oc("prune"))
            .arg("--out")
            .arg(&out)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let a = spawn();
    let b = spawn();
    let ra = a.wait_with_output().unwrap();
    let rb = b.wait_with_output().unwrap();
    let mut codes = vec![ra.status.code(), rb.status.code()];
    codes.sort();
    assert_eq!(codes, vec![Some(0), Some(2)], "{ra:?} {rb:?}");
    let loser = if ra.status.code() == Some(2) {
        &ra
    } else {
        &rb
    };
    assert!(String::from_utf8_lossy(&loser.stderr).contains("exists"));
}

// ---------------------------------------------------------------------------
// Item 12: non-UTF-8 paths.

#[test]
fn issue7_item12_non_utf8_folders_and_file_names_stay_exact() {
    use std::os::unix::ffi::OsStrExt;
    let t = tempfile::tempdir().unwrap();
    let weird = t.path().join(std::ffi::OsStr::from_bytes(b"db-\xff"));
    copy_dir(&oc("plain"), &weird);
    let (code, doc, err) = run_json(&[os("list"), os("--format"), os("json"), weird.as_os_str()]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(doc["sessions"].as_array().unwrap().len(), 1);

    let proj = t.path().join("p");
    std::fs::create_dir_all(&proj).unwrap();
    let src = claude_file("multi");
    let names: [&[u8]; 2] = [b"\xff.jsonl", b"\xfe.jsonl"];
    for n in names {
        std::fs::copy(&src, proj.join(std::ffi::OsStr::from_bytes(n))).unwrap();
    }
    let out = t.path().join("out");
    let o = bin()
        .arg("repair")
        .arg(&proj)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    for n in names {
        let copy = walkdir::WalkDir::new(&out)
            .into_iter()
            .map(|e| e.unwrap().into_path())
            .find(|p| p.file_name().unwrap().as_bytes() == n);
        assert!(
            copy.is_some(),
            "no copy of {:?}",
            String::from_utf8_lossy(n)
        );
    }
}

// ---------------------------------------------------------------------------
// Item 13: errors name the file (and table/row or line) and what was expected.

#[test]
fn issue7_item13_a_null_id_row_is_named_by_table_and_rowid() {
    let t = tempfile::tempdir().unwrap();
    let db = t.path().join("opencode.db");
    std::fs::copy(oc("plain").join("opencode.db"), &db).unwrap();
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute_batch(
        "PRAGMA journal_mode=DELETE; INSERT INTO message (id, session_id, time_created, time_updated, data) \
         SELECT NULL, session_id, time_created, time_updated, data FROM message LIMIT 1;",
    )
    .unwrap_or_else(|_| {
        // A NOT NULL id column: store an integer id instead.
        c.execute_batch(
            "INSERT INTO message (id, session_id, time_created, time_updated, data) \
             SELECT 42, session_id, time_created, time_updated, data FROM message LIMIT 1;",
        )
        .unwrap()
    });
    drop(c);
    let (code, doc, _) = run_json(&[os("check"), os("--format"), os("json"), db.as_os_str()]);
    assert_eq!(code, Some(1), "{doc:#}");
    let f = with_code(&doc, "unreadable");
    assert_eq!(f.len(), 1, "{doc:#}");
    let loc = f[0]["place"].as_str().unwrap();
    assert!(
        loc.contains("opencode.db") && loc.contains("message row with rowid"),
        "{loc}"
    );
}

#[test]
fn issue7_item13_an_unusable_temp_folder_is_blamed_on_the_temp_folder() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("store");
    db_with_wal(&oc("plain").join("opencode.db"), &dir, "opencode.db");
    std::fs::remove_file(dir.join("opencode.db-shm")).unwrap();
    let blocker = t.path().join("not-a-folder");
    std::fs::write(&blocker, b"x").unwrap();
    let out = bin()
        .env("XDG_CACHE_HOME", &blocker)
        .arg("list")
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("private temp folder") && err.contains("not-a-folder"),
        "{err}"
    );
}

// ---------------------------------------------------------------------------
// Item 14: undetected faults.

#[test]
fn issue7_item14_parent_cycles_are_found_and_repair_breaks_them() {
    let t = tempfile::tempdir().unwrap();
    // Claude: line 5 points at line 6 and line 6 at line 5; line 8 is its own parent.
    let src = claude_file("multi");
    let mut lines: Vec<Value> = std::fs::read_to_string(&src)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let with_uuid: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].get("uuid").is_some())
        .collect();
    let (a, b, c) = (with_uuid[3], with_uuid[4], with_uuid[7]);
    let (ua, ub) = (lines[a]["uuid"].clone(), lines[b]["uuid"].clone());
    lines[a]["parentUuid"] = ub;
    lines[b]["parentUuid"] = ua;
    lines[c]["parentUuid"] = lines[c]["uuid"].clone();
    let proj = t.path().join("claude/projects/-w");
    std::fs::create_dir_all(&proj).unwrap();
    let file = proj.join(src.file_name().unwrap());
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&file, text).unwrap();
    let (code, doc, _) = run_json(&[os("check"), os("--format"), os("json"), file.as_os_str()]);
    assert_eq!(code, Some(1));
    let cyc = with_code(&doc, "parent-cycle");
    assert_eq!(cyc.len(), 2, "{doc:#}");
    assert_eq!(cyc[0]["length"], 2);
    assert_eq!(cyc[1]["length"], 1);
    let out = t.path().join("out");
    bin()
        .arg("repair")
        .arg(&file)
        .arg("--out")
        .arg(&out)
        .assert()
        .success();
    let copy = out.join(file.file_name().unwrap());
    let (_, doc, _) = run_json(&[os("check"), os("--format"), os("json"), copy.as_os_str()]);
    assert!(with_code(&doc, "parent-cycle").is_empty(), "{doc:#}");

    // opencode: an assistant that is its own parent.
    let db = t.path().join("oc/opencode.db");
    std::fs::create_dir_all(db.parent().unwrap()).unwrap();
    std::fs::copy(oc("plain").join("opencode.db"), &db).unwrap();
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "PRAGMA journal_mode=DELETE; UPDATE message SET data = json_set(data, '$.parentID', id) \
         WHERE id = (SELECT id FROM message WHERE json_extract(data,'$.role')='assistant' ORDER BY time_created LIMIT 1);",
    )
    .unwrap();
    drop(conn);
    let (code, doc, _) = run_json(&[os("check"), os("--format"), os("json"), db.as_os_str()]);
    assert_eq!(code, Some(1));
    assert_eq!(with_code(&doc, "parent-cycle").len(), 1, "{doc:#}");
    let out = t.path().join("oc-out");
    bin()
        .arg("repair")
        .arg(&db)
        .arg("--out")
        .arg(&out)
        .assert()
        .success();
    let (_, doc, _) = run_json(&[
        os("check"),
        os("--format"),
        os("json"),
        out.join("opencode.db").as_os_str(),
    ]);
    assert!(with_code(&doc, "parent-cycle").is_empty(), "{doc:#}");
}

#[test]
fn issue7_item14_symlinked_stores_are_followed_once_and_loops_said() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    std::os::unix::fs::symlink(oc("plain"), root.join("plain-link")).unwrap();
    std::os::unix::fs::symlink(oc("plain"), root.join("plain-link-2")).unwrap();
    std::os::unix::fs::symlink(&root, root.join("loop")).unwrap();
    let (code, doc, err) = run_json(&[os("list"), os("--format"), os("json"), root.as_os_str()]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(doc["sessions"].as_array().unwrap().len(), 1, "{doc:#}");
    assert!(
        doc["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["reason"].as_str().unwrap().contains("loop")),
        "{doc:#}"
    );
}

/// A store is known by its file's device and inode: a hard link to a
/// rollout is the same store (read once, as through a symbolic link),
/// while a copy of its bytes under another name is a second one.
#[test]
fn issue7_item14_a_hard_link_is_the_store_it_links_to_and_a_copy_is_not() {
    let t = tempfile::tempdir().unwrap();
    let a = t.path().join("rollout-a.jsonl");
    std::fs::copy(codex_rollout(), &a).unwrap();
    std::fs::hard_link(&a, t.path().join("rollout-b.jsonl")).unwrap();
    let count = |dir: &std::path::Path| {
        let (code, doc, err) = run_json(&[os("list"), os("--format"), os("json"), dir.as_os_str()]);
        assert_eq!(code, Some(0), "{err}");
        doc["sessions"].as_array().unwrap().len()
    };
    assert_eq!(count(t.path()), 1);
    std::fs::copy(&a, t.path().join("rollout-c.jsonl")).unwrap();
    assert_eq!(count(t.path()), 2);
}

#[test]
fn issue7_item14_a_rollout_is_recognised_by_content_not_name() {
    let t = tempfile::tempdir().unwrap();
    std::fs::copy(codex_rollout(), t.path().join("session.jsonl")).unwrap();
    let (code, doc, err) =
        run_json(&[os("list"), os("--format"), os("json"), t.path().as_os_str()]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(doc["sessions"][0]["agent"], "codex", "{doc:#}");
}

#[test]
fn issue7_item14_headroom_and_limits_are_validated() {
    for h in ["nan", "-5", "1e308", "inf"] {
        bin()
            .args(["check", &format!("--headroom={h}")])
            .arg(oc("plain"))
            .assert()
            .code(2)
            .stderr(contains("--headroom"));
    }
    bin()
        .args(["check", "--context", "8000"])
        .arg(oc("plain"))
        .assert()
        .code(2)
        .stderr(contains("--max-output"));
    bin()
        .args(["check", "--max-request-bytes", "0"])
        .arg(oc("plain"))
        .assert()
        .code(2);
}

// ---------------------------------------------------------------------------
// Keep it that way: a WAL database written by another process while `check`
// and `repair` run in a loop.

#[test]
fn issue7_item3_a_database_written_meanwhile_gives_verified_copies_and_no_phantom_findings() {
    written_meanwhile("WAL", 6);
}

/// The same with a rollback-journal database (read in place, not through a
/// private snapshot): `repair` copies its file under SQLite's read lock,
/// so no commit lands half in a copy.
#[test]
fn issue8_a_rollback_database_written_meanwhile_gives_verified_copies() {
    written_meanwhile("DELETE", 16);
}

/// Another process commits one message and its part per transaction, in
/// `journal` mode, while `check` and `repair` run `rounds` times: every copy
/// passes `integrity_check` and holds no part without its message, and
/// `check` reports no finding a half-read commit would cause.
fn written_meanwhile(journal: &str, rounds: usize) {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("live");
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("opencode.db");
    std::fs::copy(oc("plain").join("opencode.db"), &db).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let stop = stop.clone();
        let db = db.clone();
        let journal = journal.to_string();
        std::thread::spawn(move || {
            let c = rusqlite::Connection::open(&db).unwrap();
            c.busy_timeout(Duration::from_secs(5)).unwrap();
            c.query_row(&format!("PRAGMA journal_mode={journal}"), [], |_| Ok(()))
                .unwrap();
            let (sid, mdata, t0): (String, String, i64) = c
                .query_row(
                    "SELECT session_id, data, time_created FROM message ORDER BY time_created LIMIT 1",
                    [],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                )
                .unwrap();
            let pdata: String = c
                .query_row(
                    "SELECT data FROM part WHERE json_extract(data,'$.type')='text' LIMIT 1",
                    [],
                    |r| r.get(0),
                )
                .unwrap();
            let mut n: i64 = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let mid = format!("msg_ffff{n:08}zzzzzzzzzzzzzz");
                let pid = format!("prt_ffff{n:08}zzzzzzzzzzzzzz");
                let tc = t0 + 10_000_000 + n;
                let mut v: Value = serde_json::from_str(&mdata).unwrap();
                v["time"]["created"] = Value::from(tc);
                // One message and its part per transaction: a reader sees both or neither.
                c.execute_batch("BEGIN IMMEDIATE").unwrap();
                c.execute(
                    "INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?1, ?2, ?3, ?3, ?4)",
                    rusqlite::params![mid, sid, tc, v.to_string()],
                )
                .unwrap();
                c.execute(
                    "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
                    rusqlite::params![pid, mid, sid, tc, pdata],
                )
                .unwrap();
                c.execute_batch("COMMIT").unwrap();
                n += 1;
                std::thread::sleep(Duration::from_millis(2));
            }
            n
        })
    };
    std::thread::sleep(Duration::from_millis(100));
    for k in 0..rounds {
        let (code, doc, err) = run_json(&[os("check"), os("--format"), os("json"), db.as_os_str()]);
        assert!(
            matches!(code, Some(0) | Some(1)),
            "check {k}: {err} {doc:#}"
        );
        for bad in ["orphan-part", "unreadable", "duplicate-id"] {
            assert!(
                with_code(&doc, bad).is_empty(),
                "check {k}: phantom {bad}: {doc:#}"
            );
        }
        let out = t.path().join(format!("out{k}"));
        let o = bin()
            .arg("repair")
            .arg(&db)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "repair {k}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let c = rusqlite::Connection::open(out.join("opencode.db")).unwrap();
        let ok: String = c
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(ok, "ok", "copy {k}");
        let orphans: i64 = c
            .query_row(
                "SELECT count(*) FROM part WHERE message_id NOT IN (SELECT id FROM message)",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(orphans, 0, "copy {k}");
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let written = writer.join().unwrap();
    assert!(written > 10, "the writer wrote {written} messages");
}
