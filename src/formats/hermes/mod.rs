//! hermes-agent (NousResearch) stores: the SQLite `$HERMES_HOME/state.db`
//! (default `~/.hermes/state.db`), one database for every session.
//! Facts: docs/formats/hermes.md (hermes-agent 0.19.0, schema v22).
//!
//! How it maps onto the model:
//! - one [`Session`] per `sessions` row, with its [`crate::model::Lineage`]
//!   (compression chain root, position, tip; the session a resume lands
//!   on) and its stored usage ([`Session::session_usage`]: the `sessions`
//!   columns, the main loop only, what ccusage counts);
//! - one [`crate::model::Message`] per `messages` row (archived rows
//!   included, hidden), in id order; its id is the row id. Parts:
//!   `<row>#<k>` for the content (`k` = 0 for text, the index of a
//!   JSON-encoded part), `<row>#call<k>` for each `tool_calls` entry,
//!   `<row>#api` for `api_content` (sent instead of `content`);
//! - compression markers session-doctor derives (hermes stores none):
//!   `compression:<ended session>` for a rotation, with the main-loop prompt
//!   size of the segment it ended as its trigger, on the chain's tip for
//!   every rotation and on every other continuation for the one that
//!   started it; `compression:<session>@<row>` before the first row of each
//!   in-place generation, whose progress the store cannot show;
//! - the visible view is what `hermes --resume` sends (`view.rs`).
//!
//! Memory: a session keeps figures, not text; edits re-read their rows by id.

mod edit;
mod parse;
mod view;

use crate::edit::{Applier, Edit, StoredChange};
use crate::formats::sqlite::Snapshot;
use crate::formats::{Copier, Store};
use crate::model::{Agent, Session};
use anyhow::{anyhow, Result};
use parse::{Graph, Schema};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

pub use parse::is_summary_text;

/// Ids session-doctor gives hermes parts and markers.
pub mod ids {
    /// Part `k` of the content of row `row`.
    pub fn part(row: &str, k: usize) -> String {
        format!("{row}#{k}")
    }

    /// The part of tool call `k` of row `row`.
    pub fn call_part(row: &str, k: usize) -> String {
        format!("{row}#call{k}")
    }

    /// The `api_content` part of row `row`.
    pub fn api_part(row: &str) -> String {
        format!("{row}#api")
    }

    /// The marker of the rotation that ended session `ended`.
    pub fn rotation(ended: &str) -> String {
        format!("compression:{ended}")
    }

    /// The marker of the in-place compression of `session` whose new rows
    /// start at row `first_row`.
    pub fn in_place(session: &str, first_row: &str) -> String {
        format!("compression:{session}@{first_row}")
    }

    /// What a part id names.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum PartRef {
        Content(usize),
        Call(usize),
        Api,
    }

    /// `(row id, what)` of a part id.
    pub fn parse_part(id: &str) -> Option<(&str, PartRef)> {
        let (row, rest) = id.split_once('#')?;
        let r = if rest == "api" {
            PartRef::Api
        } else if let Some(k) = rest.strip_prefix("call") {
            PartRef::Call(k.parse().ok()?)
        } else {
            PartRef::Content(rest.parse().ok()?)
        };
        Some((row, r))
    }
}

/// The hermes-agent format.
pub struct Hermes;

/// `$HERMES_HOME` when set and not empty, else `~/.hermes`.
pub fn hermes_home() -> Option<PathBuf> {
    std::env::var_os("HERMES_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| super::home().map(|h| h.join(".hermes")))
}

impl super::Format for Hermes {
    fn name(&self) -> &'static str {
        "hermes-agent state.db"
    }

    /// `state.db`, the name hermes gives its database (a database of
    /// another name is looked at when it is given by name).
    fn wants_file(&self, p: &Path) -> bool {
        p.file_name().is_some_and(|n| n == "state.db")
    }

    fn open_file(&self, p: &Path) -> super::Opened {
        open(p)
    }

    fn not_mine(&self, p: &Path) -> Option<super::NotMine> {
        self.wants_file(p).then(|| super::NotMine {
            why: crate::formats::sqlite::not_a_store(
                p,
                "hermes-agent's tables `sessions` (`id`, `started_at`) and `messages` (`session_id`, `role`, `content`)",
            ),
            common_name: true,
        })
    }

    /// `$HERMES_HOME`, else `~/.hermes` (profiles under `profiles/<name>/`
    /// are found by walking it).
    fn default_places(&self) -> &'static str {
        "hermes-agent state.db under $HERMES_HOME or $HOME/.hermes"
    }

    fn default_paths(&self) -> Vec<PathBuf> {
        hermes_home().into_iter().collect()
    }
}

/// Opens `p` as a hermes `state.db`: `Ok(None)` when it is not SQLite or
/// its tables are not hermes'.
pub fn open(p: &Path) -> super::Opened {
    if !matches!(
        crate::formats::sqlite::head(p),
        Ok(crate::formats::sqlite::Head::Sqlite)
    ) {
        return Ok(None);
    }
    let snap = Snapshot::open(p)?;
    let conn = snap.connect()?;
    let schema = Schema::read(&conn, p)?;
    if !schema.is_hermes() {
        return Ok(None);
    }
    drop(conn);
    Ok(Some(Box::new(HermesStore {
        path: p.to_path_buf(),
        snap,
        schema,
        graph: OnceLock::new(),
    })))
}

/// A hermes `state.db`, read through a [`Snapshot`] (never written).
pub struct HermesStore {
    path: PathBuf,
    snap: Snapshot,
    schema: Schema,
    graph: OnceLock<std::result::Result<Graph, String>>,
}

impl HermesStore {
    fn graph(&self) -> Result<&Graph> {
        self.graph
            .get_or_init(|| {
                self.snap
                    .connect()
                    .and_then(|c| Graph::read(&c, &self.schema, &self.path))
                    .map_err(|e| crate::error::chain(&e))
            })
            .as_ref()
            .map_err(|e| anyhow!("{e}"))
    }

    /// The step that gives the copy's hermes home `home` the settings and
    /// keys of the home the source db sits in (the folder holding it, which
    /// is what `HERMES_HOME` names: `~/.hermes`, `$HERMES_HOME`, a profile,
    /// docs/formats/hermes.md section 1): a `cp` of the `config.yaml` and
    /// `.env` found there, or, when neither is, a sentence saying so.
    fn settings_step(&self, home: &Path) -> String {
        use crate::formats::sh;
        let src = crate::fsx::absolute(&self.path);
        let src_home = src.parent().unwrap_or(Path::new("/"));
        let files = crate::formats::existing_files(src_home, &["config.yaml", ".env"]);
        if files.is_empty() {
            format!(
                "put config.yaml and .env from the hermes home you use into {}/ (the copy's hermes home needs your settings and keys; {}, the folder of {}, holds neither)",
                sh(home),
                sh(src_home),
                sh(&src)
            )
        } else {
            format!(
                "cp {} {}/   # the copy's hermes home needs your settings and keys",
                files.join(" "),
                sh(home)
            )
        }
    }

    /// A note on usage hermes books apart from the session's totals.
    /// The note of the auxiliary calls hermes books apart, and its figures
    /// (`auxiliary.<task>.calls`, `.input_tokens`, `.output_tokens`).
    fn aux_note(row: &parse::SessRow) -> Option<(String, Vec<(String, u64)>)> {
        if row.aux.is_empty() {
            return None;
        }
        let mut figures = Vec::new();
        let parts: Vec<String> = row
            .aux
            .iter()
            .map(|(task, calls, u)| {
                let input = u.input + u.cache_read + u.cache_write;
                figures.push((format!("auxiliary.{task}.calls"), *calls));
                figures.push((format!("auxiliary.{task}.input_tokens"), input));
                figures.push((format!("auxiliary.{task}.output_tokens"), u.output));
                format!(
                    "{task}: {calls} call(s), {input} input, {} output tokens",
                    u.output
                )
            })
            .collect();
        Some((
            format!(
                "not in tokens_total (ccusage leaves them out too): hermes books its auxiliary calls apart in session_model_usage ({})",
                parts.join("; ")
            ),
            figures,
        ))
    }
}

impl Store for HermesStore {
    fn agent(&self) -> Agent {
        Agent::Hermes
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn side_files(&self) -> Vec<PathBuf> {
        crate::formats::sqlite::side_files(&self.path)
    }

    /// The hermes home the db sits in (`~/.hermes`, `$HERMES_HOME`, a
    /// profile): no output folder goes inside.
    fn agent_dirs(&self) -> Vec<PathBuf> {
        let Some(dir) = self.path.parent() else {
            return Vec::new();
        };
        let named = dir.file_name().is_some_and(|n| n == ".hermes");
        let profile = dir
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|n| n == "profiles");
        let home = std::env::var_os("HERMES_HOME")
            .filter(|v| !v.is_empty())
            .is_some_and(|h| {
                let h = PathBuf::from(h);
                h.canonicalize().unwrap_or(h) == dir.canonicalize().unwrap_or(dir.to_path_buf())
            });
        if named || profile || home {
            vec![dir.to_path_buf()]
        } else {
            Vec::new()
        }
    }

    fn session_ids(&self) -> Result<Vec<String>> {
        Ok(self.graph()?.ids())
    }

    fn load(&self, id: &str) -> Result<Session> {
        let g = self.graph()?;
        let i = *g
            .index
            .get(id)
            .ok_or_else(|| anyhow!("{}: session {id} not found", self.path.display()))?;
        let row = &g.sessions[i];
        let mut s = Session::new(Agent::Hermes, id, row.title.clone(), self.path.clone());
        s.session_usage = row.usage;
        let lineage = g.lineage(i);
        let resumed_here = lineage.resumes == s.id;
        s.lineage = Some(Box::new(lineage));
        for (ended, child) in g.rotations(i) {
            s.messages.push(parse::rotation_marker(
                &g.sessions[ended],
                &g.sessions[child],
            ));
        }
        let model = row.model.as_deref().map(crate::model::sym);
        let conn = self.snap.connect()?;
        let facts = parse::read_rows(&conn, &self.schema, &self.path, &mut s, model.as_ref())?;
        parse::resolve_calls(&mut s, &facts);
        parse::mark_in_place(&mut s, &facts);
        s.visible = view::visible_view(&s.messages, &facts, resumed_here);
        if let Some((text, figures)) = Self::aux_note(row) {
            s.note(text, figures);
        }
        s.messages.shrink_to_fit();
        self.snap.unchanged()?;
        Ok(s)
    }

    fn copier(&self) -> &dyn Copier {
        self
    }
}

impl Applier for HermesStore {
    /// hermes sends only active rows: `compact` cuts history as hermes'
    /// own in-place compression does, archiving what it no longer sends.
    fn cuts_with_summary(&self) -> bool {
        true
    }

    fn apply(&self, session: &Session, edits: &[Edit]) -> Result<Session> {
        let conn = self.snap.connect()?;
        let location = self.path.display().to_string();
        edit::apply(
            &edit::Ctx {
                conn: &conn,
                schema: &self.schema,
                location: &location,
            },
            session,
            edits,
        )
    }
}

/// The first of `sessions` the copy at `dest` holds: the ids a copy changed
/// include the empty continuations it dropped, and hermes answers "Session
/// not found" to `--resume` of one. `None` when it holds none of them; the
/// first of them when the copy cannot be read.
fn held_session(dest: &Path, sessions: &[String]) -> Option<String> {
    let held = || -> Result<Option<String>> {
        let snap = Snapshot::open(dest)?;
        let conn = snap.connect()?;
        let mut st = conn.prepare("SELECT 1 FROM sessions WHERE id = ?1")?;
        for id in sessions {
            if st.exists([id])? {
                return Ok(Some(id.clone()));
            }
        }
        Ok(None)
    };
    held().unwrap_or_else(|_| sessions.first().cloned())
}

impl Copier for HermesStore {
    /// The copy and its side files: a replaced copy's are removed.
    fn copy_targets(&self, dest: &Path) -> Vec<PathBuf> {
        crate::formats::sqlite::with_side_files(dest)
    }

    fn copy_base(&self) -> PathBuf {
        crate::formats::folder_of(&self.path)
    }

    /// `state.db` (the file's own name): `--out` can be used as a
    /// `HERMES_HOME` as it is.
    fn copy_path(&self) -> PathBuf {
        crate::formats::file_name_or(&self.path, "state.db")
    }

    fn describe(&self, ix: &crate::model::Lookup<'_>, e: &Edit) -> StoredChange {
        edit::describe(ix, e)
    }

    /// hermes-agent reads `$HERMES_HOME/state.db` and resumes with
    /// `hermes chat --resume <id>` (docs/formats/hermes.md sections 1 and 10).
    /// The session resumed is the first of `sessions` the copy still holds
    /// ([`held_session`]): a repair drops an empty continuation, whose id
    /// the copy no longer has. The id is quoted for the shell (as remedy
    /// commands quote it).
    fn next_steps(&self, dest: &Path, sessions: &[String]) -> Vec<String> {
        use crate::formats::sh;
        let id = crate::formats::step_id(held_session(dest, sessions).as_deref());
        let home = dest.parent().unwrap_or(Path::new("."));
        let mut v = Vec::new();
        if dest.file_name().is_some_and(|n| n != "state.db") {
            v.push(format!("mv {} {}", sh(dest), sh(&home.join("state.db"))));
        }
        v.push(self.settings_step(home));
        v.push(format!(
            "HERMES_HOME={} hermes chat --resume {id}",
            sh(home)
        ));
        v.push(format!(
            "or, with hermes closed, move the original {} (and any -wal/-shm) aside and put the copy in its place",
            sh(&self.path)
        ));
        v
    }

    fn write_copy(&self, dest: &Path, edits: &[Edit], replace: bool) -> Result<()> {
        self.snap
            .write_copy(dest, replace, &|txn| edit::write(txn, &self.schema, edits))
    }
}
