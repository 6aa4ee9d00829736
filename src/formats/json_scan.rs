//! A validating reader of one JSON object, faster than serde_json at the
//! part of a line that costs most: skipping long strings.
//!
//! The JSONL loaders read each line into a struct of raw fields
//! ([`crate::formats::measured::Raw`]). serde_json validates every string it
//! skips 8 bytes a step and goes back to its byte loop at every escape; tool
//! outputs in Claude Code transcripts hold an escape every few dozen bytes,
//! and that scan was the largest item of `check`'s profile on the
//! many-sessions benchmark (`skip_to_escape` and `ignore_str`, 18.6% of the
//! samples). [`Scan`] looks for quotes, backslashes and control bytes 64
//! bytes at a time (SSE2 on x86-64) and handles every escape of a block
//! from its bit mask.
//!
//! **What it accepts.** Exactly what serde_json accepts when it reads the
//! text into a struct of raw fields, or less: RFC 8259 values, with
//! serde_json's rules for what it skips (a string may hold any byte but
//! `"`, `\` and the control bytes 0x00-0x1F; an escape is one of
//! `\" \\ \/ \b \f \n \r \t` or `\u` and four hex digits, whatever code
//! point they name; numbers by the JSON grammar; whitespace is space, tab,
//! line feed and carriage return). It gives up (`None`) where serde_json
//! or the tree reader might answer otherwise, and the caller then reads
//! the text with serde_json as before:
//! - a key that holds an escape (serde_json decodes keys before matching);
//! - a number with an exponent, or more than [`LONG_INTEGER`] digits
//!   before its point (it might be out of a 64-bit float's range, which
//!   the tree reader refuses: [`crate::formats::Prescan`]);
//! - nesting deeper than [`MAX_DEPTH`] (the tree reader's limit);
//! - anything that is not JSON.
//!
//! So a text it accepts is accepted by the typed reader with the same
//! fields, and passes both prescan checks.

use super::measured::Json;
use super::MAX_DEPTH;

/// Digits before a number's point past which [`Scan`] leaves the number
/// to serde_json: a 300-digit integer is below 1e300, within a 64-bit
/// float's range (about 1.8e308), so any shorter one is too.
pub(crate) const LONG_INTEGER: usize = 300;

/// A JSON string as stored, validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct JsonStr<'a> {
    /// Its text between the quotes, escapes as written.
    pub raw: &'a str,
    /// Escapes in it (`\n` and `\u00e9` count one each).
    pub escapes: u32,
    /// Whether one of them is a `\u` escape (the others stand for one
    /// byte each: `"`, `\`, `/` or a control byte).
    pub unicode: bool,
}

/// An object key as [`Scan::object_with`] hands it over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Key<'a> {
    /// A key with no escape: its text is the key.
    Plain(&'a str),
    /// A key with an escape (which serde_json decodes before matching it).
    Escaped,
}

/// A cursor over one JSON text (`text`, valid UTF-8) that validates what
/// it passes over. Every method returns `None` when the text is not what
/// it reads or holds something left to serde_json (module notes); the
/// cursor is then somewhere inside the text and the caller gives up on it.
pub(crate) struct Scan<'a> {
    text: &'a str,
    i: usize,
    depth: usize,
}

impl<'a> Scan<'a> {
    /// A cursor at the start of `text`.
    pub(crate) fn new(text: &'a str) -> Scan<'a> {
        Scan {
            text,
            i: 0,
            depth: 0,
        }
    }

    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    /// Skips JSON whitespace; the next byte, if any.
    fn ws(&mut self) -> Option<u8> {
        let b = self.bytes();
        while let Some(&c) = b.get(self.i) {
            if !matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
                return Some(c);
            }
            self.i += 1;
        }
        None
    }

    /// The first byte of the next value (after whitespace), not consumed.
    pub(crate) fn peek(&mut self) -> Option<u8> {
        self.ws()
    }

    /// Whether only whitespace is left.
    pub(crate) fn end(&mut self) -> Option<()> {
        self.ws().is_none().then_some(())
    }

    /// Reads the next value, validated, and gives its text.
    pub(crate) fn value(&mut self) -> Option<Json<'a>> {
        self.ws()?;
        let start = self.i;
        self.skip_value()?;
        Some(Json::accepted(self.text.get(start..self.i)?))
    }

    /// Reads the next value, a string.
    pub(crate) fn string(&mut self) -> Option<JsonStr<'a>> {
        if self.ws()? != b'"' {
            return None;
        }
        let start = self.i + 1;
        let found = skip_str(self.bytes(), start)?;
        self.i = found.end;
        Some(JsonStr {
            raw: self.text.get(start..found.end - 1)?,
            escapes: found.escapes,
            unicode: found.unicode,
        })
    }

    /// Reads the next value, an object, calling `field(key, self)` for
    /// each of its keys in order with the cursor at the key's value, which
    /// `field` must read (with [`Scan::value`] or [`Scan::object`]). A key
    /// that holds an escape gives `None` (module notes), as does `field`
    /// giving `None`.
    pub(crate) fn object(
        &mut self,
        field: &mut dyn FnMut(&'a str, &mut Scan<'a>) -> Option<()>,
    ) -> Option<()> {
        self.object_with(&mut |key, s| match key {
            Key::Plain(k) => field(k, s),
            Key::Escaped => None,
        })
    }

    /// Reads the next value, an array, calling `item(self)` for each of its
    /// elements with the cursor at it, which `item` must read.
    pub(crate) fn array(
        &mut self,
        item: &mut dyn FnMut(&mut Scan<'a>) -> Option<()>,
    ) -> Option<()> {
        if self.ws()? != b'[' {
            return None;
        }
        self.items(b']', item)
    }

    /// Runs `read` (which reads the next value) and gives the text of what
    /// it read beside its answer.
    pub(crate) fn spanned<T>(
        &mut self,
        read: impl FnOnce(&mut Scan<'a>) -> Option<T>,
    ) -> Option<(Json<'a>, T)> {
        self.ws()?;
        let start = self.i;
        let t = read(self)?;
        Some((Json::accepted(self.text.get(start..self.i)?), t))
    }

    /// [`Scan::object`], with keys that hold an escape handed to `field`
    /// too (as [`Key::Escaped`]: their value still to be read), for a
    /// reader that must read on past them.
    pub(crate) fn object_with(
        &mut self,
        field: &mut dyn FnMut(Key<'a>, &mut Scan<'a>) -> Option<()>,
    ) -> Option<()> {
        if self.ws()? != b'{' {
            return None;
        }
        self.items(b'}', |s| {
            let key = s.key()?;
            field(key, s)
        })
    }

    /// Reads the items of the array or object whose opening bracket is at
    /// the cursor, through its closing bracket `close`, calling `item` with
    /// the cursor at each (an object's items are its keys and values).
    fn items(&mut self, close: u8, mut item: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.open()?;
        if self.ws()? == close {
            self.i += 1;
            self.depth -= 1;
            return Some(());
        }
        loop {
            item(self)?;
            match self.ws()? {
                b',' => self.i += 1,
                c if c == close => {
                    self.i += 1;
                    self.depth -= 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// Skips an object key and the colon after it.
    fn skip_key(&mut self) -> Option<()> {
        if self.ws()? != b'"' {
            return None;
        }
        self.i = skip_str(self.bytes(), self.i + 1)?.end;
        self.colon()
    }

    /// Consumes the colon after a key.
    fn colon(&mut self) -> Option<()> {
        if self.ws()? != b':' {
            return None;
        }
        self.i += 1;
        Some(())
    }

    /// Reads an object key and the colon after it.
    fn key(&mut self) -> Option<Key<'a>> {
        if self.ws()? != b'"' {
            return None;
        }
        let start = self.i + 1;
        let found = skip_str(self.bytes(), start)?;
        let key = if found.escapes > 0 {
            Key::Escaped
        } else {
            Key::Plain(self.text.get(start..found.end - 1)?)
        };
        self.i = found.end;
        self.colon()?;
        Some(key)
    }

    /// Consumes an opening bracket, one level deeper.
    fn open(&mut self) -> Option<()> {
        self.i += 1;
        self.depth += 1;
        (self.depth <= MAX_DEPTH).then_some(())
    }

    /// Skips one value starting at the cursor (whitespace skipped first).
    fn skip_value(&mut self) -> Option<()> {
        let b = self.bytes();
        match self.ws()? {
            b'"' => {
                self.i = skip_str(b, self.i + 1)?.end;
            }
            b'{' => self.items(b'}', |s| {
                s.skip_key()?;
                s.skip_value()
            })?,
            b'[' => self.items(b']', Self::skip_value)?,
            b't' => self.literal(b"true")?,
            b'f' => self.literal(b"false")?,
            b'n' => self.literal(b"null")?,
            b'-' | b'0'..=b'9' => self.number()?,
            _ => return None,
        }
        Some(())
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.i + word.len();
        (self.bytes().get(self.i..end)? == word).then_some(())?;
        self.i = end;
        Some(())
    }

    /// A number by serde_json's grammar: `-`, then `0` or a digit run not
    /// starting with `0`, then maybe `.` and digits. An exponent or a long
    /// integer part gives `None` (module notes).
    fn number(&mut self) -> Option<()> {
        let b = self.bytes();
        if b.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        let digits = |i: usize| {
            b.get(i..)
                .map_or(0, |r| r.iter().take_while(|c| c.is_ascii_digit()).count())
        };
        match b.get(self.i)? {
            b'0' => self.i += 1,
            b'1'..=b'9' => {
                let n = digits(self.i);
                if n > LONG_INTEGER {
                    return None;
                }
                self.i += n;
            }
            _ => return None,
        }
        if b.get(self.i) == Some(&b'.') {
            let n = digits(self.i + 1);
            if n == 0 {
                return None;
            }
            self.i += 1 + n;
        }
        match b.get(self.i) {
            Some(b'e' | b'E') => None,
            // A digit after a leading `0` (`01`) is not JSON; anything
            // else is read by what follows the number.
            Some(b'0'..=b'9') => None,
            _ => Some(()),
        }
    }
}

/// What [`skip_str`] found of one string.
#[derive(Debug, Clone, Copy)]
struct StrEnd {
    /// Index just past the closing quote.
    end: usize,
    /// Escapes in it (`\n` and `\u00e9` count one each).
    escapes: u32,
    /// Whether one of them is a `\u` escape.
    unicode: bool,
}

/// The end of the string whose text starts at `b[i]` (just after its
/// opening quote), and its escapes. `None` when it is unterminated or
/// holds a control byte or an escape serde_json refuses.
fn skip_str(b: &[u8], mut i: usize) -> Option<StrEnd> {
    // Most strings are short (keys, ids, type names): the first 16 bytes
    // are looked at alone, a quarter of a block's work.
    if let Some(head) = b.get(i..i + 16).and_then(|h| <&[u8; 16]>::try_from(h).ok()) {
        let m = special_bits16(head);
        if m == 0 {
            i += 16;
        } else {
            let p = m.trailing_zeros() as usize;
            if head[p] == b'"' {
                return Some(StrEnd {
                    end: i + p + 1,
                    escapes: 0,
                    unicode: false,
                });
            }
        }
    }
    let mut escapes = 0u32;
    let mut unicode = false;
    loop {
        let (mut m, avail) = specials(b, i);
        if avail == 0 {
            return None;
        }
        loop {
            if m == 0 {
                i += avail;
                break;
            }
            let p = m.trailing_zeros() as usize;
            let at = i + p;
            match b[at] {
                b'"' => {
                    return Some(StrEnd {
                        end: at + 1,
                        escapes,
                        unicode,
                    })
                }
                b'\\' => {
                    escapes = escapes.saturating_add(1);
                    let n = escape_len(b, at + 1)?;
                    unicode |= n > 1;
                    let next = p + 1 + n;
                    if next >= avail {
                        i += next;
                        break;
                    }
                    m &= !0u64 << next;
                }
                _ => return None,
            }
        }
    }
}

/// Bytes of the escape whose letter is at `b[j]` (after its backslash): 1,
/// or 5 for `\u` and four hex digits; `None` for any other.
fn escape_len(b: &[u8], j: usize) -> Option<usize> {
    match b.get(j)? {
        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Some(1),
        b'u' => b
            .get(j + 1..j + 5)?
            .iter()
            .all(u8::is_ascii_hexdigit)
            .then_some(5),
        _ => None,
    }
}

/// Where the bytes a string scan stops at (`"`, `\`, 0x00-0x1F) are among
/// the 64 bytes from `b[i]`: bit `k` set for `b[i + k]`; and how many bytes
/// that covers (64, or fewer at the end of `b`; 0 past it).
fn specials(b: &[u8], i: usize) -> (u64, usize) {
    let rest = b.get(i..).unwrap_or_default();
    match <&[u8; 64]>::try_from(rest.get(..64).unwrap_or_default()) {
        Ok(block) => (special_bits(block), 64),
        Err(_) => {
            // The tail, padded with a byte that is none of them.
            let mut tail = [b' '; 64];
            tail[..rest.len()].copy_from_slice(rest);
            (special_bits(&tail), rest.len())
        }
    }
}

#[cfg(target_arch = "x86_64")]
fn special_bits(block: &[u8; 64]) -> u64 {
    // SAFETY: SSE2 is part of the x86-64 baseline: every x86-64 CPU has it.
    unsafe { special_bits_sse2(block) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
fn special_bits_sse2(block: &[u8; 64]) -> u64 {
    use std::arch::x86_64::*;
    let splat = |b: u8| _mm_set1_epi8(b as i8);
    let mut m = 0u64;
    for (k, c) in block.chunks_exact(16).enumerate() {
        // SAFETY: `c` is 16 readable bytes; the load has no alignment
        // requirement.
        let v = unsafe { _mm_loadu_si128(c.as_ptr().cast()) };
        let quote = _mm_cmpeq_epi8(v, splat(b'"'));
        let backslash = _mm_cmpeq_epi8(v, splat(b'\\'));
        // x <= 0x1F (unsigned) exactly when max(x, 0x1F) == 0x1F.
        let control = _mm_cmpeq_epi8(_mm_max_epu8(v, splat(0x1F)), splat(0x1F));
        let any = _mm_or_si128(_mm_or_si128(quote, backslash), control);
        m |= u64::from(_mm_movemask_epi8(any) as u16) << (16 * k);
    }
    m
}

/// [`special_bits`] of 16 bytes.
#[cfg(target_arch = "x86_64")]
fn special_bits16(chunk: &[u8; 16]) -> u32 {
    use std::arch::x86_64::*;
    // SAFETY: SSE2 is part of the x86-64 baseline; `chunk` is 16 readable
    // bytes and the load has no alignment requirement.
    unsafe {
        let splat = |b: u8| _mm_set1_epi8(b as i8);
        let v = _mm_loadu_si128(chunk.as_ptr().cast());
        let quote = _mm_cmpeq_epi8(v, splat(b'"'));
        let backslash = _mm_cmpeq_epi8(v, splat(b'\\'));
        let control = _mm_cmpeq_epi8(_mm_max_epu8(v, splat(0x1F)), splat(0x1F));
        let any = _mm_or_si128(_mm_or_si128(quote, backslash), control);
        _mm_movemask_epi8(any) as u32
    }
}

/// Other targets: the bits of 16 bytes one by one.
#[cfg(not(target_arch = "x86_64"))]
fn special_bits16(chunk: &[u8; 16]) -> u32 {
    chunk.iter().enumerate().fold(0u32, |m, (k, &c)| {
        m | (u32::from(c == b'"' || c == b'\\' || c < 0x20) << k)
    })
}

/// Other targets: the bits one by one.
#[cfg(not(target_arch = "x86_64"))]
fn special_bits(block: &[u8; 64]) -> u64 {
    block.iter().enumerate().fold(0u64, |m, (k, &c)| {
        m | (u64::from(c == b'"' || c == b'\\' || c < 0x20) << k)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::value::RawValue;

    /// Whether serde_json reads `text` into raw values (what the typed
    /// readers do), with the tree reader's two extra refusals.
    fn serde_accepts(text: &str) -> bool {
        let b = text.as_bytes();
        let scan = crate::formats::prescan(b);
        serde_json::from_str::<&RawValue>(text).is_ok()
            && !scan.too_deep(b)
            && !scan.number_out_of_range(b)
    }

    fn scan_accepts(text: &str) -> bool {
        let mut s = Scan::new(text);
        s.value().is_some() && s.end().is_some()
    }

    /// Every text the scanner accepts, serde_json accepts with the same
    /// value text; the texts it gives up on are the ones the module notes
    /// name.
    #[test]
    fn accepts_only_what_serde_json_accepts() {
        let long = format!("\"{}\"", "ab\\n\\\"cd".repeat(40));
        let cases = [
            r#"{}"#,
            r#" { "a" : 1 , "b":[ ] ,"c":{}} "#,
            r#"{"a":"x\u00e9\ud800\/\b\f\n\r\t\\\""}"#,
            r#"{"a":-0.5,"b":0,"c":-12,"d":[true,false,null]}"#,
            r#"{"a":01}"#,
            r#"{"a":1.}"#,
            r#"{"a":.5}"#,
            r#"{"a":-}"#,
            r#"{"a":1e5}"#,
            r#"{"a":"\x"}"#,
            r#"{"a":"\u12g4"}"#,
            "{\"a\":\"tab\there\"}",
            "{\"a\":\"nul\u{0}\"}",
            "{\"a\":\"del\u{7f} and \u{e9}\"}",
            r#"{"a":1,}"#,
            r#"{"a":[1,]}"#,
            r#"{"a":[1 2]}"#,
            r#"{"a" 1}"#,
            r#"{a:1}"#,
            r#"{"a":tru}"#,
            r#"{"a":nulls}"#,
            r#"{"a":1}x"#,
            r#"{"a":1} {"#,
            r#"{"a":"unterminated"#,
            r#"{"a":"ends in a backslash\"#,
            "{\"a\":1}\u{c}",
            r#"[1,2]"#,
            r#""s""#,
            r#"{"a\n":1}"#,
            &format!("{{\"a\":{long},\"b\":[{long},{long}]}}"),
            &format!("{{\"a\":\"{}\\u00e9\"}}", "x".repeat(60)),
            &format!("{{\"a\":\"{}\\u00e9\"}}", "x".repeat(61)),
            &format!("{{\"a\":\"{}\\n\"}}", "x".repeat(62)),
            &format!("{{\"a\":\"{}\"}}", "x".repeat(63)),
            &format!("{{\"a\":\"{}\"}}", "x".repeat(64)),
            &format!("{{\"a\":{}}}", "1".repeat(LONG_INTEGER)),
            &format!("{{\"a\":{}}}", "1".repeat(LONG_INTEGER + 1)),
            &format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH)),
            &format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1)),
        ];
        for text in cases {
            let ours = scan_accepts(text);
            if ours {
                assert!(
                    serde_accepts(text),
                    "scanner accepts what serde_json refuses: {text}"
                );
                let want = serde_json::from_str::<&RawValue>(text).unwrap();
                let mut s = Scan::new(text);
                assert_eq!(s.value().map(Json::get), Some(want.get()), "{text}");
            }
            let gives_up = text.contains("1e5")
                || text.contains(&"1".repeat(LONG_INTEGER + 1))
                || text.starts_with(&"[".repeat(MAX_DEPTH + 1));
            if serde_accepts(text) && !gives_up {
                assert!(ours, "scanner refuses what serde_json accepts: {text}");
            }
        }
    }

    /// On random documents (every kind of escape, number and nesting the
    /// generator writes, whitespace anywhere) and on mutations of them, the
    /// scanner never accepts what serde_json refuses, and accepts every
    /// document serde_json accepts that holds no exponent.
    #[test]
    fn agrees_with_serde_json_on_random_documents() {
        use crate::formats::random_json::{doc, rng, Pieces};
        let long = "0123456789abcdef\\n".repeat(9);
        let pieces = Pieces {
            numbers: &[
                "0",
                "-0",
                "12",
                "-7",
                "1.5",
                "-0.25",
                "1e2",
                "2E-3",
                "18446744073709551616",
                "true",
                "false",
                "null",
            ],
            strings: &[
                "",
                "a",
                "\\u00e9",
                "\\n",
                "\\\"",
                "\\\\",
                "\\/",
                "\\ud83d\\ude00",
                "\\ud800",
                "caf\u{e9} \u{1f600}",
                &long,
            ],
            keys: &["a", "type", "text", "uuid", "typ\\u0065"],
            spaces: &["", " ", "\n", "\t ", "\r\n"],
        };
        let mut next = rng(0x9e37_79b9_7f4a_7c15);
        let mut accepted = 0;
        for round in 0..4000 {
            let mut text = String::new();
            doc(&mut next, &pieces, 0, &mut text);
            let mut texts = vec![text.clone()];
            // Mutations: a byte removed, doubled or replaced.
            let b = text.as_bytes();
            if !b.is_empty() {
                let k = next(b.len());
                let mut cut = b.to_vec();
                cut.remove(k);
                let mut dup = b.to_vec();
                dup.insert(k, b[k]);
                let mut swap = b.to_vec();
                let with = b"\"\\{}[],:0e-.tu \n\x01";
                swap[k] = with[next(with.len())];
                for m in [cut, dup, swap] {
                    texts.extend(String::from_utf8(m).ok());
                }
            }
            for text in texts {
                let ours = scan_accepts(&text);
                let theirs = serde_accepts(&text);
                if ours {
                    accepted += 1;
                    assert!(
                        theirs,
                        "round {round}: scanner accepts what serde_json refuses: {text}"
                    );
                    let mut s = Scan::new(&text);
                    assert_eq!(
                        s.value().map(Json::get),
                        Some(serde_json::from_str::<&RawValue>(&text).unwrap().get())
                    );
                } else if theirs {
                    let exponent = text.bytes().any(|c| c == b'e' || c == b'E');
                    assert!(
                        exponent,
                        "round {round}: scanner refuses what serde_json accepts: {text}"
                    );
                }
            }
        }
        assert!(accepted > 4000, "{accepted} documents accepted");
    }

    /// The fields of an object in order, nested objects read through
    /// [`Scan::object`] again; a key with an escape gives up.
    #[test]
    fn object_gives_each_field() {
        let text = r#"{"a":1,"b":{"c":"x","d":[1,{"e":2}]},"f":null}"#;
        let mut seen = Vec::new();
        let mut s = Scan::new(text);
        s.object(&mut |k, s| {
            if k == "b" {
                s.object(&mut |k2, s| {
                    seen.push(format!("b.{k2}={}", s.value()?.get()));
                    Some(())
                })
            } else {
                seen.push(format!("{k}={}", s.value()?.get()));
                Some(())
            }
        })
        .unwrap();
        assert!(s.end().is_some());
        assert_eq!(seen, ["a=1", "b.c=\"x\"", "b.d=[1,{\"e\":2}]", "f=null"]);
        let mut s = Scan::new(r#"{"a\u0062":1}"#);
        assert!(s.object(&mut |_, s| s.value().map(|_| ())).is_none());
        let mut keys = Vec::new();
        let mut s = Scan::new(r#"{"a\u0062":1,"c":2}"#);
        s.object_with(&mut |k, s| {
            keys.push(k);
            s.value().map(|_| ())
        })
        .unwrap();
        assert_eq!(keys, [Key::Escaped, Key::Plain("c")]);
        // Arrays item by item, each with its text.
        let text = r#" [ {"t":1} , "x" ,[2, 3] ] "#;
        let mut items = Vec::new();
        let mut s = Scan::new(text);
        let (whole, ()) = s
            .spanned(|s| {
                s.array(&mut |s| {
                    items.push(s.spanned(|s| s.value())?.0.get());
                    Some(())
                })
            })
            .unwrap();
        assert!(s.end().is_some());
        assert_eq!(whole.get(), r#"[ {"t":1} , "x" ,[2, 3] ]"#);
        assert_eq!(items, [r#"{"t":1}"#, r#""x""#, "[2, 3]"]);
        for bad in ["[1,]", "[1 2]", "[", "[1,2"] {
            assert!(
                Scan::new(bad)
                    .array(&mut |s| s.value().map(|_| ()))
                    .is_none(),
                "{bad}"
            );
        }
    }
}
