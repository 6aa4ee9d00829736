//! opencode and Kilo CLI stores: the SQLite `opencode.db` / `kilo.db`
//! (opencode >= 1.2.0, Kilo 7.x) and the legacy JSON `storage/` tree (< 1.2.0).
//! Shapes: docs/formats/opencode-kilo.md sections 3 to 9.

mod edit;
mod legacy;
mod parse;
mod sqlite;
mod view;

use anyhow::Result;
use std::path::Path;

pub(crate) use parse::{message_of_text, parse_message, parse_part, part_of_text};
pub use view::visible_view;

/// Stored field names of the opencode message and part shapes.
const PARENT_FIELD: &str = "parentID";

/// The opencode / Kilo format.
pub struct Opencode;

impl super::Format for Opencode {
    fn name(&self) -> &'static str {
        "opencode.db, kilo.db, legacy opencode storage/"
    }

    fn wants_file(&self, p: &Path) -> bool {
        looks_like_db(p)
    }

    fn open_file(&self, p: &Path) -> super::Opened {
        open_file(p)
    }

    fn open_dir(&self, p: &Path) -> super::Opened {
        open_dir(p)
    }

    fn not_mine(&self, p: &Path) -> Option<super::NotMine> {
        looks_like_db(p).then(|| super::NotMine {
            why: crate::formats::sqlite::not_a_store(
                p,
                "opencode's tables `session`, `message` and `part`",
            ),
            common_name: false,
        })
    }

    /// `$XDG_DATA_HOME/{opencode,kilo}` and `$HOME/.local/share/{opencode,kilo}`.
    fn default_places(&self) -> &'static str {
        "opencode and Kilo under $XDG_DATA_HOME or $HOME/.local/share"
    }

    fn default_paths(&self) -> Vec<std::path::PathBuf> {
        let mut bases = Vec::new();
        if let Some(x) = std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
            bases.push(std::path::PathBuf::from(x));
        }
        if let Some(h) = super::home() {
            bases.push(h.join(".local/share"));
        }
        bases
            .iter()
            .flat_map(|b| ["opencode", "kilo"].map(|n| b.join(n)))
            .collect()
    }
}

/// True for file names the SQLite module should look at while walking folders.
pub fn looks_like_db(p: &Path) -> bool {
    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name.ends_with(".db") && (name.starts_with("opencode") || name.starts_with("kilo"))
}

/// Opens a db file as a store. `Ok(None)` when the file is not of this format.
pub fn open_file(p: &Path) -> Result<Option<Box<dyn super::Store>>> {
    sqlite::open(p)
}

/// Opens a legacy `storage/` dir as a store. `Ok(None)` when `p` is not one.
pub fn open_dir(p: &Path) -> Result<Option<Box<dyn super::Store>>> {
    legacy::open(p)
}

/// How opencode or Kilo loads a copy at `dest` (a db file, or a legacy
/// `storage/` folder): in a data folder of its own beside the copy
/// (`$XDG_DATA_HOME/<opencode|kilo>/`, docs/formats/opencode-kilo.md
/// section 1), resumed with `-s <id>`; or in place of the original.
/// The steps that resume the copy at `dest` of the store at `source` (an
/// `opencode.db`/`kilo.db` or a legacy `storage/` folder): from a data
/// folder of its own, or by putting it in the place of `source` itself
/// (the store the copy was made from, not the agent's default one: a copy
/// of a backup or of another `XDG_DATA_HOME` replaces that file). Paths
/// and the id are quoted for the shell (as remedy commands quote them).
pub(crate) fn next_steps(
    agent: crate::model::Agent,
    source: &Path,
    dest: &Path,
    sessions: &[String],
) -> Vec<String> {
    use crate::formats::sh;
    let (bin, dir) = match agent {
        crate::model::Agent::Kilo => ("kilo", "kilo"),
        _ => ("opencode", "opencode"),
    };
    let out = dest.parent().unwrap_or(Path::new("."));
    let data = out.join("data");
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let legacy = name == "storage";
    let target = data.join(dir).join(if legacy { "storage" } else { &name });
    vec![
        format!(
            "mkdir -p {} && cp {}{} {}",
            sh(&data.join(dir)),
            if legacy { "-R " } else { "" },
            sh(dest),
            sh(&target)
        ),
        format!(
            "XDG_DATA_HOME={} {bin} -s {}   # a data folder of its own: copy auth.json from your {dir} data folder into it to keep provider logins",
            sh(&data),
            crate::formats::step_id(sessions.first().map(String::as_str))
        ),
        format!(
            "or, with {bin} closed, move the original {}{} aside and put the copy in its place",
            sh(source),
            if legacy {
                ""
            } else {
                " (and any -wal/-shm beside it)"
            }
        ),
    ]
}
