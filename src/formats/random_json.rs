//! Random JSON documents for the tests that hold a fast reader to
//! serde_json's tree reader (`number_out_of_range`, `JsonLen`): the same
//! documents, built from pieces each test chooses.

/// What documents are built from: number, string and key texts as they
/// appear between (or without) quotes, and the whitespace put between
/// tokens.
pub(crate) struct Pieces<'a> {
    pub numbers: &'a [&'a str],
    /// String contents, escapes written out (`\\n`, `\\u00e9`).
    pub strings: &'a [&'a str],
    /// Object keys, escapes written out; two may name the same key.
    pub keys: &'a [&'a str],
    pub spaces: &'a [&'a str],
}

/// A xorshift generator: `next(n)` is in `0..n`, the same sequence for the
/// same seed.
pub(crate) fn rng(mut seed: u64) -> impl FnMut(usize) -> usize {
    move |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    }
}

/// Appends one random document to `out` (numbers, strings, arrays and
/// objects, nested at most 4 deep); answers whether one of its objects
/// repeats a key (keys compared decoded: `"typ\u0065"` is `"type"`).
pub(crate) fn doc(
    next: &mut dyn FnMut(usize) -> usize,
    p: &Pieces<'_>,
    depth: usize,
    out: &mut String,
) -> bool {
    let space = |next: &mut dyn FnMut(usize) -> usize, out: &mut String| {
        out.push_str(p.spaces[next(p.spaces.len())]);
    };
    let mut repeated = false;
    match next(if depth > 3 { 2 } else { 4 }) {
        0 => out.push_str(p.numbers[next(p.numbers.len())]),
        1 => {
            out.push('"');
            out.push_str(p.strings[next(p.strings.len())]);
            out.push('"');
        }
        2 => {
            out.push('[');
            for i in 0..next(4) {
                if i > 0 {
                    out.push(',');
                }
                space(next, out);
                repeated |= doc(next, p, depth + 1, out);
            }
            out.push(']');
        }
        _ => {
            out.push('{');
            let mut used: Vec<String> = Vec::new();
            for i in 0..next(4) {
                if i > 0 {
                    out.push(',');
                }
                space(next, out);
                let key = p.keys[next(p.keys.len())];
                let decoded: String = serde_json::from_str(&format!("\"{key}\""))
                    .expect("test keys are JSON string contents");
                repeated |= used.contains(&decoded);
                used.push(decoded);
                out.push('"');
                out.push_str(key);
                out.push_str("\":");
                space(next, out);
                repeated |= doc(next, p, depth + 1, out);
            }
            out.push('}');
        }
    }
    repeated
}
