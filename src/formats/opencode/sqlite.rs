//! opencode / Kilo SQLite stores (`opencode.db`, `kilo.db`; schema in
//! docs/formats/opencode-kilo.md sections 3.1 and 3.2). `message.data` and `part.data`
//! hold the JSON without the id columns.

use super::edit::{self, Layout};
use super::parse::{
    attach, message_of_text, parse_message, parse_part, part_of_text, sort_messages, PartSink,
};
use crate::edit::Applier;
use crate::edit::{Change, Edit, StoredChange};
use crate::formats::sqlite::Snapshot;
use crate::formats::{Copier, Store};
use crate::model::{Agent, LoadProblem, Message, Part, ProblemKind, Session};
use anyhow::{anyhow, bail, Context, Result};
use rayon::prelude::*;
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
                "{}: cannot start a read transaction: {}",
                self.path.display(),
                crate::formats::sqlite::reason(&e)
            )
        })?;
        Ok(conn)
    }

    fn loc(&self, table: &str, id: &str) -> String {
        format!("{}: {table} row {id}", self.path.display())
    }

    /// A read error of table `table` while session `id` is loaded.
    fn fail(&self, id: &str, table: &str, e: rusqlite::Error) -> anyhow::Error {
        anyhow!(
            "{}: session {id}: cannot read table {table}: {}",
            self.path.display(),
            crate::formats::sqlite::reason(&e)
        )
    }

    /// The problem of a row of `table` that could not be read.
    fn problem(&self, table: &str, bad: BadRow) -> LoadProblem {
        let (location, row) = match &bad.id {
            Some(id) => (self.loc(table, id), format!("{table} {id}")),
            None => (
                self.loc(table, &format!("with rowid {}", bad.rowid)),
                format!("{table} with rowid {}", bad.rowid),
            ),
        };
        LoadProblem {
            location,
            id: bad.id,
            error: bad.error,
            kind: ProblemKind::Unreadable,
            file: None,
            line: None,
            row: Some(row),
        }
    }

    /// Adds a decoded message row to `session`, or its problem.
    fn take_message(&self, session: &mut Session, m: std::result::Result<Message, BadRow>) {
        match m {
            Ok(m) => session.messages.push(m),
            Err(p) => session.problems.push(self.problem("message", p)),
        }
    }

    /// [`Store::load`] of a big session in two overlapping stages: a
    /// thread steps SQLite through `conn` (in its read transaction) and
    /// copies blocks of rows, while the rows of the block before are parsed
    /// on every core of the pool and taken in row order. The same rows, in
    /// the same order, as the one-thread read gives.
    fn load_pipelined(
        &self,
        conn: Connection,
        mut session: Session,
        block_bytes: usize,
    ) -> Result<Session> {
        let id = session.id.clone();
        let (tx, rx) = std::sync::mpsc::sync_channel::<Block>(1);
        let (back, spare) = std::sync::mpsc::channel::<Block>();
        std::thread::scope(|scope| {
            let reader = scope.spawn(|| self.read_blocks(conn, &id, block_bytes, tx, spare));
            let mut blocks = rx.iter();
            let mut first_parts = None;
            for b in blocks.by_ref() {
                if b.parts {
                    first_parts = Some(b);
                    break;
                }
                for m in b.decode(message_row, &back) {
                    self.take_message(&mut session, m);
                }
            }
            sort_messages(&mut session);
            let mut sink = PartSink::new(&session.messages);
            for b in first_parts.into_iter().chain(blocks) {
                for p in b.decode(part_row, &back) {
                    match p {
                        Ok((mid, p)) => sink.add(mid, p),
                        Err(p) => session.problems.push(self.problem("part", p)),
                    }
                }
            }
            let parts = sink.finish();
            match reader.join() {
                Ok(r) => r?,
                Err(panic) => std::panic::resume_unwind(panic),
            }
            attach(&mut session, parts);
            Ok(session)
        })
    }

    /// The reading stage of [`SqliteStore::load_pipelined`]: the message
    /// rows of session `id`, then its part rows, sent in blocks of about
    /// `block_bytes` of `data`, filling the blocks sent back on `spare`
    /// again; stops early when the receiver is gone.
    fn read_blocks(
        &self,
        conn: Connection,
        id: &str,
        block_bytes: usize,
        tx: std::sync::mpsc::SyncSender<Block>,
        spare: std::sync::mpsc::Receiver<Block>,
    ) -> Result<()> {
        let fail = |table: &str, e: rusqlite::Error| self.fail(id, table, e);
        let empty = |parts: bool| {
            let mut b = spare.try_recv().unwrap_or_default();
            b.parts = parts;
            b.rows.clear();
            b.text.clear();
            b
        };
        for (table, sql) in [("message", MESSAGE_ROWS), ("part", PART_ROWS)] {
            let parts = table == "part";
            let mut st = self.prepare(&conn, table, sql)?;
            let mut rows = st.query([id]).map_err(|e| fail(table, e))?;
            let mut block = empty(parts);
            loop {
                let r = rows.next().map_err(|e| fail(table, e))?;
                if let Some(r) = r {
                    let c = columns(r, parts);
                    let text = &mut block.text;
                    block.rows.push(RawRow {
                        rowid: c.rowid,
                        ids: c.ids,
                        time: c.time,
                        data: c.data.map(|(t, n)| {
                            let at = text.len();
                            text.push_str(t);
                            (at..text.len(), n)
                        }),
                    });
                }
                let end = r.is_none();
                if (end && !block.rows.is_empty()) || block.text.len() >= block_bytes {
                    let full = std::mem::replace(&mut block, empty(parts));
                    if tx.send(full).is_err() {
                        return Ok(());
                    }
                }
                if end {
                    break;
                }
            }
        }
        let _ = conn.execute_batch("COMMIT");
        Ok(())
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

/// The message rows of a session, in session order (an index has it).
const MESSAGE_ROWS: &str =
    "SELECT rowid, id, time_created, data FROM message WHERE session_id = ?1 ORDER BY time_created, id";

/// The part rows of a session, in the store's order: an `ORDER BY id` here
/// made SQLite sort every row's `data` in a temporary b-tree on disk (1.7 s
/// of a 1 GB opencode.db's 2.3 s read); [`PartSink`] orders them.
const PART_ROWS: &str = "SELECT rowid, id, message_id, data FROM part WHERE session_id = ?1";

/// From this many messages on, a session is loaded in two overlapping
/// stages ([`SqliteStore::load_pipelined`]); below it, a thread and its
/// channel cost more than they overlap.
const PIPELINE_FROM_MESSAGES: usize = 2048;

/// About this many bytes of `data` per block of rows sent from the reading
/// stage to the parsing stage (bytes; two blocks are alive at once).
const BLOCK_BYTES: usize = 4 << 20;

/// One block of rows from the reading stage, of one table. Blocks go back
/// to the reader to be filled again: a fresh buffer per block (or per
/// row) cost a page fault per 4 KiB written, a third of the reader's time.
#[derive(Default)]
struct Block {
    /// Rows of `part` (else of `message`).
    parts: bool,
    rows: Vec<RawRow>,
    /// The rows' `data`, one after another.
    text: String,
}

impl Block {
    /// `decode` of each row, on every core of the pool, in row order; the
    /// emptied block goes `back` to the reader.
    fn decode<T: Send>(
        mut self,
        decode: fn(Columns<(&str, u64)>) -> T,
        back: &std::sync::mpsc::Sender<Block>,
    ) -> Vec<T> {
        let out = std::mem::take(&mut self.rows)
            .into_par_iter()
            .map(|r| decode(self.row(r)))
            .collect();
        let _ = back.send(self);
        out
    }

    /// Row `r` of this block, its `data` borrowed from the block's text.
    fn row(&self, r: RawRow) -> Columns<(&str, u64)> {
        Columns {
            rowid: r.rowid,
            ids: r.ids,
            time: r.time,
            data: r.data.and_then(|(at, n)| {
                // The range was pushed as a whole `str`, so it is on boundaries.
                self.text
                    .get(at)
                    .map(|t| (t, n))
                    .ok_or_else(|| "`data` was not kept whole".to_string())
            }),
        }
    }
}

/// The columns of a row of [`MESSAGE_ROWS`] or [`PART_ROWS`]: `data` is
/// `D`, borrowed from the row ([`columns`]) or where a block keeps it
/// ([`RawRow`]).
struct Columns<D> {
    rowid: i64,
    /// `id`, and for a part its `message_id` (empty for a message), or why
    /// they could not be read.
    ids: std::result::Result<(String, String), String>,
    /// A message's `time_created` column.
    time: Option<i64>,
    /// `data` with its stored size in bytes (see [`text_of`]).
    data: std::result::Result<D, String>,
}

/// A row as SQLite gave it, owned (it crosses to the parsing workers):
/// where its `data` is in the block's text, with its stored size.
type RawRow = Columns<(std::ops::Range<usize>, u64)>;

/// The columns of row `r` of `part` (`parts`) or `message`.
fn columns<'r>(r: &'r rusqlite::Row<'_>, parts: bool) -> Columns<(&'r str, u64)> {
    Columns {
        rowid: r.get(0).unwrap_or(-1),
        ids: if parts {
            id_of(r, 1, "id").and_then(|p| Ok((p, id_of(r, 2, "message_id")?)))
        } else {
            id_of(r, 1, "id").map(|m| (m, String::new()))
        },
        time: if parts { None } else { r.get(2).ok() },
        data: r.get_ref(3).map_err(|e| e.to_string()).and_then(text_of),
    }
}

/// A row that could not be read: its id when that was readable.
struct BadRow {
    rowid: i64,
    id: Option<String>,
    error: String,
}

/// What one row decodes to, with its id and stored size: `read` of its
/// `data` text (the typed reader, no JSON tree), else, when `read` leaves
/// the row to it, `parse` of `data` read as a JSON tree; a pure function of
/// the row, so it runs on any core.
fn decode<T>(
    rowid: i64,
    id: std::result::Result<String, String>,
    data: std::result::Result<(&str, u64), String>,
    read: impl FnOnce(&str, &str, u64) -> Option<T>,
    parse: impl FnOnce(&str, Value, u64) -> std::result::Result<T, String>,
) -> std::result::Result<T, BadRow> {
    let id = id.map_err(|error| BadRow {
        rowid,
        id: None,
        error,
    })?;
    data.and_then(|(text, n)| {
        if let Some(t) = read(&id, text, n) {
            return Ok(t);
        }
        let v: Value =
            serde_json::from_str(text).map_err(|e| format!("invalid JSON in `data`: {e}"))?;
        parse(&id, v, n)
    })
    .map_err(|error| BadRow {
        rowid,
        id: Some(id.clone()),
        error,
    })
}

/// The message of one `message` row (see [`decode`]).
fn message_row(c: Columns<(&str, u64)>) -> std::result::Result<Message, BadRow> {
    let time = c.time;
    let id = c.ids.map(|(m, _)| m);
    decode(
        c.rowid,
        id,
        c.data,
        |id, t, n| message_of_text(id, t, n, time),
        |id, v, n| parse_message(id, v, n, time),
    )
}

/// The part of one `part` row with its message id (see [`decode`]).
fn part_row(c: Columns<(&str, u64)>) -> std::result::Result<(String, Part), BadRow> {
    let (id, mid) = match c.ids {
        Ok((p, m)) => (Ok(p), m),
        Err(e) => (Err(e), String::new()),
    };
    decode(c.rowid, id, c.data, part_of_text, parse_part).map(|p| (mid, p))
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
        crate::formats::sqlite::side_files(&self.path)
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
        let s = self.load_with(id, PIPELINE_FROM_MESSAGES, BLOCK_BYTES)?;
        self.snap.unchanged()?;
        Ok(s)
    }

    fn copier(&self) -> &dyn Copier {
        self
    }
}

impl SqliteStore {
    /// [`Store::load`], in two stages from `pipeline_from` messages on,
    /// with blocks of about `block_bytes` of `data` (tests set both).
    fn load_with(&self, id: &str, pipeline_from: usize, block_bytes: usize) -> Result<Session> {
        let conn = self.conn()?;
        let fail = |table: &str, e: rusqlite::Error| self.fail(id, table, e);
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
        let count = usize::try_from(count).unwrap_or(0);
        session.messages.reserve_exact(count);
        if count >= pipeline_from && rayon::current_num_threads() > 1 {
            return self.load_pipelined(conn, session, block_bytes);
        }
        let mut st = self.prepare(&conn, "message", MESSAGE_ROWS)?;
        let mut rows = st.query([id]).map_err(|e| fail("message", e))?;
        while let Some(r) = rows.next().map_err(|e| fail("message", e))? {
            self.take_message(&mut session, message_row(columns(r, false)));
        }
        drop(rows);
        let mut st = self.prepare(&conn, "part", PART_ROWS)?;
        let mut rows = st.query([id]).map_err(|e| fail("part", e))?;
        // Each part goes under its message as it is read, in the store's
        // order; the sink puts each message's parts in part id order (byte
        // order, as Rust compares ids, whatever the column collation).
        sort_messages(&mut session);
        let mut parts = PartSink::new(&session.messages);
        while let Some(r) = rows.next().map_err(|e| fail("part", e))? {
            match part_row(columns(r, true)) {
                Ok((mid, p)) => parts.add(mid, p),
                Err(p) => session.problems.push(self.problem("part", p)),
            }
        }
        drop(rows);
        let _ = conn.execute_batch("COMMIT");
        let parts = parts.finish();
        attach(&mut session, parts);
        Ok(session)
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
    /// The copy and its side files: a replaced copy's are removed.
    fn copy_targets(&self, dest: &Path) -> Vec<PathBuf> {
        crate::formats::sqlite::with_side_files(dest)
    }

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
        super::next_steps(self.agent, &self.path, dest, sessions)
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

impl DbRows<'_> {
    /// `take` of the `data` text of the one row `sql` selects with
    /// `params`, where SQLite holds it (no copy first: an edited row is
    /// often a big tool output). `what` names the row in errors.
    fn read<T>(
        &self,
        sql: &str,
        params: [&str; 2],
        what: &str,
        take: impl FnOnce(&str) -> std::result::Result<T, String>,
    ) -> Result<T> {
        self.0
            .prepare_cached(sql)
            .and_then(|mut st| {
                st.query_row(params, |r| {
                    Ok(r.get_ref(0)
                        .map_err(|e| e.to_string())
                        .and_then(text_of)
                        .and_then(|(t, _)| take(t)))
                })
            })
            .with_context(|| what.to_string())?
            .map_err(|e| anyhow!("{what}: {e}"))
    }
}

impl edit::RawRows for DbRows<'_> {
    fn message(&self, session_id: &str, message_id: &str) -> Result<Value> {
        self.read(
            "SELECT data FROM message WHERE id = ?1 AND session_id = ?2",
            [message_id, session_id],
            &format!("{}: message row {message_id}", self.1.display()),
            |t| serde_json::from_str(t).map_err(|e| e.to_string()),
        )
    }

    fn part(&self, message_id: &str, part_id: &str, text: &mut Vec<u8>) -> Result<String> {
        let what = format!("{}: part row {part_id}", self.1.display());
        self.read(
            "SELECT data FROM part WHERE id = ?1 AND message_id = ?2",
            [part_id, message_id],
            &what,
            |t| {
                text.extend_from_slice(t.as_bytes());
                Ok(())
            },
        )?;
        Ok(what)
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
        Change::DropThrough(_) => bail!(
            "message {mid}: opencode copies drop messages one by one ({} is for formats that drop runs)",
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every session of `db`, loaded on one thread and in two stages with
    /// blocks of `block_bytes`, as `Debug` text (everything the model holds).
    fn both_ways(db: &Path, block_bytes: usize) -> (Vec<String>, Vec<String>) {
        let store = SqliteStore {
            path: db.to_path_buf(),
            agent: Agent::Opencode,
            snap: Snapshot::open(db).unwrap(),
        };
        let ids = store.session_ids().unwrap();
        assert!(!ids.is_empty(), "{}: no session", db.display());
        let load = |from| -> Vec<String> {
            ids.iter()
                .map(|id| format!("{:?}", store.load_with(id, from, block_bytes).unwrap()))
                .collect()
        };
        (load(usize::MAX), load(0))
    }

    /// The two-stage load gives what the one-thread load gives, on every
    /// real opencode and Kilo database of the fixtures, with blocks of one
    /// row or a few, and on one with rows that cannot be read, a part whose
    /// message is missing, and parts stored out of id order.
    #[test]
    fn a_session_read_in_two_stages_loads_what_one_thread_loads() {
        let mut dbs: Vec<PathBuf> = walkdir::WalkDir::new("fixtures/opencode")
            .into_iter()
            .filter_map(|e| e.ok())
            .map(|e| e.into_path())
            .filter(|p| p.extension().is_some_and(|x| x == "db"))
            .collect();
        dbs.sort();
        assert!(dbs.len() >= 5, "{dbs:?}");
        let d = tempfile::tempdir().unwrap();
        let bad = d.path().join("opencode.db");
        let prune = dbs
            .iter()
            .find(|p| p.to_string_lossy().contains("prune"))
            .unwrap();
        std::fs::copy(prune, &bad).unwrap();
        {
            let c = Connection::open(&bad).unwrap();
            c.execute_batch(
                "PRAGMA journal_mode=delete; PRAGMA foreign_keys=off;
                 UPDATE message SET data = '{not json' WHERE rowid = (SELECT min(rowid) FROM message);
                 INSERT INTO message (id, session_id, time_created, time_updated, data)
                   SELECT x'6d73675f78', session_id, time_created, time_updated, data FROM message LIMIT 1;
                 UPDATE part SET data = 42 WHERE rowid = (SELECT max(rowid) FROM part);
                 INSERT INTO part (id, message_id, session_id, time_created, time_updated, data)
                   SELECT 'prt_0', 'msg_gone', session_id, time_created, time_updated, data FROM part LIMIT 1;
                 INSERT INTO part (id, message_id, session_id, time_created, time_updated, data)
                   SELECT 'prt_00', message_id, session_id, time_created, time_updated, CAST(x'ff' AS BLOB) FROM part LIMIT 1;",
            )
            .unwrap();
        }
        dbs.push(bad);
        for db in &dbs {
            for block_bytes in [1, 4096] {
                let (one, two) = both_ways(db, block_bytes);
                assert_eq!(
                    one,
                    two,
                    "{} with blocks of {block_bytes} bytes",
                    db.display()
                );
            }
        }
        let (one, _) = both_ways(dbs.last().unwrap(), 1);
        for problem in [
            "invalid JSON in `data`",
            "expected a JSON object, found the number 42",
            "`id` is not text",
            "not UTF-8",
        ] {
            assert!(one.iter().any(|s| s.contains(problem)), "{problem}");
        }
        assert!(one.iter().any(|s| s.contains("msg_gone")));
    }

    /// The real `prune` database in WAL mode with no `-wal` (opencode
    /// closed) is read without locks; when opencode then writes and
    /// checkpoints, a session loaded after it is refused with the file's
    /// name, not read half old, half new.
    #[test]
    fn a_session_of_a_database_written_since_it_was_opened_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let db = d.path().join("opencode.db");
        std::fs::copy("fixtures/opencode/prune/opencode.db", &db).unwrap();
        Connection::open(&db)
            .unwrap()
            .pragma_update(None, "journal_mode", "WAL")
            .unwrap();
        let store = open(&db).unwrap().unwrap();
        let ids = store.session_ids().unwrap();
        assert!(!ids.is_empty());
        let s = store.load(&ids[0]).unwrap();
        assert!(!s.messages.is_empty());
        std::thread::sleep(std::time::Duration::from_millis(20));
        Connection::open(&db)
            .unwrap()
            .execute("UPDATE session SET title = title || ' (renamed)'", [])
            .unwrap();
        let e = format!("{:#}", store.load(&ids[0]).unwrap_err());
        assert!(
            e.contains("opencode.db") && e.contains("changed while it was read"),
            "{e}"
        );
    }
}
