//! Bad input gets a clear error naming the path (and row) and what was
//! expected; the rest is still read; exit 2 only when nothing could be read.

mod common;
use common::*;
use predicates::str::contains;

#[test]
fn truncated_json_file_in_a_legacy_tree_is_unreadable_and_the_rest_is_read() {
    let t = tempfile::tempdir().unwrap();
    let data = t.path().join("legacy");
    copy_dir(&oc("legacy-1.1.65"), &data);
    let part = data
        .join("storage/part/msg_202e5183c001cxCQ1pmRf0SZWd/prt_202e518ac00137j9FUAv8aTDVq.json");
    let bytes = std::fs::read(&part).unwrap();
    std::fs::write(&part, &bytes[..bytes.len() / 2]).unwrap();

    let doc = json(&["check", "--format", "json", data.to_str().unwrap()]);
    let u = with_code(&doc, "unreadable");
    assert_eq!(u.len(), 1, "{doc:#}");
    assert!(u[0]["place"]
        .as_str()
        .unwrap()
        .ends_with("prt_202e518ac00137j9FUAv8aTDVq.json"));
    assert!(
        u[0]["error"].as_str().unwrap().contains("invalid JSON"),
        "{u:?}"
    );
    let list = json(&["list", "--format", "json", data.to_str().unwrap()]);
    assert_eq!(list["sessions"][0]["messages"], 26);
    assert_eq!(list["sessions"][0]["parts"], 56);
    bin().arg("check").arg(&data).assert().code(1);
}

#[test]
fn bad_sqlite_row_names_table_and_row() {
    let t = tempfile::tempdir().unwrap();
    let db = t.path().join("opencode.db");
    std::fs::copy(oc("plain").join("opencode.db"), &db).unwrap();
    let c = rusqlite::Connection::open(&db).unwrap();
    let id: String = c
        .query_row("SELECT id FROM part ORDER BY id LIMIT 1", [], |r| r.get(0))
        .unwrap();
    c.execute(
        "UPDATE part SET data = '{\"type\": \"text\", \"text\": ' WHERE id = ?1",
        [&id],
    )
    .unwrap();
    let mid: String = c
        .query_row("SELECT id FROM message ORDER BY id LIMIT 1", [], |r| {
            r.get(0)
        })
        .unwrap();
    c.execute(
        "UPDATE message SET data = '{\"time\":{\"created\":1}}' WHERE id = ?1",
        [&mid],
    )
    .unwrap();
    drop(c);
    let doc = json(&["check", "--format", "json", db.to_str().unwrap()]);
    let u = with_code(&doc, "unreadable");
    assert_eq!(u.len(), 2, "{doc:#}");
    let locs: Vec<&str> = u.iter().map(|f| f["place"].as_str().unwrap()).collect();
    assert!(
        locs.iter().any(|l| l.ends_with(&format!("part row {id}"))),
        "{locs:?}"
    );
    assert!(
        locs.iter()
            .any(|l| l.ends_with(&format!("message row {mid}"))),
        "{locs:?}"
    );
    assert!(u.iter().any(|f| f["error"]
        .as_str()
        .unwrap()
        .contains("missing string field `role`")));
}

#[test]
/// Issue 7 item 10: a store that cannot be read makes the exit code 2 after
/// the other inputs ran, in every format.
fn a_db_that_is_not_sqlite_is_named_the_rest_is_read_and_the_exit_code_is_2() {
    let t = tempfile::tempdir().unwrap();
    let bad = t.path().join("bad");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::write(bad.join("opencode.db"), b"this is not a database").unwrap();
    bin()
        .arg("list")
        .arg(&bad)
        .assert()
        .code(2)
        .stderr(contains("opencode.db: not a SQLite database"));
    // With a good store beside it, the good one is read, the bad one
    // reported once (in the JSON document, not also on stderr), exit 2.
    let out = bin()
        .arg("list")
        .arg("--format")
        .arg("json")
        .arg(&bad)
        .arg(oc("plain"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["sessions"].as_array().unwrap().len(), 1);
    assert!(doc["errors"][0]["path"]
        .as_str()
        .unwrap()
        .ends_with("opencode.db"));
    assert!(doc["errors"][0]["reason"]
        .as_str()
        .unwrap()
        .contains("not a SQLite database"));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("not a SQLite database"));
    // The table goes to stdout, the error once to stderr; check exits 2 too.
    for cmd in ["list", "check"] {
        let out = bin().arg(cmd).arg(&bad).arg(oc("plain")).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{cmd}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.matches("not a SQLite database").count(), 1, "{err}");
        assert!(!String::from_utf8_lossy(&out.stdout).contains("not a SQLite database"));
    }
}

#[test]
fn an_unreadable_file_is_named() {
    let t = tempfile::tempdir().unwrap();
    let data = t.path().join("legacy");
    copy_dir(&oc("legacy-1.1.65"), &data);
    // A message "file" that cannot be read as a file (a folder with a .json name).
    let m = data.join("storage/message/ses_dfd1ae85effe5u4syGjAIhhhc2/msg_zzz.json");
    std::fs::create_dir_all(&m).unwrap();
    let f = data
        .join("storage/message/ses_dfd1ae85effe5u4syGjAIhhhc2/msg_202e517d0001p4nbzxarLVQJ8N.json");
    std::fs::remove_file(&f).unwrap();
    std::os::unix::fs::symlink(t.path().join("missing-target"), &f).unwrap();
    let doc = json(&["check", "--format", "json", data.to_str().unwrap()]);
    let u = with_code(&doc, "unreadable");
    assert_eq!(u.len(), 1, "{doc:#}");
    assert!(u[0]["place"]
        .as_str()
        .unwrap()
        .ends_with("msg_202e517d0001p4nbzxarLVQJ8N.json"));
    assert!(u[0]["error"].as_str().unwrap().contains("cannot read"));
}

#[test]
fn an_empty_dir_or_missing_path_is_exit_2_with_a_message() {
    let t = tempfile::tempdir().unwrap();
    bin()
        .arg("check")
        .arg(t.path())
        .assert()
        .code(2)
        .stderr(contains("no session store found"));
    bin()
        .arg("list")
        .arg(t.path().join("nope"))
        .assert()
        .code(2)
        .stderr(contains("no such file or directory"));
    bin()
        .args(["inspect", "--session", "ses_nope"])
        .arg(oc("plain"))
        .assert()
        .code(2)
        .stderr(contains("session ses_nope not found"));
}
