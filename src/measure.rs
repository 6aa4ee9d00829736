//! Measures shared by every format: token estimate and inline media decoding.

use crate::model::Media;
use base64::Engine;
use sha2::{Digest, Sha256};

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
    let cleaned: String = data.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(cleaned.as_bytes())
        .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(cleaned.as_bytes()));
    let (decoded_bytes, sha256) = match decoded {
        Ok(bytes) => (bytes.len() as u64, sha256_hex(&bytes)),
        Err(_) => (
            (cleaned.len() as u64) * 3 / 4,
            sha256_hex(cleaned.as_bytes()),
        ),
    };
    Some(Media {
        mime: if mime.is_empty() {
            "application/octet-stream".into()
        } else {
            mime
        },
        filename: filename.map(str::to_string),
        decoded_bytes,
        encoded_bytes: url.len() as u64,
        sha256,
    })
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
}
