//! Errors about inputs and outputs, carried through a run and reported once.
//!
//! A run never stops at the first bad input (ripgrep's rule): every path
//! that cannot be read or written becomes an [`InputError`], the other inputs
//! are processed, and the exit code is 2 at the end when any error was
//! recorded. Warnings (a FIFO skipped while walking a folder, a symbolic link
//! loop not followed) are reported the same way but do not change the exit
//! code.

use serde::Serialize;
use std::path::{Path, PathBuf};

/// A path that could not be read or written, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    pub path: PathBuf,
    /// What went wrong and what was expected (never repeats `path` at its start).
    pub reason: String,
    /// About an output (a copy or the output folder that could not be
    /// written, or was refused), not an input that could not be read
    /// ([`InputError::output`]); reports name it so ([`EntryKind::Unwritable`]).
    pub output: bool,
}

impl InputError {
    /// An error about `path`. A `reason` that starts with the path (as most
    /// lower-level messages do) has that prefix removed.
    pub fn new(path: &Path, reason: impl Into<String>) -> InputError {
        let reason = reason.into();
        let shown = format!("{}: ", path.display());
        let reason = reason
            .strip_prefix(&shown)
            .map(str::to_string)
            .unwrap_or(reason);
        InputError {
            path: path.to_path_buf(),
            reason,
            output: false,
        }
    }

    /// An error about an output at or for `path` ([`InputError::new`]
    /// otherwise): a copy refused or not written, an output folder that
    /// cannot be used.
    pub fn output(path: &Path, reason: impl Into<String>) -> InputError {
        InputError {
            output: true,
            ..InputError::new(path, reason)
        }
    }

    /// From an error chain ([`chain`]).
    pub fn from_anyhow(path: &Path, e: &anyhow::Error) -> InputError {
        InputError::new(path, chain(e))
    }
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.reason)
    }
}

impl Serialize for InputError {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("InputError", 2)?;
        st.serialize_field("path", &self.path.display().to_string())?;
        st.serialize_field("reason", &self.reason)?;
        st.end()
    }
}

/// An error chain as `{e:#}` shows it (each cause after the one it
/// explains, joined by ": "), but a rusqlite error said once
/// ([`crate::formats::sqlite::reason`]): its source, the SQLite result code
/// it already states, is left out.
pub fn chain(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut after_sqlite = false;
    for cause in e.chain() {
        if after_sqlite && cause.is::<rusqlite::ffi::Error>() {
            continue;
        }
        after_sqlite = false;
        match cause.downcast_ref::<rusqlite::Error>() {
            Some(r) => {
                parts.push(crate::formats::sqlite::reason(r));
                after_sqlite = true;
            }
            None => parts.push(cause.to_string()),
        }
    }
    parts.join(": ")
}

/// An error that stops a run and is about one path (a config file that
/// cannot be used, an output folder refused): shown as the error it wraps
/// ([`chain`]), the path kept for the `path` of the error entry machine
/// formats print ([`Problems::stopped`]).
#[derive(Debug)]
pub struct About {
    pub path: PathBuf,
    pub error: anyhow::Error,
}

impl About {
    /// `error`, about `path`.
    pub fn wrap(path: &Path, error: anyhow::Error) -> anyhow::Error {
        anyhow::Error::new(About {
            path: path.to_path_buf(),
            error,
        })
    }

    /// The path the first [`About`] in `e`'s chain names.
    pub fn path_of(e: &anyhow::Error) -> Option<&Path> {
        e.chain()
            .find_map(|c| c.downcast_ref::<About>())
            .map(|a| a.path.as_path())
    }
}

impl std::fmt::Display for About {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&chain(&self.error))
    }
}

/// No source: the wrapped chain is already in the message.
impl std::error::Error for About {}

/// Errors and warnings gathered during a run.
#[derive(Debug, Default, Clone)]
pub struct Problems {
    pub errors: Vec<InputError>,
    pub warnings: Vec<InputError>,
    /// The error that stopped the run before its report was made (exit 2),
    /// for the machine formats' document: JSON lists it after `errors`.
    /// Its `path` is the one the error is about ([`About`]), else empty; its
    /// `reason` the whole message, as on stderr (the path not taken out).
    /// The table leaves it to that one line on stderr.
    pub stopped: Option<InputError>,
}

/// What a [`Problems`] entry is, as [`Problems::each`] gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// An input that could not be read ([`Problems::errors`]).
    Unreadable,
    /// A copy that could not be written or was refused, or an output folder
    /// that could not be used ([`Problems::errors`], [`InputError::output`]).
    Unwritable,
    /// An input passed over ([`Problems::warnings`]).
    Skipped,
    /// The error that stopped the run ([`Problems::stopped`]).
    Stopped,
}

impl Problems {
    /// Every entry in the order reports give them (errors, warnings, then
    /// the error that stopped the run), each with its kind and its message:
    /// `path: reason` for an input, the whole message (the path already in
    /// it) for the stopping error.
    pub fn each(&self) -> impl Iterator<Item = (EntryKind, &InputError, String)> {
        fn with(k: EntryKind, e: &InputError) -> (EntryKind, &InputError, String) {
            (k, e, e.to_string())
        }
        self.errors
            .iter()
            .map(|e| {
                let k = if e.output {
                    EntryKind::Unwritable
                } else {
                    EntryKind::Unreadable
                };
                with(k, e)
            })
            .chain(self.warnings.iter().map(|e| with(EntryKind::Skipped, e)))
            .chain(
                self.stopped
                    .iter()
                    .map(|e| (EntryKind::Stopped, e, e.reason.clone())),
            )
    }

    /// Errors about inputs that could not be read (not outputs).
    pub fn unreadable(&self) -> usize {
        self.errors.iter().filter(|e| !e.output).count()
    }

    /// Errors about outputs ([`InputError::output`]).
    pub fn unwritable(&self) -> usize {
        self.errors.iter().filter(|e| e.output).count()
    }

    pub fn error(&mut self, e: InputError) {
        if !self.errors.contains(&e) {
            self.errors.push(e);
        }
    }

    pub fn warn(&mut self, e: InputError) {
        if !self.warnings.contains(&e) {
            self.warnings.push(e);
        }
    }

    pub fn extend(&mut self, o: Problems) {
        for e in o.errors {
            self.error(e);
        }
        for w in o.warnings {
            self.warn(w);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_is_not_repeated_in_the_reason() {
        let e = InputError::new(Path::new("/a/b.db"), "/a/b.db: not a SQLite database");
        assert_eq!(e.reason, "not a SQLite database");
        assert_eq!(e.to_string(), "/a/b.db: not a SQLite database");
        let j = serde_json::to_value(&e).unwrap();
        assert_eq!(
            j,
            serde_json::json!({"path": "/a/b.db", "reason": "not a SQLite database"})
        );
    }
}
