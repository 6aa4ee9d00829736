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

pub(crate) use parse::{parse_message, parse_part};
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

    /// `$XDG_DATA_HOME/{opencode,kilo}` and `$HOME/.local/share/{opencode,kilo}`.
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
