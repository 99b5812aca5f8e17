//! [`JsonPath`]: where a value sits in a JSON answer, written as a JSONPath subset
//! (`$.items[0].id`, `$['a b']`, `$.items[-1]`, `$.items[*].id`) or a JSON pointer
//! (`/items/0/id`), and found by scanning the answer's bytes: nothing is parsed into a
//! tree and nothing is allocated unless a key holds escapes. A value's bytes are
//! returned as they stand in the answer ([`JsonPath::find`]); [`write_value`] turns
//! them into a variable's text (a string without its quotes and escapes).

/// One step down the document.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    /// An object member.
    Key(Vec<u8>),
    /// An array element; negative counts from the end.
    Index(i64),
    /// One array element, chosen by the caller's pick (at random in a flow).
    Any,
    /// A JSON pointer token: a member, or an element when the value is an array.
    Token(Vec<u8>),
}

/// A parsed path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonPath {
    segments: Vec<Segment>,
}

impl JsonPath {
    /// Parses `$...` (JSONPath subset) or `/...` (JSON pointer, RFC 6901).
    pub fn parse(text: &str) -> Result<JsonPath, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err("an empty JSON path (want $.name or /name)".to_owned());
        }
        let segments = if let Some(rest) = text.strip_prefix('$') {
            parse_dollar(rest).map_err(|reason| format!("JSON path {text:?}: {reason}"))?
        } else if text.starts_with('/') {
            parse_pointer(text)
        } else {
            return Err(format!(
                "JSON path {text:?}: want a JSONPath starting with $ (like $.token) or a JSON pointer starting with / (like /token)"
            ));
        };
        Ok(JsonPath { segments })
    }

    /// The bytes of the value at this path in `json`, or `None` when the path is not
    /// there (or `json` is not JSON where the path leads). `pick(n)` chooses one of
    /// `n` elements for `[*]`.
    pub fn find<'a>(&self, json: &'a [u8], pick: &mut dyn FnMut(u64) -> u64) -> Option<&'a [u8]> {
        let mut at = skip_ws(json, 0);
        for segment in &self.segments {
            at = match (segment, json.get(at)?) {
                (Segment::Key(key) | Segment::Token(key), b'{') => member(json, at, key)?,
                (Segment::Index(index), b'[') => element(json, at, *index)?,
                (Segment::Any, b'[') => {
                    let count = count_elements(json, at)?;
                    if count == 0 {
                        return None;
                    }
                    element(json, at, pick(count) as i64)?
                }
                (Segment::Token(token), b'[') => {
                    let text = std::str::from_utf8(token).ok()?;
                    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
                        return None;
                    }
                    element(json, at, text.parse().ok()?)?
                }
                _ => return None,
            };
        }
        let end = skip_value(json, at)?;
        Some(&json[at..end])
    }
}

fn parse_dollar(mut rest: &str) -> Result<Vec<Segment>, String> {
    let mut segments = Vec::new();
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            let name = &after[..end];
            if name.is_empty() {
                return Err("an empty name after '.'".to_owned());
            }
            segments.push(if name == "*" {
                Segment::Any
            } else {
                Segment::Key(name.as_bytes().to_vec())
            });
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let end = after.find(']').ok_or("a '[' without its ']'")?;
            segments.push(bracket(after[..end].trim())?);
            rest = &after[end + 1..];
        } else {
            return Err(format!("unexpected {rest:?} (want .name or [index])"));
        }
    }
    Ok(segments)
}

fn bracket(inside: &str) -> Result<Segment, String> {
    if inside == "*" {
        return Ok(Segment::Any);
    }
    for quote in ['\'', '"'] {
        if let Some(name) = inside
            .strip_prefix(quote)
            .and_then(|n| n.strip_suffix(quote))
        {
            return Ok(Segment::Key(name.as_bytes().to_vec()));
        }
    }
    inside
        .parse::<i64>()
        .map(Segment::Index)
        .map_err(|_| format!("[{inside}] is not an index, '*' or a quoted name"))
}

fn parse_pointer(text: &str) -> Vec<Segment> {
    text[1..]
        .split('/')
        .map(|token| Segment::Token(token.replace("~1", "/").replace("~0", "~").into_bytes()))
        .collect()
}

fn skip_ws(json: &[u8], mut at: usize) -> usize {
    while json.get(at).is_some_and(u8::is_ascii_whitespace) {
        at += 1;
    }
    at
}

/// The end of the string that opens at `at` (just past its closing quote).
fn skip_string(json: &[u8], at: usize) -> Option<usize> {
    let mut i = at + 1;
    loop {
        match json.get(i)? {
            b'"' => return Some(i + 1),
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
}

/// The end of the value that starts at `at`.
fn skip_value(json: &[u8], at: usize) -> Option<usize> {
    match json.get(at)? {
        b'"' => skip_string(json, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            loop {
                match json.get(i)? {
                    b'"' => {
                        i = skip_string(json, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        _ => {
            let len = json[at..]
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']') || b.is_ascii_whitespace())
                .unwrap_or(json.len() - at);
            (len > 0).then_some(at + len)
        }
    }
}

/// The start of member `key`'s value in the object at `at`.
fn member(json: &[u8], at: usize, key: &[u8]) -> Option<usize> {
    let mut i = skip_ws(json, at + 1);
    if json.get(i) == Some(&b'}') {
        return None;
    }
    loop {
        if json.get(i) != Some(&b'"') {
            return None;
        }
        let end = skip_string(json, i)?;
        let name = &json[i + 1..end - 1];
        i = skip_ws(json, end);
        if json.get(i) != Some(&b':') {
            return None;
        }
        let value = skip_ws(json, i + 1);
        if key_equals(name, key) {
            return Some(value);
        }
        i = skip_ws(json, skip_value(json, value)?);
        match json.get(i)? {
            b',' => i = skip_ws(json, i + 1),
            _ => return None,
        }
    }
}

/// Whether a member name as written (maybe with escapes) is `key`.
fn key_equals(raw: &[u8], key: &[u8]) -> bool {
    if !raw.contains(&b'\\') {
        return raw == key;
    }
    let mut unescaped = Vec::new();
    unescape(raw, &mut unescaped);
    unescaped == key
}

/// The starts of the elements of the array at `at`, one by one.
fn elements(json: &[u8], at: usize) -> impl Iterator<Item = usize> + '_ {
    let mut next = Some(skip_ws(json, at + 1)).filter(|&i| json.get(i) != Some(&b']'));
    std::iter::from_fn(move || {
        let start = next?;
        next = skip_value(json, start)
            .map(|end| skip_ws(json, end))
            .filter(|&i| json.get(i) == Some(&b','))
            .map(|i| skip_ws(json, i + 1));
        Some(start)
    })
}

fn count_elements(json: &[u8], at: usize) -> Option<u64> {
    Some(elements(json, at).count() as u64)
}

fn element(json: &[u8], at: usize, index: i64) -> Option<usize> {
    let index = if index < 0 {
        let count = count_elements(json, at)? as i64;
        count.checked_add(index).filter(|i| *i >= 0)?
    } else {
        index
    };
    elements(json, at).nth(usize::try_from(index).ok()?)
}

/// Appends a found value as a variable holds it: a string's text without quotes and
/// escapes, any other value's bytes as they are.
pub fn write_value(value: &[u8], out: &mut Vec<u8>) {
    match value {
        [b'"', inner @ .., b'"'] => unescape(inner, out),
        _ => out.extend_from_slice(value),
    }
}

/// JSON string escapes to UTF-8 (a lone surrogate becomes U+FFFD).
fn unescape(raw: &[u8], out: &mut Vec<u8>) {
    let mut i = 0;
    while i < raw.len() {
        if raw[i] != b'\\' || i + 1 == raw.len() {
            out.push(raw[i]);
            i += 1;
            continue;
        }
        let escaped = match raw[i + 1] {
            b'n' => b'\n',
            b't' => b'\t',
            b'r' => b'\r',
            b'b' => 0x08,
            b'f' => 0x0c,
            b'u' => {
                let (c, used) = unicode_escape(&raw[i..]);
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                i += used;
                continue;
            }
            other => other,
        };
        out.push(escaped);
        i += 2;
    }
}

/// `\uXXXX` (and a following low surrogate) at the start of `raw`: the char and the
/// bytes it took.
fn unicode_escape(raw: &[u8]) -> (char, usize) {
    let hex = |at: usize| {
        raw.get(at..at + 4)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u32::from_str_radix(h, 16).ok())
    };
    let Some(high) = hex(2) else {
        return (char::REPLACEMENT_CHARACTER, 2);
    };
    if (0xd800..0xdc00).contains(&high)
        && raw.get(6..8) == Some(b"\\u")
        && let Some(low) = hex(8).filter(|l| (0xdc00..0xe000).contains(l))
    {
        let code = 0x10000 + ((high - 0xd800) << 10) + (low - 0xdc00);
        return (
            char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER),
            12,
        );
    }
    (
        char::from_u32(high).unwrap_or(char::REPLACEMENT_CHARACTER),
        6,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = r#" {"token": "abc\"d", "n": 12.5, "ok": true, "nil": null,
        "items": [ {"id": 1, "name": "a"}, {"id": 2, "name": "b,]}"}, {"id": 3} ],
        "a b": {"c": [10, 20]}, "esc\u0061ped": "x\u00e9\ud83d\ude00", "empty": [] }"#;

    fn find(path: &str) -> Option<String> {
        let path = JsonPath::parse(path).unwrap();
        let mut out = Vec::new();
        write_value(path.find(DOC.as_bytes(), &mut |n| n - 1)?, &mut out);
        Some(String::from_utf8(out).unwrap())
    }

    #[test]
    fn finds_values_by_path_or_pointer() {
        let rows: &[(&str, Option<&str>)] = &[
            ("$.token", Some("abc\"d")),
            ("$.n", Some("12.5")),
            ("$.ok", Some("true")),
            ("$.nil", Some("null")),
            ("$.items[0].id", Some("1")),
            ("$.items[1].name", Some("b,]}")),
            ("$.items[-1].id", Some("3")),
            ("$.items[*].id", Some("3")),
            ("$.items.*.id", Some("3")),
            ("$['a b'].c[1]", Some("20")),
            ("$[\"a b\"].c[0]", Some("10")),
            ("$.escaped", Some("xé😀")),
            ("$.items[1]", Some(r#"{"id": 2, "name": "b,]}"}"#)),
            ("/items/1/id", Some("2")),
            ("/a b/c/1", Some("20")),
            ("/token", Some("abc\"d")),
            ("$.missing", None),
            ("$.items[3]", None),
            ("$.items[-4]", None),
            ("$.empty[*]", None),
            ("$.token.x", None),
            ("$.items.id", None),
            ("/items/x", None),
        ];
        for (path, want) in rows {
            assert_eq!(find(path).as_deref(), *want, "{path}");
        }
    }

    #[test]
    fn broken_or_other_answers_find_nothing() {
        let path = JsonPath::parse("$.a.b").unwrap();
        for text in [
            "",
            "not json",
            "{\"a\": {\"b\"",
            "{\"a\": [1, 2]}",
            "<html>",
            "{\"a\" 1}",
        ] {
            assert_eq!(path.find(text.as_bytes(), &mut |_| 0), None, "{text}");
        }
    }

    #[test]
    fn names_bad_paths() {
        let rows: &[(&str, &str)] = &[
            ("token", "want a JSONPath starting with $"),
            ("$.items[", "without its ']'"),
            ("$.items[x]", "is not an index"),
            ("$..a", "an empty name"),
            ("$x", "unexpected"),
            ("", "an empty JSON path"),
        ];
        for (text, want) in rows {
            let err = JsonPath::parse(text).unwrap_err();
            assert!(err.contains(want), "{text}: {err}");
        }
    }
}
