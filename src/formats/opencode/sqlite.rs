//! opencode / Kilo SQLite stores (`opencode.db`, `kilo.db`; schema in
//! docs/formats/opencode-kilo.md sections 3.1 and 3.2). `message.data` and `part.data`
//! hold the JSON without the id columns.

use super::edit::{self, Layout};
use super::parse::{attach, parse_message, parse_part, sort_messages, PartSink};
use crate::edit::Applier;
use crate::edit::{Change, Edit, StoredChange};
use crate::formats::sqlite::Snapshot;
use crate::formats::{Copier, Store};
use crate::model::{Agent, LoadProblem, ProblemKind, Session};
use anyhow::{anyhow, bail, Context, Result};
use rusqlite::Connection;
use rusqlite::OptionalExtension;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A SQLite store, read through a [`Snapshot`] (never written).
pub struct SqliteStore {
    path: PathBuf,
    agent: Agent,
    snap: Snapshot,
}

/// Opens `p` as an opencode/Kilo database. `Ok(None)` when it is SQLite but
/// has no `session`/`message`/`part` tables; an error when it is not SQLite
/// at all or cannot be read.
pub fn open(p: &Path) -> Result<Option<Box<dyn Store>>> {
    let snap = Snapshot::open(p)?;
    let conn = snap.connect()?;
    let tables = crate::formats::sqlite::tables(&conn, p)?;
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
        snap,
    })))
}

impl SqliteStore {
    fn conn(&self) -> Result<Connection> {
        self.snap.connect()
    }

    /// A connection for [`DbRows`], in a read transaction (ended when the
    /// connection is dropped): the rows come from one state of the file,
    /// and SQLite takes its read lock once, not once per row.
    fn rows(&self) -> Result<Connection> {
        let conn = self.conn()?;
        conn.execute_batch("BEGIN").map_err(|e| {
            anyhow!(
                "{}: cannot start a read transaction: {e}",
                self.path.display()
            )
        })?;
        Ok(conn)
    }

    fn loc(&self, table: &str, id: &str) -> String {
        format!("{}: {table} row {id}", self.path.display())
    }

    /// Runs `sql` on table `table`, naming the file and table in errors.
    fn prepare<'c>(
        &self,
        conn: &'c Connection,
        table: &str,
        sql: &str,
    ) -> Result<rusqlite::Statement<'c>> {
        conn.prepare(sql).map_err(|e| {
            anyhow!(
                "{}: cannot read table {table} (expected opencode's columns): {e}",
                self.path.display()
            )
        })
    }
}

/// A text column of a row: the id columns must be text.
fn id_of(r: &rusqlite::Row<'_>, idx: usize, what: &str) -> std::result::Result<String, String> {
    match r.get_ref(idx) {
        Ok(rusqlite::types::ValueRef::Text(b)) => {
            String::from_utf8(b.to_vec()).map_err(|_| format!("`{what}` is not UTF-8 text"))
        }
        Ok(rusqlite::types::ValueRef::Null) => Err(format!("`{what}` is NULL, expected text")),
        Ok(_) => Err(format!("`{what}` is not text")),
        Err(e) => Err(format!("`{what}`: {e}")),
    }
}

/// The JSON text of a `data` column, with its stored size in bytes; a value
/// over [`crate::fsx::MAX_JSON_DOC_BYTES`] is refused with its size.
/// The text is borrowed from the row (checked as UTF-8, not copied).
fn text_of(v: rusqlite::types::ValueRef<'_>) -> std::result::Result<(&str, u64), String> {
    match v {
        rusqlite::types::ValueRef::Text(b) | rusqlite::types::ValueRef::Blob(b) => {
            let n = b.len() as u64;
            if n > crate::fsx::MAX_JSON_DOC_BYTES {
                return Err(format!(
                    "`data` holds {n} bytes, more than the {} MiB a JSON document may have",
                    crate::fsx::MAX_JSON_DOC_BYTES >> 20
                ));
            }
            std::str::from_utf8(b)
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

    fn side_files(&self) -> Vec<PathBuf> {
        crate::formats::sqlite::SIDE_SUFFIXES
            .iter()
            .map(|s| crate::formats::sqlite::side(&self.path, s))
            .collect()
    }

    /// The data dir (`.../opencode/`, `.../kilo/`) when the db sits in one.
    fn agent_dirs(&self) -> Vec<PathBuf> {
        let dir = self.path.parent().filter(|d| {
            d.file_name()
                .is_some_and(|n| n == "opencode" || n == "kilo")
        });
        dir.map(|d| vec![d.to_path_buf()]).unwrap_or_default()
    }

    fn session_ids(&self) -> Result<Vec<String>> {
        let conn = self.conn()?;
        let mut st = self.prepare(
            &conn,
            "session",
            "SELECT rowid, id FROM session ORDER BY time_created, id",
        )?;
        let mut rows = st
            .query([])
            .map_err(|e| anyhow!("{}: cannot read table session: {e}", self.path.display()))?;
        let mut ids = Vec::new();
        loop {
            let r = match rows.next() {
                Ok(Some(r)) => r,
                Ok(None) => break,
                Err(e) => bail!("{}: cannot read table session: {e}", self.path.display()),
            };
            let rowid: i64 = r.get(0).unwrap_or(-1);
            match id_of(r, 1, "id") {
                Ok(id) => ids.push(id),
                Err(e) => bail!(
                    "{}: session row with rowid {rowid}: {e}",
                    self.path.display()
                ),
            }
        }
        Ok(ids)
    }

    fn load(&self, id: &str) -> Result<Session> {
        let conn = self.conn()?;
        let fail = |table: &str, e: rusqlite::Error| {
            anyhow!(
                "{}: session {id}: cannot read table {table}: {e}",
                self.path.display()
            )
        };
        // One read transaction: messages and parts come from the same state.
        conn.execute_batch("BEGIN")
            .map_err(|e| fail("session", e))?;
        let title: Option<String> = conn
            .query_row("SELECT title FROM session WHERE id = ?1", [id], |r| {
                r.get::<_, Option<String>>(0)
            })
            .map_err(|e| fail("session", e))?;
        let mut session = Session::new(self.agent, id, title, self.path.clone());
        // Room for every message at once: growing a list of a huge
        // session's messages would hold it twice while it moves.
        let count: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM message WHERE session_id = ?1",
                [id],
                |r| r.get(0),
            )
            .map_err(|e| fail("message", e))?;
        session
            .messages
            .reserve_exact(usize::try_from(count).unwrap_or(0));
        let mut st = self.prepare(
            &conn,
            "message",
            "SELECT rowid, id, time_created, data FROM message WHERE session_id = ?1 ORDER BY time_created, id",
        )?;
        let mut rows = st.query([id]).map_err(|e| fail("message", e))?;
        while let Some(r) = rows.next().map_err(|e| fail("message", e))? {
            let rowid: i64 = r.get(0).unwrap_or(-1);
            let mid = match id_of(r, 1, "id") {
                Ok(m) => m,
                Err(error) => {
                    session.problems.push(LoadProblem {
                        location: self.loc("message", &format!("with rowid {rowid}")),
                        id: None,
                        error,
                        kind: ProblemKind::Unreadable,
                        file: None,
                        line: None,
                        row: Some(format!("message with rowid {rowid}")),
                    });
                    continue;
                }
            };
            let tc: Option<i64> = r.get(2).ok();
            let parsed = r
                .get_ref(3)
                .map_err(|e| e.to_string())
                .and_then(text_of)
                .and_then(|(text, n)| {
                    let v: Value = serde_json::from_str(text)
                        .map_err(|e| format!("invalid JSON in `data`: {e}"))?;
                    parse_message(&mid, v, n, tc)
                });
            match parsed {
                Ok(m) => session.messages.push(m),
                Err(error) => session.problems.push(LoadProblem {
                    location: self.loc("message", &mid),
                    id: Some(mid.clone()),
                    error,
                    kind: ProblemKind::Unreadable,
                    file: None,
                    line: None,
                    row: Some(format!("message {}", mid)),
                }),
            }
        }
        drop(rows);
        let mut st = self.prepare(
            &conn,
            "part",
            "SELECT rowid, id, message_id, data FROM part WHERE session_id = ?1",
        )?;
        let mut rows = st.query([id]).map_err(|e| fail("part", e))?;
        // Each part goes under its message as it is read, in the store's
        // order; the sink puts each message's parts in part id order (byte
        // order, as Rust compares ids, whatever the column collation).
        sort_messages(&mut session);
        let mut parts = PartSink::new(&session.messages);
        while let Some(r) = rows.next().map_err(|e| fail("part", e))? {
            let rowid: i64 = r.get(0).unwrap_or(-1);
            let ids = id_of(r, 1, "id").and_then(|p| Ok((p, id_of(r, 2, "message_id")?)));
            let (pid, mid) = match ids {
                Ok(x) => x,
                Err(error) => {
                    session.problems.push(LoadProblem {
                        location: self.loc("part", &format!("with rowid {rowid}")),
                        id: None,
                        error,
                        kind: ProblemKind::Unreadable,
                        file: None,
                        line: None,
                        row: Some(format!("part with rowid {rowid}")),
                    });
                    continue;
                }
            };
            let parsed = r
                .get_ref(3)
                .map_err(|e| e.to_string())
                .and_then(text_of)
                .and_then(|(text, n)| {
                    let v: Value = serde_json::from_str(text)
                        .map_err(|e| format!("invalid JSON in `data`: {e}"))?;
                    parse_part(&pid, v, n)
                });
            match parsed {
                Ok(p) => parts.add(mid, p),
                Err(error) => session.problems.push(LoadProblem {
                    location: self.loc("part", &pid),
                    id: Some(pid.clone()),
                    error,
                    kind: ProblemKind::Unreadable,
                    file: None,
                    line: None,
                    row: Some(format!("part {}", pid)),
                }),
            }
        }
        drop(rows);
        let _ = conn.execute_batch("COMMIT");
        let parts = parts.finish();
        attach(&mut session, parts);
        Ok(session)
    }

    fn copier(&self) -> &dyn Copier {
        self
    }
}

impl Applier for SqliteStore {
    fn apply(&self, session: &Session, edits: &[Edit]) -> Result<Session> {
        let conn = self.rows()?;
        edit::apply(session, edits, Layout::Sqlite, &DbRows(&conn, &self.path))
    }
    fn apply_owned(&self, session: Session, edits: &[Edit]) -> Result<Session> {
        self.apply_after(session, &[], edits)
    }
    fn apply_after(&self, session: Session, earlier: &[Edit], edits: &[Edit]) -> Result<Session> {
        let conn = self.rows()?;
        edit::apply_after(
            session,
            earlier,
            edits,
            Layout::Sqlite,
            &DbRows(&conn, &self.path),
        )
    }
}

impl Copier for SqliteStore {
    fn copy_base(&self) -> PathBuf {
        crate::formats::folder_of(&self.path)
    }

    fn copy_path(&self) -> PathBuf {
        crate::formats::file_name_or(&self.path, "opencode.db")
    }

    fn describe(&self, ix: &crate::model::Lookup<'_>, edit: &Edit) -> StoredChange {
        edit::describe(ix, edit)
    }

    fn next_steps(&self, dest: &Path, sessions: &[String]) -> Vec<String> {
        super::next_steps(self.agent, dest, sessions)
    }

    fn write_copy(&self, dest: &Path, edits: &[Edit], replace: bool) -> Result<()> {
        self.snap.write_copy(dest, replace, &|txn| {
            for e in edits {
                apply_in_db(txn, e)?;
            }
            Ok(())
        })
    }
}

/// Re-reads stored rows of the snapshot for [`edit::apply`], on a
/// connection inside one read transaction (see [`SqliteStore::rows`]), each
/// query prepared once.
struct DbRows<'a>(&'a Connection, &'a Path);

impl edit::RawRows for DbRows<'_> {
    fn message(&self, session_id: &str, message_id: &str) -> Result<Value> {
        let data: String = self
            .0
            .prepare_cached("SELECT data FROM message WHERE id = ?1 AND session_id = ?2")
            .and_then(|mut st| st.query_row([message_id, session_id], |r| r.get(0)))
            .with_context(|| format!("{}: message row {message_id}", self.1.display()))?;
        serde_json::from_str(&data)
            .with_context(|| format!("{}: message row {message_id}", self.1.display()))
    }

    fn part(&self, message_id: &str, part_id: &str) -> Result<Value> {
        let data: String = self
            .0
            .prepare_cached("SELECT data FROM part WHERE id = ?1 AND message_id = ?2")
            .and_then(|mut st| st.query_row([part_id, message_id], |r| r.get(0)))
            .with_context(|| format!("{}: part row {part_id}", self.1.display()))?;
        serde_json::from_str(&data)
            .with_context(|| format!("{}: part row {part_id}", self.1.display()))
    }
}

/// Applies one edit to the rows of a copy (inside the copy's transaction).
fn apply_in_db(txn: &rusqlite::Transaction<'_>, e: &Edit) -> Result<()> {
    let (sid, mid) = (&*e.session_id, e.message_id.as_str());
    match &e.change {
        Change::SetParent { .. } | Change::ClearParent { .. } => {
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
                [Layout::Sqlite.serialize(&v).as_str(), &**part_id],
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
        Change::Session(_) => bail!("session {sid}: opencode stores no session-level changes"),
        Change::SetFirstKept { .. } | Change::CutBefore { .. } => bail!(
            "message {mid}: opencode stores no first kept entry ({} is a docker-agent change)",
            e.change.name()
        ),
        Change::AddNote { text } => {
            let t: i64 = txn
                .query_row(
                    "SELECT time_created FROM message WHERE id = ?1",
                    [mid],
                    |r| r.get(0),
                )
                .with_context(|| format!("message {mid} not found in the copy"))?;
            let mut pid = edit::note_part_id(mid);
            for k in 1..=1000 {
                let taken = txn
                    .query_row("SELECT 1 FROM part WHERE id = ?1", [&pid], |_| Ok(()))
                    .optional()?
                    .is_some();
                if !taken {
                    break;
                }
                pid = edit::note_part_id_candidate(mid, k);
            }
            let data =
                Layout::Sqlite.serialize(&edit::note_part(Layout::Sqlite, sid, mid, &pid, text));
            txn.execute(
                "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
                rusqlite::params![pid, mid, sid, t, data],
            )?;
        }
    }
    Ok(())
}
