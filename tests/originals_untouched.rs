//! Originals are sacred: every command that reads sessions leaves every input
//! file byte-identical and creates nothing beside it, for SQLite stores with
//! and without a `-wal`, and for legacy JSON trees.

mod common;
use common::*;
use std::path::Path;

/// Every reading command, with `out` as the repair destination.
fn commands(input: &Path, session: &str, out: &Path) -> Vec<Vec<String>> {
    let i = input.display().to_string();
    let o = out.display().to_string();
    let s = session.to_string();
    vec![
        vec!["list".into(), i.clone()],
        vec!["list".into(), "--format".into(), "json".into(), i.clone()],
        vec![
            "inspect".into(),
            "--session".into(),
            s.clone(),
            "--top".into(),
            "3".into(),
            i.clone(),
        ],
        vec!["check".into(), "--format".into(), "json".into(), i.clone()],
        vec![
            "repair".into(),
            i.clone(),
            "--out".into(),
            format!("{o}/dry"),
            "--dry-run".into(),
        ],
        vec![
            "repair".into(),
            i.clone(),
            "--out".into(),
            format!("{o}/copy"),
        ],
        vec![
            "repair".into(),
            i,
            "--out".into(),
            format!("{o}/copy"),
            "--force".into(),
        ],
    ]
}

fn assert_untouched(input_dir: &Path, input: &Path, session: &str) {
    let out = tempfile::tempdir().unwrap();
    let before = snapshot(input_dir);
    for args in commands(input, session, out.path()) {
        let o = bin().args(&args).output().unwrap();
        assert!(
            o.status.code() == Some(0) || o.status.code() == Some(1),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let after = snapshot(input_dir);
        assert_eq!(
            before,
            after,
            "{args:?} changed or created files in {}",
            input_dir.display()
        );
    }
}

#[test]
fn sqlite_without_wal_is_untouched_by_every_command() {
    let dir = oc("stale-parent");
    assert!(!dir.join("opencode.db-wal").exists());
    assert_untouched(
        &dir,
        &dir.join("opencode.db"),
        "ses_dfd1f60b1ffeUVxzisfNz0d8YX",
    );
    let kilo = oc("kilo");
    assert_untouched(&kilo, &kilo, "ses_dfd1699dfffeTGRV3habI8PCDk");
}

#[test]
fn legacy_tree_is_untouched_by_every_command() {
    let dir = oc("legacy-1.1.65");
    assert_untouched(&dir, &dir.join("storage"), "ses_dfd1ae85effe5u4syGjAIhhhc2");
}

/// Makes a db with a live `-wal` holding a change not yet in the main file:
/// copies a fixture, opens it in WAL mode with auto-checkpoint off, changes
/// the session title, and copies db + `-wal` + `-shm` while the writer is open.
fn db_with_wal(dst: &Path) {
    let work = tempfile::tempdir().unwrap();
    let db = work.path().join("opencode.db");
    std::fs::copy(oc("plain").join("opencode.db"), &db).unwrap();
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.query_row("PRAGMA journal_mode=WAL", [], |_| Ok(()))
        .unwrap();
    conn.execute_batch(
        "PRAGMA wal_autocheckpoint=0; UPDATE session SET title='title only in the wal';",
    )
    .unwrap();
    std::fs::create_dir_all(dst).unwrap();
    for f in ["opencode.db", "opencode.db-wal", "opencode.db-shm"] {
        std::fs::copy(work.path().join(f), dst.join(f)).unwrap();
    }
    drop(conn);
}

#[test]
fn sqlite_with_wal_is_read_through_a_private_copy_and_untouched() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("store");
    db_with_wal(&dir);
    assert!(dir.join("opencode.db-wal").metadata().unwrap().len() > 0);
    // The wal's rows are read: the title exists only there.
    let doc = json(&["list", "--format", "json", dir.to_str().unwrap()]);
    assert_eq!(
        doc["sessions"][0]["title"], "title only in the wal",
        "{doc:#}"
    );
    assert_untouched(
        &dir,
        &dir.join("opencode.db"),
        "ses_dfd222799ffeZaEGZwxSj0AU0r",
    );
    // The copy holds the wal's rows too, folded into one file.
    let out = tempfile::tempdir().unwrap();
    bin()
        .arg("repair")
        .arg(&dir)
        .arg("--out")
        .arg(out.path())
        .assert()
        .success();
    assert!(!out.path().join("opencode.db-wal").exists());
    let doc = json(&["list", "--format", "json", out.path().to_str().unwrap()]);
    assert_eq!(doc["sessions"][0]["title"], "title only in the wal");
}
