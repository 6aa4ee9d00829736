//! opencode / Kilo SQLite stores (`opencode.db`, `kilo.db`; schema in
//! shared/real-sessions/opencode/schema-*.sql). `message.data` and `part.data`
//! hold the JSON without the id columns.

use super::edit::{self, Layout};
use super::{assemble, parse_message, parse_part};
use crate::formats::{Change, Edit, Store, StoredChange};
use crate::model::{Agent, LoadProblem, ProblemKind, Session};
use anyhow::{anyhow, bail, Context, Result};
use rusqlite::{Connection, OpenFlags};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A SQLite store opened read-only (see [`open_readonly`]).
pub struct SqliteStore {
    path: PathBuf,
    agent: Agent,
    /// Private copy of a db that had a `-wal` beside it; the dir lives as long as the store.
    _private: Option<tempfile::TempDir>,
    read_path: PathBuf,
}

const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// Opens `p` as an opencode/Kilo database. `Ok(None)` when it is SQLite but
/// has no `session`/`message`/`part` tables; an error when it is not SQLite
/// at all or cannot be read.
pub fn open(p: &Path) -> Result<Option<Box<dyn Store>>> {
    let mut header = [0u8; 16];
    {
        use std::io::Read;
        let mut f =
            std::fs::File::open(p).with_context(|| format!("{}: cannot open", p.display()))?;
        let n = f
            .read(&mut header)
            .with_context(|| format!("{}: cannot read", p.display()))?;
        if n < 16 || &header != SQLITE_MAGIC {
            bail!(
                "{}: not a SQLite database (expected the header \"SQLite format 3\"; the file starts differently)",
                p.display()
            );
        }
    }
    let (private, read_path) = private_copy_if_wal(p)?;
    let conn = connect(&read_path, private.is_some())?;
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type='table'")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()
        .with_context(|| format!("{}: cannot read the schema", p.display()))?;
    let has = |t: &str| tables.iter().any(|x| x == t);
    if !(has("session") && has("message") && has("part")) {
        return Ok(None);
    }
    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let agent = if name.starts_with("kilo") || has("kilo_board") {
        Agent::Kilo
    } else {
        Agent::Opencode
    };
    Ok(Some(Box::new(SqliteStore {
        path: p.to_path_buf(),
        agent,
        _private: private,
        read_path,
    })))
}

use crate::formats::sidecar as side;

/// When a `-wal` sits beside `p`, copies the db with its `-wal` and `-shm` into
/// a private temp dir and returns that copy; otherwise returns `p` itself.
/// Opening a WAL db in place, even read-only, would create side files
/// (shared/README.md, "SQLite side files").
fn private_copy_if_wal(p: &Path) -> Result<(Option<tempfile::TempDir>, PathBuf)> {
    let wal = side(p, "-wal");
    if !wal.exists() {
        return Ok((None, p.to_path_buf()));
    }
    let dir = tempfile::Builder::new()
        .prefix("session-doctor-")
        .tempdir()
        .context("cannot create a private temp dir")?;
    let copy = dir.path().join("store.db");
    std::fs::copy(p, &copy).with_context(|| format!("{}: cannot copy", p.display()))?;
    std::fs::copy(&wal, side(&copy, "-wal"))
        .with_context(|| format!("{}: cannot copy", wal.display()))?;
    let shm = side(p, "-shm");
    if shm.exists() {
        std::fs::copy(&shm, side(&copy, "-shm"))
            .with_context(|| format!("{}: cannot copy", shm.display()))?;
    }
    Ok((Some(dir), copy))
}

/// Percent-encodes a path for a SQLite `file:` URI.
fn uri_path(p: &Path) -> String {
    let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let mut out = String::new();
    for c in abs.to_string_lossy().chars() {
        match c {
            '%' | '?' | '#' | ' ' => out.push_str(&format!("%{:02X}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// Opens `read_path` without writing anything: a private copy is opened
/// read-only (its side files live in the private dir); an original without
/// `-wal` is opened `mode=ro&immutable=1`.
fn connect(read_path: &Path, private: bool) -> Result<Connection> {
    let uri = if private {
        format!("file:{}?mode=ro", uri_path(read_path))
    } else {
        format!("file:{}?mode=ro&immutable=1", uri_path(read_path))
    };
    Connection::open_with_flags(
        &uri,
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .with_context(|| format!("{}: cannot open as SQLite", read_path.display()))
}

impl SqliteStore {
    fn conn(&self) -> Result<Connection> {
        connect(&self.read_path, self._private.is_some())
            .with_context(|| self.path.display().to_string())
    }

    fn loc(&self, table: &str, id: &str) -> String {
        format!("{}: {table} row {id}", self.path.display())
    }
}

fn text_of(v: rusqlite::types::ValueRef<'_>) -> std::result::Result<(String, u64), String> {
    match v {
        rusqlite::types::ValueRef::Text(b) | rusqlite::types::ValueRef::Blob(b) => {
            let n = b.len() as u64;
            String::from_utf8(b.to_vec())
                .map(|s| (s, n))
                .map_err(|e| format!("`data` is not UTF-8 text: {e}"))
        }
        rusqlite::types::ValueRef::Null => Err("`data` is NULL, expected JSON text".into()),
        _ => Err("`data` is a number, expected JSON text".into()),
    }
}

impl Store for SqliteStore {
    fn agent(&self) -> Agent {
        self.agent
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn copy_name(&self) -> String {
        self.path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "opencode.db".into())
    }

    fn session_ids(&self) -> Result<Vec<String>> {
        let conn = self.conn()?;
        let mut st = conn
            .prepare("SELECT id FROM session ORDER BY time_created, id")
            .with_context(|| format!("{}: cannot read table session", self.path.display()))?;
        let ids = st
            .query_map([], |r| r.get::<_, String>(0))?
            .collect::<rusqlite::Result<Vec<_>>>()
            .with_context(|| format!("{}: cannot read table session", self.path.display()))?;
        Ok(ids)
    }

    fn load(&self, id: &str) -> Result<Session> {
        let conn = self.conn()?;
        let title: Option<String> = conn
            .query_row("SELECT title FROM session WHERE id = ?1", [id], |r| {
                r.get(0)
            })
            .map_err(|e| anyhow!("{}: session {id}: {e}", self.path.display()))?;
        let mut session = Session::new(self.agent, id, title, self.path.clone());
        let mut st = conn.prepare(
            "SELECT id, time_created, data FROM message WHERE session_id = ?1 ORDER BY time_created, id",
        )?;
        let mut rows = st.query([id])?;
        while let Some(r) = rows.next()? {
            let mid: String = r.get(0)?;
            let tc: Option<i64> = r.get(1).ok();
            let parsed = text_of(r.get_ref(2)?).and_then(|(text, n)| {
                let v: Value = serde_json::from_str(&text)
                    .map_err(|e| format!("invalid JSON in `data`: {e}"))?;
                parse_message(&mid, v, n, tc)
            });
            match parsed {
                Ok(m) => session.messages.push(m),
                Err(error) => session.problems.push(LoadProblem {
                    location: self.loc("message", &mid),
                    id: Some(mid),
                    error,
                    kind: ProblemKind::Unreadable,
                }),
            }
        }
        let mut st = conn
            .prepare("SELECT id, message_id, data FROM part WHERE session_id = ?1 ORDER BY id")?;
        let mut rows = st.query([id])?;
        let mut parts = Vec::new();
        while let Some(r) = rows.next()? {
            let pid: String = r.get(0)?;
            let mid: String = r.get(1)?;
            let parsed = text_of(r.get_ref(2)?).and_then(|(text, n)| {
                let v: Value = serde_json::from_str(&text)
                    .map_err(|e| format!("invalid JSON in `data`: {e}"))?;
                parse_part(&pid, &mid, v, n)
            });
            match parsed {
                Ok(p) => parts.push(p),
                Err(error) => session.problems.push(LoadProblem {
                    location: self.loc("part", &pid),
                    id: Some(pid),
                    error,
                    kind: ProblemKind::Unreadable,
                }),
            }
        }
        assemble(&mut session, parts);
        Ok(session)
    }

    fn describe(&self, session: &Session, edit: &Edit) -> StoredChange {
        edit::describe(session, edit)
    }

    fn apply(&self, session: &Session, edits: &[Edit]) -> Result<Session> {
        edit::apply(session, edits, Layout::Sqlite)
    }

    fn write_copy(&self, dest: &Path, edits: &[Edit]) -> Result<()> {
        let dir = dest.parent().context("destination has no parent folder")?;
        let tmp = tempfile::Builder::new()
            .prefix(".session-doctor-")
            .suffix(".db.tmp")
            .tempfile_in(dir)
            .with_context(|| format!("{}: cannot create a temp file", dir.display()))?;
        let tmp_path = tmp.path().to_path_buf();
        {
            let src = self.conn()?;
            let mut dst = Connection::open(&tmp_path)
                .with_context(|| format!("{}: cannot create", tmp_path.display()))?;
            {
                let backup = rusqlite::backup::Backup::new(&src, &mut dst)?;
                backup
                    .run_to_completion(256, std::time::Duration::from_millis(0), None)
                    .with_context(|| format!("{}: backup failed", self.path.display()))?;
            }
            let txn = dst.transaction()?;
            for e in edits {
                apply_in_db(&txn, e)?;
            }
            txn.commit()?;
            // Leave no `-wal` beside the copy: fold everything into the main file.
            dst.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
                .ok();
            dst.close().map_err(|(_, e)| e)?;
        }
        // A temp file is created 0600; the agent needs an ordinary writable db.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&tmp_path, std::fs::Permissions::from_mode(0o644)).ok();
        }
        tmp.persist(dest)
            .map_err(|e| anyhow!("{}: cannot rename into place: {}", dest.display(), e.error))?;
        Ok(())
    }
}

/// Applies one edit to the rows of a copy (inside the copy's transaction).
fn apply_in_db(txn: &rusqlite::Transaction<'_>, e: &Edit) -> Result<()> {
    let (sid, mid) = (&e.session_id, &e.message_id);
    match &e.change {
        Change::SetParent { .. } => {
            let data: String = txn
                .query_row(
                    "SELECT data FROM message WHERE id = ?1 AND session_id = ?2",
                    [mid, sid],
                    |r| r.get(0),
                )
                .with_context(|| format!("message {mid} not found in the copy"))?;
            let mut v: Value = serde_json::from_str(&data)?;
            edit::edit_message(&mut v, &e.change);
            txn.execute(
                "UPDATE message SET data = ?1 WHERE id = ?2 AND session_id = ?3",
                [&Layout::Sqlite.serialize(&v), mid, sid],
            )?;
        }
        Change::StripMedia { part_id, .. } | Change::Truncate { part_id, .. } => {
            let data: String = txn
                .query_row(
                    "SELECT data FROM part WHERE id = ?1 AND message_id = ?2",
                    [part_id, mid],
                    |r| r.get(0),
                )
                .with_context(|| format!("part {part_id} not found in the copy"))?;
            let mut v: Value = serde_json::from_str(&data)?;
            edit::edit_part(&mut v, &e.change).map_err(|err| anyhow!("part {part_id}: {err}"))?;
            txn.execute(
                "UPDATE part SET data = ?1 WHERE id = ?2",
                [&Layout::Sqlite.serialize(&v), part_id],
            )?;
        }
        Change::DropMessage => {
            txn.execute("DELETE FROM part WHERE message_id = ?1", [mid])?;
            txn.execute(
                "DELETE FROM message WHERE id = ?1 AND session_id = ?2",
                [mid, sid],
            )?;
        }
        Change::DropCopies => bail!("message {mid}: message ids are unique in SQLite"),
        Change::AddNote { text } => {
            let t: i64 = txn
                .query_row(
                    "SELECT time_created FROM message WHERE id = ?1",
                    [mid],
                    |r| r.get(0),
                )
                .with_context(|| format!("message {mid} not found in the copy"))?;
            let data = Layout::Sqlite.serialize(&edit::note_part(Layout::Sqlite, sid, mid, text));
            txn.execute(
                "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
                rusqlite::params![edit::note_part_id(mid), mid, sid, t, data],
            )?;
        }
    }
    Ok(())
}
