//! Measures shared by every format: token estimate and inline media
//! decoding. Pure functions of text and bytes: nothing here knows the
//! session model (which builds on this module, not the other way round).

use base64::Engine;
use sha2::{Digest, Sha256};

/// Characters (Unicode scalar values) of `s`: the unit of the token estimate.
pub fn char_count(s: &str) -> u64 {
    s.chars().count() as u64
}

/// Whether `text` holds a marker `session-doctor compact` leaves where it cut,
/// stripped or removed something (so counts the agent reported before are
/// no longer about this history).
pub fn has_compact_marker(text: &str) -> bool {
    text.contains("session-doctor compact")
}

/// Estimated tokens for `chars` characters: `round(chars / 4)`, opencode's
/// `Token.estimate` (upstream `util/token.ts`, 4 characters per token).
pub fn estimate_tokens(chars: u64) -> u64 {
    (chars + 2) / 4
}

/// Parses a base64 `data:` URL (`data:<mime>;base64,<data>`) and returns the
/// decoded media facts, or `None` when `url` is not an inline base64 data URL
/// (a `file://` or `http` URL carries no payload).
///
/// Padding and line breaks are tolerated; undecodable data still counts with
/// its estimated decoded size (`len * 3 / 4`) and the hash of the raw text.
pub fn parse_data_url(url: &str, filename: Option<&str>) -> Option<Media> {
    let rest = url.strip_prefix("data:")?;
    let (header, data) = rest.split_once(',')?;
    let mut fields = header.split(';');
    let mime = fields.next().unwrap_or("").to_string();
    if !fields.any(|f| f.eq_ignore_ascii_case("base64")) {
        return None;
    }
    let mut m = media_from_base64(&mime, data, filename);
    m.encoded_bytes = url.len() as u64;
    Some(m)
}

/// Media facts of base64 `data` (no `data:` prefix), as stored in an image
/// block (Claude Code `{"type":"image","source":{"type":"base64","media_type","data"}}`).
/// `encoded_bytes` is the length of `data`. Padding and line breaks are
/// tolerated; undecodable data counts with its estimated decoded size
/// (`len * 3 / 4`) and the hash of the raw text.
pub fn media_from_base64(mime: &str, data: &str, filename: Option<&str>) -> Media {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
    // Most data is padded and has no line breaks: decoded as it is, with no
    // scan for whitespace first (the decoder refuses whitespace, so data
    // that holds some fails here and is cleaned below).
    let first = STANDARD.decode(data.as_bytes());
    let cleaned: std::borrow::Cow<'_, str> =
        if first.is_err() && data.bytes().any(|b| b.is_ascii_whitespace()) {
            data.chars().filter(|c| !c.is_ascii_whitespace()).collect()
        } else {
            data.into()
        };
    let decoded = first
        .or_else(|e| match &cleaned {
            std::borrow::Cow::Owned(c) => STANDARD.decode(c.as_bytes()),
            std::borrow::Cow::Borrowed(_) => Err(e),
        })
        .or_else(|_| STANDARD_NO_PAD.decode(cleaned.as_bytes()));
    let (decoded_bytes, sha256) = match decoded {
        Ok(bytes) => (bytes.len() as u64, sha256_hex(&bytes)),
        Err(_) => (
            (cleaned.len() as u64) * 3 / 4,
            sha256_hex(cleaned.as_bytes()),
        ),
    };
    Media {
        mime: if mime.is_empty() {
            "application/octet-stream".into()
        } else {
            mime.to_string()
        },
        filename: filename.map(str::to_string),
        decoded_bytes,
        encoded_bytes: data.len() as u64,
        sha256,
    }
}

/// An inline media item (base64 data URL or base64 block) found in a part.
#[derive(Debug, Clone, PartialEq)]
pub struct Media {
    pub mime: String,
    pub filename: Option<String>,
    /// Decoded size in bytes (not the base64 length).
    pub decoded_bytes: u64,
    /// Length in bytes of the data URL (or base64 data) as stored.
    pub encoded_bytes: u64,
    /// Lowercase hex SHA-256 of the decoded bytes.
    pub sha256: String,
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimate_rounds_like_opencode() {
        assert_eq!(estimate_tokens(0), 0);
        assert_eq!(estimate_tokens(1), 0);
        assert_eq!(estimate_tokens(2), 1);
        assert_eq!(estimate_tokens(6), 2);
        assert_eq!(estimate_tokens(4000), 1000);
    }

    #[test]
    fn data_url_decodes_and_hashes() {
        let m = parse_data_url("data:image/png;base64,aGVsbG8=", Some("a.png")).unwrap();
        assert_eq!(m.mime, "image/png");
        assert_eq!(m.decoded_bytes, 5);
        assert_eq!(m.sha256, sha256_hex(b"hello"));
        assert!(parse_data_url("file:///x.png", None).is_none());
        assert!(parse_data_url("data:text/plain,hello", None).is_none());
    }

    /// Padded or not, with line breaks or not, base64 data gives the
    /// decoded size and hash; data that is not base64 gives the estimate
    /// and the hash of its text without whitespace.
    #[test]
    fn base64_media_is_decoded_whatever_its_padding_and_line_breaks() {
        let hello = sha256_hex(b"hello");
        for data in [
            "aGVsbG8=",
            "aGVsbG8",
            "aGVs\nbG8=",
            "aGVs\r\nbG8",
            " aGVsbG8= ",
        ] {
            let m = media_from_base64("image/png", data, None);
            assert_eq!(
                (m.decoded_bytes, m.sha256.as_str()),
                (5, hello.as_str()),
                "{data:?}"
            );
            assert_eq!(m.encoded_bytes, data.len() as u64);
        }
        for (data, text) in [("aGV!bG8=", "aGV!bG8="), ("aGV!\nbG8=", "aGV!bG8=")] {
            let m = media_from_base64("", data, None);
            assert_eq!(m.decoded_bytes, text.len() as u64 * 3 / 4, "{data:?}");
            assert_eq!(m.sha256, sha256_hex(text.as_bytes()), "{data:?}");
            assert_eq!(m.mime, "application/octet-stream");
        }
    }
}
