//! Texts measured in the pass that reads their line, never kept: the typed
//! JSONL readers (Claude Code content blocks, Codex response items) read a
//! string field as its [`Figures`] instead of copying it out. serde_json
//! hands an escaped string over in a reused buffer, so nothing is allocated.
//! Also the raw-field helpers those readers (and the opencode row reader)
//! share: a field kept as raw JSON ([`Raw`]) read as a string, a boolean or
//! an integer the way a `serde_json::Value` reader answers.

use crate::measure::{char_count, has_compact_marker};
use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// The visitor methods for JSON scalars other than strings (`null`, numbers,
/// booleans), each giving `$v`: what every reader here makes of a value
/// that holds no text.
macro_rules! no_text_in_scalars {
    ($t:ty, $v:expr) => {
        fn visit_bool<E>(self, _: bool) -> Result<$t, E> {
            Ok($v)
        }
        fn visit_i64<E>(self, _: i64) -> Result<$t, E> {
            Ok($v)
        }
        fn visit_u64<E>(self, _: u64) -> Result<$t, E> {
            Ok($v)
        }
        fn visit_f64<E>(self, _: f64) -> Result<$t, E> {
            Ok($v)
        }
        fn visit_unit<E>(self) -> Result<$t, E> {
            Ok($v)
        }
        fn visit_none<E>(self) -> Result<$t, E> {
            Ok($v)
        }
    };
}

/// A JSON string (an object key, a type name) borrowed from the input when
/// it holds no escape, copied only when it does. serde's own
/// `Cow<'de, str>` always copies: one allocation per key of every line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Str<'de>(pub std::borrow::Cow<'de, str>);

impl std::ops::Deref for Str<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for Str<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Str<'de>, E> {
                Ok(Str(std::borrow::Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Str<'de>, E> {
                Ok(Str(std::borrow::Cow::Owned(s.to_owned())))
            }
            fn visit_string<E>(self, s: String) -> Result<Str<'de>, E> {
                Ok(Str(std::borrow::Cow::Owned(s)))
            }
        }
        d.deserialize_str(V)
    }
}

/// What the part figures need of a text: characters (the token estimate's
/// unit), UTF-8 bytes, and whether it holds a `session-doctor compact` marker.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Figures {
    pub chars: u64,
    pub bytes: u64,
    pub marker: bool,
}

impl Figures {
    pub(crate) fn of(s: &str) -> Figures {
        Figures {
            chars: char_count(s),
            bytes: s.len() as u64,
            marker: has_compact_marker(s),
        }
    }

    /// The figures of a validated JSON string as stored
    /// ([`crate::formats::json_scan::Scan::string`]), without decoding it;
    /// `None` when it holds a `\u` escape (the caller decodes it). Each
    /// other escape is two characters stored for one character and one
    /// byte decoded, and none of them decodes to a character of the
    /// marker, which holds none of `" \ /` or a control byte: so the marker
    /// is in the stored text exactly when it is in the decoded one.
    pub(crate) fn of_json(s: crate::formats::json_scan::JsonStr<'_>) -> Option<Figures> {
        if s.unicode {
            return None;
        }
        let escapes = u64::from(s.escapes);
        Some(Figures {
            chars: char_count(s.raw).saturating_sub(escapes),
            bytes: (s.raw.len() as u64).saturating_sub(escapes),
            marker: has_compact_marker(s.raw),
        })
    }

    /// The figures of `texts` joined by line feeds (`texts.join("\n")`; the
    /// marker, which holds no line feed, cannot span a join).
    pub(crate) fn joined(texts: impl IntoIterator<Item = Figures>) -> Figures {
        let mut f = Figures::default();
        let mut n = 0u64;
        for t in texts {
            f.chars += t.chars;
            f.bytes += t.bytes;
            f.marker |= t.marker;
            n += 1;
        }
        f.chars += n.saturating_sub(1);
        f.bytes += n.saturating_sub(1);
        f
    }
}

/// A JSON value read for its text: a string as its [`Figures`]; an array or
/// object (skipped) as [`Measured::Nested`]; `null`, a number or a boolean,
/// like an absent field, as [`Measured::Absent`].
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Measured {
    #[default]
    Absent,
    Str(Figures),
    Nested,
}

impl Measured {
    /// The figures when the value is a string (`Value::as_str`'s answer).
    pub(crate) fn str(self) -> Option<Figures> {
        match self {
            Measured::Str(f) => Some(f),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for Measured {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Measured;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_str<E>(self, s: &str) -> Result<Measured, E> {
                Ok(Measured::Str(Figures::of(s)))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Measured, A::Error> {
                while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Measured::Nested)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut q: A) -> Result<Measured, A::Error> {
                while q.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Measured::Nested)
            }
            no_text_in_scalars!(Measured, Measured::Absent);
        }
        d.deserialize_any(V)
    }
}

/// The `text` strings of a list of items, as a reader of `Value`s collects
/// them: a string stands for itself; an array gives the `text` string of
/// each object in it (items without one are left out); anything else gives
/// no text. Joined by line feeds, they make [`Texts::figures`].
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Texts(pub Vec<Figures>);

impl Texts {
    pub(crate) fn figures(&self) -> Figures {
        Figures::joined(self.0.iter().copied())
    }
}

/// One item of a [`Texts`] array: its `text` when it is an object with a
/// string `text` (a repeated `text` key is refused: a tree reader would take
/// the last one, so the caller reads the line as a tree).
struct TextItem(Option<Figures>);

impl<'de> Deserialize<'de> for TextItem {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = TextItem;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<TextItem, A::Error> {
                use serde::de::Error;
                let mut text: Option<Measured> = None;
                while let Some(k) = m.next_key::<Str<'de>>()? {
                    if &*k == "text" {
                        if text.is_some() {
                            return Err(A::Error::custom("duplicate field `text`"));
                        }
                        text = Some(m.next_value()?);
                    } else {
                        m.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(TextItem(text.and_then(Measured::str)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut q: A) -> Result<TextItem, A::Error> {
                while q.next_element::<IgnoredAny>()?.is_some() {}
                Ok(TextItem(None))
            }
            fn visit_str<E>(self, _: &str) -> Result<TextItem, E> {
                Ok(TextItem(None))
            }
            no_text_in_scalars!(TextItem, TextItem(None));
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for Texts {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Texts;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_str<E>(self, s: &str) -> Result<Texts, E> {
                Ok(Texts(vec![Figures::of(s)]))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut q: A) -> Result<Texts, A::Error> {
                let mut v = Vec::new();
                while let Some(TextItem(t)) = q.next_element()? {
                    v.extend(t);
                }
                Ok(Texts(v))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Texts, A::Error> {
                while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Texts::default())
            }
            no_text_in_scalars!(Texts, Texts::default());
        }
        d.deserialize_any(V)
    }
}

/// An object field read in the same pass as its parent when it is an
/// object of `T`'s shape; any other JSON value reads as absent.
pub(crate) struct Lenient<T>(pub(crate) Option<T>);

impl<T> Default for Lenient<T> {
    fn default() -> Self {
        Lenient(None)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Lenient<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Lenient<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                map: A,
            ) -> std::result::Result<Self::Value, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(|t| Lenient(Some(t)))
            }
            fn visit_seq<A: SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Lenient(None))
            }
            fn visit_bool<E>(self, _: bool) -> std::result::Result<Self::Value, E> {
                Ok(Lenient(None))
            }
            fn visit_i64<E>(self, _: i64) -> std::result::Result<Self::Value, E> {
                Ok(Lenient(None))
            }
            fn visit_u64<E>(self, _: u64) -> std::result::Result<Self::Value, E> {
                Ok(Lenient(None))
            }
            fn visit_f64<E>(self, _: f64) -> std::result::Result<Self::Value, E> {
                Ok(Lenient(None))
            }
            fn visit_str<E>(self, _: &str) -> std::result::Result<Self::Value, E> {
                Ok(Lenient(None))
            }
            fn visit_unit<E>(self) -> std::result::Result<Self::Value, E> {
                Ok(Lenient(None))
            }
            fn visit_none<E>(self) -> std::result::Result<Self::Value, E> {
                Ok(Lenient(None))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// Bytes `v` takes as serde_json writes it compactly (a string with its
/// quotes and escapes, a number as serde_json formats it).
pub(crate) fn written_len<T: serde::Serialize + ?Sized>(v: &T) -> u64 {
    struct Counter(u64);
    impl std::io::Write for Counter {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0 += b.len() as u64;
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut c = Counter(0);
    let _ = serde_json::to_writer(&mut c, v);
    c.0
}

/// The visitor methods for JSON values other than strings, objects and
/// arrays, each giving `$f(len)` where `len` is what the value's tree
/// writes back ([`JsonLen`]).
macro_rules! written_scalars {
    ($t:ty, $f:expr) => {
        fn visit_bool<E>(self, b: bool) -> Result<$t, E> {
            Ok($f(if b { 4 } else { 5 }))
        }
        fn visit_i64<E>(self, n: i64) -> Result<$t, E> {
            Ok($f($crate::formats::measured::written_len(&n)))
        }
        fn visit_u64<E>(self, n: u64) -> Result<$t, E> {
            Ok($f($crate::formats::measured::written_len(&n)))
        }
        fn visit_f64<E>(self, n: f64) -> Result<$t, E> {
            Ok($f($crate::formats::measured::written_len(
                &serde_json::Value::from(n),
            )))
        }
        fn visit_unit<E>(self) -> Result<$t, E> {
            Ok($f(4))
        }
        fn visit_none<E>(self) -> Result<$t, E> {
            Ok($f(4))
        }
    };
}
pub(crate) use written_scalars;

/// The length of a JSON value as serde_json writes its tree back compactly
/// (bytes; what `json_len` of a `serde_json::Value` answers), measured
/// while it is read: the reader gets the same visitor calls a tree is
/// built from, and answers each with the bytes that part of the tree
/// writes. Refused (so the caller reads the line as a tree): an object
/// with a repeated key (its tree keeps one) or a key serde_json's tree
/// reader treats as its own (`$serde_json::private::...`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct JsonLen(pub u64);

/// [`JsonLen`] of an array, its elements read as `JsonLen`.
pub(crate) fn seq_len<'de, A: SeqAccess<'de>>(mut q: A) -> Result<u64, A::Error> {
    let (mut len, mut n) = (2u64, 0u64);
    while let Some(JsonLen(l)) = q.next_element()? {
        len += l;
        n += 1;
    }
    Ok(len + n.saturating_sub(1))
}

/// [`JsonLen`] of an object. `field(key, map)` may read a key's value
/// itself and answer its length; `None` reads it as a [`JsonLen`].
pub(crate) fn map_len<'de, A: MapAccess<'de>>(
    mut m: A,
    mut field: impl FnMut(&str, &mut A) -> Result<Option<u64>, A::Error>,
) -> Result<u64, A::Error> {
    use serde::de::Error;
    let mut seen: Vec<Str<'de>> = Vec::new();
    let mut len = 2u64;
    while let Some(k) = m.next_key::<Str<'de>>()? {
        if seen.contains(&k) || k.starts_with("$serde_json::private::") {
            return Err(A::Error::custom(
                "a repeated or reserved key: read as a tree",
            ));
        }
        if !seen.is_empty() {
            len += 1;
        }
        len += written_len(&*k) + 1;
        len += match field(&k, &mut m)? {
            Some(l) => l,
            None => m.next_value::<JsonLen>()?.0,
        };
        seen.push(k);
    }
    Ok(len)
}

impl<'de> Deserialize<'de> for JsonLen {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = JsonLen;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_str<E>(self, s: &str) -> Result<JsonLen, E> {
                Ok(JsonLen(written_len(s)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, q: A) -> Result<JsonLen, A::Error> {
                seq_len(q).map(JsonLen)
            }
            fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<JsonLen, A::Error> {
                map_len(m, |_, _| Ok(None)).map(JsonLen)
            }
            written_scalars!(JsonLen, JsonLen);
        }
        d.deserialize_any(V)
    }
}

/// A JSON value's [`JsonLen`], and its text when it is a string (borrowed
/// when it holds no escapes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Captured<'a> {
    pub len: u64,
    pub text: Option<std::borrow::Cow<'a, str>>,
}

impl<'a> Captured<'a> {
    fn sized(len: u64) -> Captured<'a> {
        Captured { len, text: None }
    }
    fn text(s: std::borrow::Cow<'a, str>) -> Captured<'a> {
        Captured {
            len: written_len(&*s),
            text: Some(s),
        }
    }
}

impl<'de> Deserialize<'de> for Captured<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde::de::DeserializeSeed::deserialize(CaptureIn(None), d)
    }
}

/// Reads a [`Captured`] (`CaptureIn(None)`), or, with `Some(key)`, one that
/// also takes from an object the string value of `key` as its text: a
/// Codex `image_url`, either the URL itself or `{url}`.
pub(crate) struct CaptureIn(pub Option<&'static str>);

impl<'de> serde::de::DeserializeSeed<'de> for CaptureIn {
    type Value = Captured<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Captured<'de>, D::Error> {
        struct V(Option<&'static str>);
        impl<'de> Visitor<'de> for V {
            type Value = Captured<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Captured<'de>, E> {
                Ok(Captured::text(std::borrow::Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Captured<'de>, E> {
                Ok(Captured::text(std::borrow::Cow::Owned(s.to_owned())))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, q: A) -> Result<Captured<'de>, A::Error> {
                seq_len(q).map(Captured::sized)
            }
            fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<Captured<'de>, A::Error> {
                let mut text = None;
                let len = map_len(m, |k, m| {
                    if self.0 != Some(k) {
                        return Ok(None);
                    }
                    let v: Captured = m.next_value()?;
                    text = v.text;
                    Ok(Some(v.len))
                })?;
                Ok(Captured { len, text })
            }
            written_scalars!(Captured<'de>, Captured::sized);
        }
        d.deserialize_any(V(self.0))
    }
}

/// The text of one JSON value as stored (from its first byte to its last,
/// no surrounding whitespace), borrowed from the line or row: what
/// serde_json's `&RawValue` captures, in a type a reader of this crate can
/// build too ([`crate::formats::json_scan`] splits a line into such values
/// after validating it as serde_json would).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Json<'a>(&'a str);

impl<'a> Json<'a> {
    /// The value's text.
    pub(crate) fn get(self) -> &'a str {
        self.0
    }

    /// `text`, which a validating reader has accepted as one JSON value.
    pub(crate) fn accepted(text: &'a str) -> Json<'a> {
        Json(text)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Json<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        <&'de serde_json::value::RawValue>::deserialize(d).map(|r| Json(r.get()))
    }
}

/// A field kept as raw JSON text (borrowed from the line or row), decoded
/// only when used. `None` when absent, or `null` for an `Option` field.
pub(crate) type Raw<'a> = Option<Json<'a>>;

/// A string field as `Value::as_str` answers: `Some(None)` when absent or
/// not a string; the string, borrowed when it holds no escapes (the raw
/// text between the quotes is then the string itself); `None` when it does
/// not decode (a lone surrogate escape), for a reader that then leaves the
/// text to the tree reader.
pub(crate) fn raw_str(r: Raw<'_>) -> Option<Option<std::borrow::Cow<'_, str>>> {
    let Some(t) = r.map(Json::get) else {
        return Some(None);
    };
    if !t.starts_with('"') {
        return Some(None);
    }
    if !t.contains('\\') {
        return Some(t.get(1..t.len() - 1).map(std::borrow::Cow::Borrowed));
    }
    serde_json::from_str::<String>(t)
        .ok()
        .map(|s| Some(std::borrow::Cow::Owned(s)))
}

/// A JSON `true` (`Value::as_bool`, anything else and absent as false).
pub(crate) fn raw_true(r: Raw<'_>) -> bool {
    r.is_some_and(|r| r.get() == "true")
}

/// An integer field as `Value::as_u64` / `as_i64` read it (`None` for any
/// other value or one out of `T`'s range).
pub(crate) fn raw_int<T: serde::de::DeserializeOwned>(r: Raw<'_>) -> Option<T> {
    r.and_then(|r| serde_json::from_str(r.get()).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    /// [`Figures::of_json`] gives the figures of the decoded string, or
    /// leaves a `\u` escape to the decoder.
    #[test]
    fn figures_of_stored_strings_are_those_of_the_decoded_ones() {
        use crate::formats::json_scan::Scan;
        for text in [
            r#""""#,
            "\"plain caf\u{e9} \u{1f600}\"",
            r#""a\nb\t\"q\" \\ \/ \b\f\r""#,
            r#""x session-doctor compact: cut y""#,
            r#""session-doctor compact\n""#,
            r#""\"session-doctor compact\"""#,
            r#""session-doctor\ncompact""#,
            r#""h\u00e9llo""#,
            r#""\u0073ession-doctor compact""#,
        ] {
            let s = Scan::new(text).string().expect(text);
            let decoded: String = serde_json::from_str(text).unwrap();
            match Figures::of_json(s) {
                Some(f) => assert_eq!(f, Figures::of(&decoded), "{text}"),
                None => assert!(text.contains("\\u"), "{text}"),
            }
        }
    }

    /// [`JsonLen`] answers what a tree of the same text writes back
    /// (`serde_json::to_writer` of the `Value`): on random documents (every
    /// kind of number serde_json reads, escapes of every kind, non-ASCII
    /// text, nesting, any whitespace) and on every line of the fixtures. A
    /// document with a repeated key is refused, and only such a document.
    #[test]
    fn json_len_is_what_the_tree_writes_back() {
        let mut next = crate::formats::random_json::rng(0x2545_f491_4f6c_dd1d);
        let numbers = [
            "0",
            "-0",
            "12",
            "-7",
            "1.0",
            "1e2",
            "-2.5E-3",
            "0.1",
            "3.141592653589793",
            "18446744073709551615",
            "18446744073709551616",
            "-9223372036854775808",
            "-9223372036854775809",
            "1e308",
            "5e-324",
            "100000000000000000000000",
            "-0.0",
            "true",
            "false",
            "null",
        ];
        let strings = [
            "",
            "a",
            "é",
            "\\n",
            "\\u0001",
            "\\u001f",
            "\\/",
            "\\u00e9",
            "\\\"",
            "\\\\",
            "\\ud83d\\ude00",
            "\\t\\b\\f\\r",
            "\u{7f}",
            "日本",
            "x y",
        ];
        // "typ\u0065" is "type" written another way.
        let keys = ["a", "b", "type", "typ\\u0065", "é", ""];
        let spaces = ["", " ", "\n", "\t "];
        let pieces = crate::formats::random_json::Pieces {
            numbers: &numbers,
            strings: &strings,
            keys: &keys,
            spaces: &spaces,
        };
        let (mut agreed, mut refused) = (0, 0);
        for _ in 0..30_000 {
            let mut text = String::new();
            let dup = crate::formats::random_json::doc(&mut next, &pieces, 0, &mut text);
            let tree: serde_json::Value = serde_json::from_str(&text).expect(&text);
            match serde_json::from_str::<JsonLen>(&text) {
                Ok(JsonLen(n)) => {
                    assert!(!dup, "{text}: a repeated key was not refused");
                    assert_eq!(n, written_len(&tree), "{text}");
                    agreed += 1;
                }
                Err(e) => {
                    assert!(dup, "{text}: refused: {e}");
                    refused += 1;
                }
            }
        }
        assert!(
            agreed > 20_000 && refused > 100,
            "{agreed} agreed, {refused} refused"
        );
        let reserved = r#"{"$serde_json::private::RawValue":"1"}"#;
        assert!(serde_json::from_str::<JsonLen>(reserved).is_err());
        let mut lines = 0;
        for e in walkdir::WalkDir::new(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures")) {
            let e = e.expect("fixtures are readable");
            if e.path().extension().is_some_and(|x| x == "jsonl") {
                let text = std::fs::read_to_string(e.path()).unwrap_or_default();
                for l in text.lines() {
                    let (Ok(tree), Ok(JsonLen(n))) = (
                        serde_json::from_str::<serde_json::Value>(l),
                        serde_json::from_str::<JsonLen>(l),
                    ) else {
                        continue;
                    };
                    assert_eq!(n, written_len(&tree), "{}: {l}", e.path().display());
                    lines += 1;
                }
            }
        }
        assert!(lines > 1_000, "{lines} fixture lines");
    }

    /// A key or value without escapes is borrowed from the line; one with
    /// escapes is decoded into its own string; anything but a string is
    /// refused (the typed readers then read the line as a tree).
    #[test]
    fn str_borrows_unless_the_string_has_escapes() {
        let plain: Str = serde_json::from_str(r#""type""#).expect("a string");
        assert!(matches!(plain.0, Cow::Borrowed("type")));
        let escaped: Str = serde_json::from_str(r#""ty\u0070e""#).expect("a string");
        assert!(matches!(&escaped.0, Cow::Owned(s) if s == "type"));
        assert!(serde_json::from_str::<Str>("12").is_err());
        assert!(serde_json::from_str::<Str>("null").is_err());
        let keys: Vec<Str> = {
            let mut d = serde_json::Deserializer::from_str(r#"{"a":1,"b\n":2}"#);
            struct Keys;
            impl<'de> Visitor<'de> for Keys {
                type Value = Vec<Str<'de>>;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("an object")
                }
                fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
                    let mut v = Vec::new();
                    while let Some(k) = m.next_key::<Str<'de>>()? {
                        m.next_value::<IgnoredAny>()?;
                        v.push(k);
                    }
                    Ok(v)
                }
            }
            d.deserialize_map(Keys).expect("an object")
        };
        assert!(matches!(keys[0].0, Cow::Borrowed("a")));
        assert_eq!(&*keys[1], "b\n");
    }
}
