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

/// A field kept as raw JSON text (borrowed from the line or row), decoded
/// only when used. `None` when absent, or `null` for an `Option` field.
pub(crate) type Raw<'a> = Option<&'a serde_json::value::RawValue>;

/// A string field as `Value::as_str` answers: `Some(None)` when absent or
/// not a string; the string, borrowed when it holds no escapes (the raw
/// text between the quotes is then the string itself); `None` when it does
/// not decode (a lone surrogate escape), for a reader that then leaves the
/// text to the tree reader.
pub(crate) fn raw_str(r: Raw<'_>) -> Option<Option<std::borrow::Cow<'_, str>>> {
    let Some(t) = r.map(serde_json::value::RawValue::get) else {
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
