//! The legacy opencode JSON tree (`storage/`, opencode < 1.2.0):
//! `session/<projectID>/<sessionID>.json`, `message/<sessionID>/<messageID>.json`,
//! `part/<messageID>/<partID>.json`, pretty-printed with 2 spaces. Ids come
//! from file names, as opencode's own JSON-to-SQLite migration takes them.

use super::edit::{self, Layout};
use super::parse::{assemble, parse_message, parse_part};
use crate::edit::Applier;
use crate::edit::{Change, Edit, StoredChange};
use crate::formats::{Copier, Store};
use crate::model::{Agent, LoadProblem, ProblemKind, Session};
use anyhow::{anyhow, bail, Context, Result};
use serde_json::Value;
use std::path::{Path, PathBuf};

pub struct LegacyStore {
    path: PathBuf,
    /// Session id -> its session file, built on first use.
    sessions: std::sync::OnceLock<rustc_hash::FxHashMap<String, PathBuf>>,
}

/// `Ok(Some)` when `p` is a `storage/` dir with `session/` and `message/` in it.
pub fn open(p: &Path) -> Result<Option<Box<dyn Store>>> {
    if p.join("session").is_dir() && p.join("message").is_dir() {
        return Ok(Some(Box::new(LegacyStore {
            path: p.to_path_buf(),
            sessions: Default::default(),
        })));
    }
    Ok(None)
}

fn stem(p: &Path) -> String {
    p.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn json_files(dir: &Path) -> Vec<PathBuf> {
    listed_json_files(dir).unwrap_or_default()
}

/// The `*.json` files of folder `dir`, sorted: none when it does not exist
/// (a message without parts has no `part/<message>/` folder).
///
/// # Errors
/// Any other reason the folder cannot be listed (a file where the folder
/// should be, no permission), as text for a [`LoadProblem`].
fn listed_json_files(dir: &Path) -> std::result::Result<Vec<PathBuf>, String> {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("cannot list the folder: {e}")),
    };
    let mut v = Vec::new();
    for e in rd {
        let p = e
            .map_err(|e| format!("cannot list the folder: {e}"))?
            .path();
        if p.extension().is_some_and(|x| x == "json") && !p.is_dir() {
            v.push(p);
        }
    }
    v.sort();
    Ok(v)
}

/// The problem of a file or folder of the tree (`at`) that cannot be read
/// or listed, for the session, message or part `id`.
fn unreadable(at: &Path, id: &str, error: String) -> LoadProblem {
    LoadProblem {
        location: at.display().to_string(),
        id: Some(id.to_string()),
        error,
        kind: ProblemKind::Unreadable,
        file: None,
        line: None,
        row: None,
    }
}

/// Reads one JSON file: a regular file of at most
/// [`crate::fsx::MAX_JSON_DOC_BYTES`] (a FIFO, a device or a bigger file is
/// refused with what it is).
fn read_json(p: &Path) -> std::result::Result<(Value, u64), String> {
    let bytes =
        crate::fsx::read_capped(p, crate::fsx::MAX_JSON_DOC_BYTES).map_err(|e| e.to_string())?;
    let v = serde_json::from_slice(&bytes).map_err(|e| {
        if bytes.starts_with(crate::formats::UTF8_BOM) {
            format!("invalid JSON: {}", crate::formats::bom_error("the file"))
        } else {
            format!("invalid JSON: {e}")
        }
    })?;
    Ok((v, bytes.len() as u64))
}

impl LegacyStore {
    fn session_files(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        if let Ok(rd) = std::fs::read_dir(self.path.join("session")) {
            for e in rd.filter_map(|e| e.ok()) {
                if e.path().is_dir() {
                    out.extend(json_files(&e.path()));
                }
            }
        }
        out.sort();
        out
    }
}

/// Re-reads stored files of the tree for [`edit::apply`].
struct TreeRows<'a>(&'a Path);

impl edit::RawRows for TreeRows<'_> {
    fn message(&self, session_id: &str, message_id: &str) -> Result<Value> {
        let f = self
            .0
            .join("message")
            .join(session_id)
            .join(format!("{message_id}.json"));
        read_json(&f)
            .map(|(v, _)| v)
            .map_err(|e| anyhow!("{}: {e}", f.display()))
    }

    fn part(&self, message_id: &str, part_id: &str, text: &mut Vec<u8>) -> Result<String> {
        let f = self
            .0
            .join("part")
            .join(message_id)
            .join(format!("{part_id}.json"));
        let bytes = crate::fsx::read_capped(&f, crate::fsx::MAX_JSON_DOC_BYTES)
            .map_err(|e| anyhow!("{}: {e}", f.display()))?;
        text.extend_from_slice(&bytes);
        Ok(f.display().to_string())
    }
}

impl LegacyStore {
    /// Applies one edit to the files of a copy rooted at `root`.
    fn apply_in_tree(&self, root: &Path, e: &Edit) -> Result<()> {
        let msg_file = root
            .join("message")
            .join(&*e.session_id)
            .join(format!("{}.json", e.message_id));
        let part_file = |pid: &str| {
            root.join("part")
                .join(&e.message_id)
                .join(format!("{pid}.json"))
        };
        let write = |path: &Path, v: &Value| -> Result<()> {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            std::fs::write(path, Layout::Legacy.serialize(v))
                .with_context(|| format!("{}: cannot write", path.display()))
        };
        match &e.change {
            Change::SetParent { .. } | Change::ClearParent { .. } => {
                let (mut v, _) =
                    read_json(&msg_file).map_err(|err| anyhow!("{}: {err}", msg_file.display()))?;
                edit::edit_message(&mut v, &e.change);
                write(&msg_file, &v)?;
            }
            Change::StripMedia { part_id, .. } | Change::Truncate { part_id, .. } => {
                let f = part_file(part_id);
                let (mut v, _) = read_json(&f).map_err(|err| anyhow!("{}: {err}", f.display()))?;
                edit::edit_part(&mut v, &e.change)
                    .map_err(|err| anyhow!("{}: {err}", f.display()))?;
                write(&f, &v)?;
            }
            Change::DropMessage => {
                std::fs::remove_file(&msg_file)
                    .with_context(|| format!("{}: cannot remove", msg_file.display()))?;
                let parts = root.join("part").join(&e.message_id);
                if parts.is_dir() {
                    std::fs::remove_dir_all(&parts)
                        .with_context(|| format!("{}: cannot remove", parts.display()))?;
                }
            }
            Change::DropCopies => bail!("message {}: one file per id, no copies", e.message_id),
            Change::Session(_) => bail!(
                "session {}: opencode stores no session-level changes",
                e.session_id
            ),
            Change::SetFirstKept { .. } | Change::CutBefore { .. } => bail!(
                "message {}: opencode stores no first kept entry ({} is a docker-agent change)",
                e.message_id,
                e.change.name()
            ),
            Change::DropThrough(_) => bail!(
                "message {}: opencode copies drop messages one by one ({} is for formats that drop runs)",
                e.message_id,
                e.change.name()
            ),
            Change::AddNote { text } => {
                let mut pid = edit::note_part_id(&e.message_id);
                for k in 1..=1000 {
                    if !part_file(&pid).exists() {
                        break;
                    }
                    pid = edit::note_part_id_candidate(&e.message_id, k);
                }
                let v = edit::note_part(Layout::Legacy, &e.session_id, &e.message_id, &pid, text);
                write(&part_file(&pid), &v)?;
            }
        }
        Ok(())
    }
}

impl Store for LegacyStore {
    fn agent(&self) -> Agent {
        Agent::Opencode
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn session_ids(&self) -> Result<Vec<String>> {
        let mut v: Vec<(i64, String)> = self
            .session_files()
            .iter()
            .map(|f| {
                let t = read_json(f)
                    .ok()
                    .and_then(|(v, _)| v.pointer("/time/created").and_then(Value::as_i64))
                    .unwrap_or(0);
                (t, stem(f))
            })
            .collect();
        v.sort();
        Ok(v.into_iter().map(|(_, id)| id).collect())
    }

    fn load(&self, id: &str) -> Result<Session> {
        let index = self.sessions.get_or_init(|| {
            let mut m = rustc_hash::FxHashMap::default();
            for f in self.session_files() {
                m.entry(stem(&f)).or_insert(f);
            }
            m
        });
        let sfile = index
            .get(id)
            .cloned()
            .ok_or_else(|| anyhow!("{}: no session {id}", self.path.display()))?;
        let mut problems = Vec::new();
        let title = match read_json(&sfile) {
            Ok((v, _)) => v.get("title").and_then(Value::as_str).map(str::to_string),
            Err(error) => {
                problems.push(unreadable(&sfile, id, error));
                None
            }
        };
        let mut session = Session::new(Agent::Opencode, id, title, self.path.clone());
        session.problems = problems;
        let mut parts = Vec::new();
        let mdir = self.path.join("message").join(id);
        let mfiles = listed_json_files(&mdir).unwrap_or_else(|e| {
            session.problems.push(unreadable(&mdir, id, e));
            Vec::new()
        });
        for mf in mfiles {
            let mid = stem(&mf);
            match read_json(&mf).and_then(|(v, n)| parse_message(&mid, v, n, None)) {
                Ok(m) => session.messages.push(m),
                Err(error) => session.problems.push(unreadable(&mf, &mid, error)),
            }
            let pdir = self.path.join("part").join(&mid);
            let pfiles = listed_json_files(&pdir).unwrap_or_else(|e| {
                session.problems.push(unreadable(&pdir, &mid, e));
                Vec::new()
            });
            for pf in pfiles {
                let pid = stem(&pf);
                match read_json(&pf).and_then(|(v, n)| parse_part(&pid, v, n)) {
                    Ok(p) => parts.push((mid.clone(), p)),
                    Err(error) => session.problems.push(unreadable(&pf, &pid, error)),
                }
            }
        }
        assemble(&mut session, parts);
        Ok(session)
    }

    fn copier(&self) -> &dyn Copier {
        self
    }

    /// The symbolic link loops of the tree: a link back to a folder above
    /// it, or a link that resolves to itself or around a ring of links.
    /// Reading the tree never follows one, and its copy leaves it out; they
    /// were passed over with no word. A `*.json` link of either kind is
    /// left to the loader, which reads it and reports it as `unreadable`.
    fn tree_warnings(&self) -> Vec<crate::error::InputError> {
        use crate::error::InputError;
        let mut out = Vec::new();
        for e in walkdir::WalkDir::new(&self.path)
            .follow_links(true)
            .sort_by_file_name()
        {
            let Err(e) = e else { continue };
            let Some(at) = e.path() else { continue };
            if let Some(anc) = e.loop_ancestor() {
                out.push(InputError::new(
                    at,
                    format!(
                        "a symbolic link loop back to {}; not followed",
                        anc.display()
                    ),
                ));
            } else if let Some(io) = e
                .io_error()
                .filter(|io| rustix::io::Errno::from_io_error(io) == Some(rustix::io::Errno::LOOP))
            {
                if at.extension().is_some_and(|x| x == "json") {
                    continue;
                }
                out.push(InputError::new(
                    at,
                    format!("a symbolic link that cannot be followed ({io}); skipped"),
                ));
            }
        }
        out
    }
}

impl Applier for LegacyStore {
    fn apply(&self, session: &Session, edits: &[Edit]) -> Result<Session> {
        edit::apply(session, edits, Layout::Legacy, &TreeRows(&self.path))
    }
    fn apply_owned(&self, session: Session, edits: &[Edit]) -> Result<Session> {
        self.apply_after(session, &[], edits)
    }
    fn apply_after(&self, session: Session, earlier: &[Edit], edits: &[Edit]) -> Result<Session> {
        edit::apply_after(
            session,
            earlier,
            edits,
            Layout::Legacy,
            &TreeRows(&self.path),
        )
    }
}

impl Copier for LegacyStore {
    fn copy_base(&self) -> PathBuf {
        crate::formats::folder_of(&self.path)
    }

    fn copy_path(&self) -> PathBuf {
        PathBuf::from("storage")
    }

    fn describe(&self, ix: &crate::model::Lookup<'_>, edit: &Edit) -> StoredChange {
        edit::describe(ix, edit)
    }

    fn next_steps(&self, dest: &Path, sessions: &[String]) -> Vec<String> {
        super::next_steps(crate::model::Agent::Opencode, &self.path, dest, sessions)
    }

    fn write_copy(&self, dest: &Path, edits: &[Edit], replace: bool) -> Result<()> {
        let staged = crate::fsx::Staged::dir(dest)?;
        let root = staged.path().to_path_buf();
        for entry in walkdir::WalkDir::new(&self.path).sort_by_file_name() {
            let entry = entry.with_context(|| format!("{}: cannot walk", self.path.display()))?;
            let rel = entry.path().strip_prefix(&self.path)?;
            let target = root.join(rel);
            let ft = entry.file_type();
            if ft.is_dir() {
                std::fs::create_dir_all(&target)
                    .with_context(|| format!("{}: cannot create", target.display()))?;
                continue;
            }
            // Regular files (also through a symbolic link) are copied; a FIFO
            // or device is not (the load reported it as unreadable).
            if crate::fsx::ensure_regular(entry.path()).is_err() {
                continue;
            }
            let mut src = crate::fsx::open_regular(entry.path())
                .with_context(|| format!("{}: cannot open", entry.path().display()))?;
            let mut out = std::fs::File::create(&target).with_context(|| {
                format!("{}: cannot write (is the disk full?)", target.display())
            })?;
            std::io::copy(&mut src, &mut out).with_context(|| {
                format!(
                    "{}: cannot copy to {}",
                    entry.path().display(),
                    target.display()
                )
            })?;
            // The copy is for the agent to use: writable even when the original is read-only.
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o644)).ok();
            }
        }
        for e in edits {
            self.apply_in_tree(&root, e)?;
        }
        staged.commit(0o755, replace)
    }
}
