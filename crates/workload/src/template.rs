//! [`Template`]: a URL path, header value or body with `{{ ... }}` placeholders,
//! parsed once and rendered per request into a reused buffer (no allocation).
//!
//! | placeholder | renders |
//! |---|---|
//! | `{{rand.lower 50}}` | 50 random `a-z`; also `rand.upper`, `rand.alpha`, `rand.digits`, `rand.alnum`, `rand.hex` |
//! | `{{rand.int 1 100}}` | a random integer in `[1, 100]` |
//! | `{{uuid}}` | a random UUID (version 4) |
//! | `{{seq}}` | the request's sequence number in its attack |
//! | `{{pick red green "light blue"}}` | one of the words, at random |
//! | `{{csv.NAME}}` | column `NAME` of this request's row of the `-data` CSV file |
//! | `{{NAME}}` | in a flow: the variable `NAME` an earlier step extracted ([`Template::parse_with`]) |
//! | `{{user}}` | in a flow: the virtual user's number |
//! | `{{"{{"}}` | a quoted text as it is: how a literal `{{` is written |
//!
//! Random values are a pure function of (seed, request number, placeholder), so a run
//! with the same `-seed` sends the same requests whatever the thread count.
//!
//! A value from outside the request (`{{csv.NAME}}`, a flow's `{{NAME}}`) never changes
//! the request's shape: where the template lands ([`Place`]) decides what it may hold.
//! In the path and query it is percent-encoded ([`path_encoded`], [`query_encoded`]); in
//! a header value one holding CR, LF or NUL is refused before the request is sent
//! ([`Template::refusal`]); in a body it goes as it is (docs/FLOWS.md, "Values from
//! outside a request").

use std::io::Write as _;

use crate::data::DataTable;
use crate::rng::Rng;

/// A parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
    place: Place,
    /// In a [`Place::Path`] template, the first part after the literal `?`: the query
    /// starts there.
    query_from: usize,
}

/// Where a template's text goes in a request: what a value from outside may hold there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Place {
    /// The request target (path, then query after a literal `?`): outside values are
    /// percent-encoded.
    Path,
    /// A header value: an outside value holding CR, LF or NUL is refused.
    Header,
    /// The body: sent as it is (its length is counted).
    #[default]
    Body,
}

/// Bytes an outside value's path part is percent-encoded for (the WHATWG URL path
/// percent-encode set, and DEL): they would end the request line or start a query or
/// fragment. `/` and `%` stay: a value may be several segments, or encoded already.
pub fn path_encoded(byte: u8) -> bool {
    byte <= b' ' || byte >= 0x7f || b"\"#<>?`{}".contains(&byte)
}

/// Bytes an outside value in the query is percent-encoded for (the WHATWG query set,
/// DEL, and `&` and `+`, so that a value never adds a parameter or a space).
pub fn query_encoded(byte: u8) -> bool {
    byte <= b' ' || byte >= 0x7f || b"\"#&+<>".contains(&byte)
}

/// Bytes no header value may hold: they would end the header (or, NUL, be refused by
/// an HTTP/2 peer).
pub fn breaks_header(byte: u8) -> bool {
    matches!(byte, b'\r' | b'\n' | 0)
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(Vec<u8>),
    Random {
        charset: &'static [u8],
        length: usize,
    },
    Int {
        min: i64,
        max: i64,
    },
    Uuid,
    Seq,
    Pick(Vec<String>),
    Column(String),
    /// A flow variable, by its index in the flow's variables.
    Variable(u16),
    User,
}

/// What a render needs besides the template.
#[derive(Debug, Clone, Copy)]
pub struct RenderContext<'a> {
    /// The run's seed (`-seed`).
    pub seed: u64,
    /// The request's sequence number in its attack.
    pub seq: u64,
    /// Rows for `{{csv.COLUMN}}`.
    pub data: Option<&'a DataTable>,
    /// Which row `{{csv.COLUMN}}` reads (a plain target's is its `seq`; a flow's, its
    /// user's number).
    pub row: u64,
    /// A flow user's variables, by index (empty outside flows).
    pub variables: &'a [Vec<u8>],
    /// A flow user's number (0 outside flows).
    pub user: u64,
}

impl<'a> RenderContext<'a> {
    /// The context of request `seq` of a plain attack: its row is its `seq`.
    pub fn plain(seed: u64, seq: u64, data: Option<&'a DataTable>) -> RenderContext<'a> {
        RenderContext {
            seed,
            seq,
            data,
            row: seq,
            variables: &[],
            user: 0,
        }
    }
}

const LOWER: &[u8] = b"abcdefghijklmnopqrstuvwxyz";
const UPPER: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ";
const ALPHA: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
const DIGITS: &[u8] = b"0123456789";
const ALNUM: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
const HEX: &[u8] = b"0123456789abcdef";
const HEX_UPPER: &[u8] = b"0123456789ABCDEF";
/// Longest random string one placeholder may ask for.
const MAX_RANDOM_LENGTH: usize = 1 << 20;

impl Template {
    /// Parses `text`; a text without `{{` is a single literal.
    pub fn parse(text: &str) -> Result<Template, String> {
        Template::parse_with(text, None)
    }

    /// Parses `text` of a flow step (`variables` is `Some`): `{{NAME}}` is the variable
    /// `variables[i]` named so, `{{user}}` the user's number; any other name is an
    /// error as in [`Template::parse`].
    pub fn parse_with(text: &str, variables: Option<&[String]>) -> Result<Template, String> {
        let mut parts = Vec::new();
        let mut rest = text;
        while let Some(open) = rest.find("{{") {
            if open > 0 {
                parts.push(Part::Literal(rest.as_bytes()[..open].to_vec()));
            }
            let after = &rest[open + 2..];
            let close = after
                .find("}}")
                .ok_or_else(|| format!("template {text:?}: '{{{{' without '}}}}'"))?;
            parts.push(
                parse_placeholder(after[..close].trim(), variables)
                    .map_err(|reason| format!("template {text:?}: {reason}"))?,
            );
            rest = &after[close + 2..];
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.as_bytes().to_vec()));
        }
        Ok(Template::of(parts))
    }

    fn of(parts: Vec<Part>) -> Template {
        Template {
            parts,
            place: Place::Body,
            query_from: usize::MAX,
        }
    }

    /// The template placed in a request: which decides how its outside values render.
    pub fn placed(mut self, place: Place) -> Template {
        self.place = place;
        self.query_from = match place {
            Place::Path => self
                .parts
                .iter()
                .position(|p| matches!(p, Part::Literal(b) if b.contains(&b'?')))
                .map_or(usize::MAX, |at| at + 1),
            Place::Header | Place::Body => usize::MAX,
        };
        self
    }

    /// Why the template's own text (not its outside values) cannot go in its place:
    /// checked once, before any request.
    pub fn unsafe_text(&self) -> Option<&'static str> {
        let (bad, why): (fn(u8) -> bool, _) = match self.place {
            Place::Header => (breaks_header, "holds CR, LF or NUL"),
            Place::Path => (
                |b| b <= b' ' || b == 0x7f,
                "holds a space or a control character",
            ),
            Place::Body => return None,
        };
        let bad_text = |text: &[u8]| text.iter().copied().any(bad);
        self.parts
            .iter()
            .any(|part| match part {
                Part::Literal(bytes) => bad_text(bytes),
                Part::Pick(words) => words.iter().any(|w| bad_text(w.as_bytes())),
                _ => false,
            })
            .then_some(why)
    }

    /// In a header value: the first part whose outside value holds CR, LF or NUL for
    /// this request (the request must not be sent). Reads the values, writes nothing.
    pub fn refusal(&self, context: &RenderContext<'_>) -> Option<usize> {
        if self.place != Place::Header {
            return None;
        }
        self.parts.iter().position(|part| {
            outside_value(part, context).is_some_and(|v| v.iter().copied().any(breaks_header))
        })
    }

    /// Placeholder `part` as written (`{{csv.name}}`, `{{token}}`), for an error text;
    /// `variables` are the flow's.
    pub fn placeholder(&self, part: usize, variables: &[String]) -> String {
        match self.parts.get(part) {
            Some(Part::Column(name)) => format!("{{{{csv.{name}}}}}"),
            Some(Part::Variable(index)) => format!(
                "{{{{{}}}}}",
                variables
                    .get(usize::from(*index))
                    .map_or("?", String::as_str)
            ),
            _ => "a placeholder".to_owned(),
        }
    }

    /// A template that renders `bytes` as they are (a body that is not UTF-8 has no
    /// placeholders, but must still be sent).
    pub fn literal(bytes: &[u8]) -> Template {
        let parts = if bytes.is_empty() {
            Vec::new()
        } else {
            vec![Part::Literal(bytes.to_vec())]
        };
        Template::of(parts)
    }

    /// True when the text has no placeholders: it renders the same every time.
    pub fn is_static(&self) -> bool {
        self.parts.iter().all(|p| matches!(p, Part::Literal(_)))
    }

    /// The flow variables the template reads, by index.
    pub fn variables(&self) -> impl Iterator<Item = u16> {
        self.parts.iter().filter_map(|p| match p {
            Part::Variable(index) => Some(*index),
            _ => None,
        })
    }

    /// The CSV columns the template reads.
    pub fn columns(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Column(name) => Some(name.as_str()),
            _ => None,
        })
    }

    /// Appends the rendered text to `out`.
    pub fn render(&self, context: &RenderContext<'_>, out: &mut Vec<u8>) {
        for (index, part) in self.parts.iter().enumerate() {
            let mut rng = Rng::for_request(context.seed, context.seq, index as u64);
            match part {
                Part::Literal(bytes) => out.extend_from_slice(bytes),
                Part::Random { charset, length } => {
                    out.extend(
                        (0..*length).map(|_| charset[rng.below(charset.len() as u64) as usize]),
                    );
                }
                Part::Int { min, max } => {
                    let span = max.abs_diff(*min).saturating_add(1);
                    let value = min.wrapping_add(rng.below(span) as i64);
                    let _ = write!(out, "{value}");
                }
                Part::Uuid => write_uuid(&mut rng, out),
                Part::Seq => {
                    let _ = write!(out, "{}", context.seq);
                }
                Part::Pick(words) => {
                    out.extend_from_slice(words[rng.below(words.len() as u64) as usize].as_bytes());
                }
                Part::Column(_) | Part::Variable(_) => {
                    let value = outside_value(part, context).unwrap_or_default();
                    match self.place {
                        Place::Path if index < self.query_from => {
                            percent_encode(value, path_encoded, out);
                        }
                        Place::Path => percent_encode(value, query_encoded, out),
                        // A header's value was judged by `refusal` before the render.
                        Place::Header | Place::Body => out.extend_from_slice(value),
                    }
                }
                Part::User => {
                    let _ = write!(out, "{}", context.user);
                }
            }
        }
    }
}

/// The value of a part that comes from outside the request: a data row's column, a
/// flow's extracted variable.
fn outside_value<'c>(part: &Part, context: &RenderContext<'c>) -> Option<&'c [u8]> {
    match part {
        Part::Column(name) => context
            .data
            .map(|data| data.value(context.seed, context.row, name).as_bytes()),
        Part::Variable(index) => context
            .variables
            .get(usize::from(*index))
            .map(Vec::as_slice),
        _ => None,
    }
}

fn percent_encode(value: &[u8], encoded: fn(u8) -> bool, out: &mut Vec<u8>) {
    for &byte in value {
        if encoded(byte) {
            out.extend_from_slice(&[
                b'%',
                HEX_UPPER[usize::from(byte >> 4)],
                HEX_UPPER[usize::from(byte & 0x0f)],
            ]);
        } else {
            out.push(byte);
        }
    }
}

fn parse_placeholder(body: &str, variables: Option<&[String]>) -> Result<Part, String> {
    if let Some(quoted) = body.strip_prefix('"').and_then(|b| b.strip_suffix('"'))
        && !quoted.contains('"')
    {
        return Ok(Part::Literal(quoted.as_bytes().to_vec()));
    }
    let words = split_words(body)?;
    let (name, args) = words.split_first().ok_or("an empty '{{}}'")?;
    if let (Some(variables), []) = (variables, args) {
        if let Some(index) = variables.iter().position(|v| v == name) {
            return Ok(Part::Variable(index as u16));
        }
        if name == "user" {
            return Ok(Part::User);
        }
    }
    let charset = match name.as_str() {
        "rand.lower" => Some(LOWER),
        "rand.upper" => Some(UPPER),
        "rand.alpha" => Some(ALPHA),
        "rand.digits" => Some(DIGITS),
        "rand.alnum" => Some(ALNUM),
        "rand.hex" => Some(HEX),
        _ => None,
    };
    if let Some(charset) = charset {
        let [length] = args else {
            return Err(format!("{name} takes a length, like {{{{{name} 50}}}}"));
        };
        let length: usize = length
            .parse()
            .map_err(|_| format!("{name}: length {length:?} is not a whole number"))?;
        if length == 0 || length > MAX_RANDOM_LENGTH {
            return Err(format!(
                "{name}: length must be between 1 and {MAX_RANDOM_LENGTH}"
            ));
        }
        return Ok(Part::Random { charset, length });
    }
    match (name.as_str(), args) {
        ("rand.int", [min, max]) => {
            let parse = |v: &str| {
                v.parse::<i64>()
                    .map_err(|_| format!("rand.int: {v:?} is not an integer"))
            };
            let (min, max) = (parse(min)?, parse(max)?);
            if min > max {
                return Err(format!("rand.int: {min} is larger than {max}"));
            }
            Ok(Part::Int { min, max })
        }
        ("rand.int", _) => Err("rand.int takes a range, like {{rand.int 1 100}}".to_owned()),
        ("uuid", []) => Ok(Part::Uuid),
        ("seq", []) => Ok(Part::Seq),
        ("pick", []) => {
            Err("pick needs at least one word, like {{pick red green blue}}".to_owned())
        }
        ("pick", words) => Ok(Part::Pick(words.to_vec())),
        (column, []) if column.starts_with("csv.") && column.len() > 4 => {
            Ok(Part::Column(column[4..].to_owned()))
        }
        ("uuid" | "seq", _) => Err(format!("{name} takes no arguments")),
        (word, []) if variables.is_some() && is_variable_name(word) => Err(format!(
            "unknown variable {{{{{word}}}}} ({})",
            match variables.unwrap_or_default() {
                [] => "no step before this one extracts a variable".to_owned(),
                known => format!("the steps before this one extract {}", known.join(", ")),
            }
        )),
        _ => Err(format!(
            "unknown template function {name:?} (want rand.lower N, rand.upper N, rand.alpha N, rand.digits N, \
             rand.alnum N, rand.hex N, rand.int MIN MAX, uuid, seq, pick WORD..., csv.COLUMN)"
        )),
    }
}

/// Whether `word` can name a flow variable: a letter or `_`, then letters, digits,
/// `_` or `-`.
pub(crate) fn is_variable_name(word: &str) -> bool {
    let mut chars = word.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Splits on spaces, keeping `"quoted words"` together.
fn split_words(body: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut rest = body.trim_start();
    while !rest.is_empty() {
        if let Some(quoted) = rest.strip_prefix('"') {
            let end = quoted.find('"').ok_or("a '\"' without its closing '\"'")?;
            words.push(quoted[..end].to_owned());
            rest = quoted[end + 1..].trim_start();
        } else {
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            words.push(rest[..end].to_owned());
            rest = rest[end..].trim_start();
        }
    }
    Ok(words)
}

fn write_uuid(rng: &mut Rng, out: &mut Vec<u8>) {
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&rng.next().to_le_bytes());
    bytes[8..].copy_from_slice(&rng.next().to_le_bytes());
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    for (index, byte) in bytes.iter().enumerate() {
        if matches!(index, 4 | 6 | 8 | 10) {
            out.push(b'-');
        }
        out.push(HEX[usize::from(byte >> 4)]);
        out.push(HEX[usize::from(byte & 0x0f)]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(text: &str, seed: u64, seq: u64) -> String {
        let mut out = Vec::new();
        Template::parse(text)
            .unwrap()
            .render(&RenderContext::plain(seed, seq, None), &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn renders_each_function() {
        let text = render(
            "/search?q={{rand.lower 50}}&n={{rand.int -5 5}}&id={{uuid}}&k={{seq}}&c={{pick red \"light blue\"}}",
            7,
            42,
        );
        let query: Vec<&str> = text.trim_start_matches("/search?").split('&').collect();
        let q = query[0].trim_start_matches("q=");
        assert_eq!(q.len(), 50);
        assert!(q.bytes().all(|b| b.is_ascii_lowercase()));
        let n: i64 = query[1].trim_start_matches("n=").parse().unwrap();
        assert!((-5..=5).contains(&n));
        let id = query[2].trim_start_matches("id=");
        assert_eq!((id.len(), &id[14..15]), (36, "4"), "{id}");
        assert_eq!(query[3], "k=42");
        assert!(
            ["c=red", "c=light blue"].contains(&query[4]),
            "{}",
            query[4]
        );
    }

    #[test]
    fn the_seed_makes_requests_reproducible() {
        let text = "{{rand.alnum 16}} {{uuid}} {{rand.int 0 1000000}}";
        assert_eq!(render(text, 1, 5), render(text, 1, 5));
        assert_ne!(
            render(text, 1, 5),
            render(text, 1, 6),
            "each request differs"
        );
        assert_ne!(render(text, 1, 5), render(text, 2, 5), "each seed differs");
        let spread: std::collections::HashSet<String> = (0..1000)
            .map(|k| render("{{rand.int 1 10}}", 3, k))
            .collect();
        assert_eq!(spread.len(), 10, "every value of a small range shows up");
    }

    #[test]
    fn static_text_stays_static() {
        assert_eq!(render("a {{\"{{\"}} b", 0, 0), "a {{ b");
        let template = Template::parse("/plain/path?x=1").unwrap();
        assert!(template.is_static());
        assert!(!Template::parse("/{{seq}}").unwrap().is_static());
        assert_eq!(render("a{b}c", 0, 0), "a{b}c");
    }

    #[test]
    fn names_bad_templates() {
        let rows: &[(&str, &str)] = &[
            (
                "/{{rand.lowr 5}}",
                "unknown template function \"rand.lowr\"",
            ),
            ("/{{rand.lower}}", "rand.lower takes a length"),
            ("/{{rand.lower x}}", "is not a whole number"),
            ("/{{rand.lower 0}}", "between 1 and"),
            ("/{{rand.int 5 1}}", "5 is larger than 1"),
            ("/{{rand.int 1}}", "takes a range"),
            ("/{{uuid 4}}", "takes no arguments"),
            ("/{{pick}}", "needs at least one word"),
            ("/{{pick \"open}}", "without its closing"),
            ("/{{seq", "without '}}'"),
            ("/{{}}", "empty"),
            ("/{{csv.}}", "unknown template function \"csv.\""),
        ];
        for (text, want) in rows {
            let err = Template::parse(text).unwrap_err();
            assert!(err.contains(want), "{text}: {err}");
            assert!(err.starts_with(&format!("template {text:?}")), "{err}");
        }
    }

    #[test]
    fn outside_values_keep_the_request_shape_in_every_place() {
        let evil: &[u8] = b"a b\r\nX-Injected: yes\r\n\r\nGET /smuggled?x=1&y=2#f+\x00\xff";
        let variables = vec![evil.to_vec()];
        let names = ["token".to_owned()];
        let context = RenderContext {
            variables: &variables,
            ..RenderContext::plain(0, 0, None)
        };
        // (text, place, what it renders, or None when refused)
        let rows: &[(&str, Place, Option<&str>)] = &[
            (
                "/echo/{{token}}?t={{token}}",
                Place::Path,
                Some(
                    "/echo/a%20b%0D%0AX-Injected:%20yes%0D%0A%0D%0AGET%20/smuggled%3Fx=1&y=2%23f+%00%FF\
                     ?t=a%20b%0D%0AX-Injected:%20yes%0D%0A%0D%0AGET%20/smuggled?x=1%26y=2%23f%2B%00%FF",
                ),
            ),
            ("Bearer {{token}}", Place::Header, None),
            ("{{\"a\"}}", Place::Header, Some("a")),
        ];
        for (text, place, want) in rows {
            let template = Template::parse_with(text, Some(&names))
                .unwrap()
                .placed(*place);
            match want {
                Some(want) => {
                    assert_eq!(template.refusal(&context), None, "{text}");
                    let mut out = Vec::new();
                    template.render(&context, &mut out);
                    assert_eq!(String::from_utf8_lossy(&out), *want, "{text}");
                }
                None => {
                    let part = template.refusal(&context).expect("refused");
                    assert_eq!(template.placeholder(part, &names), "{{token}}");
                }
            }
        }
        // A body takes the value as it is.
        let body = Template::parse_with("{{token}}", Some(&names)).unwrap();
        let mut out = Vec::new();
        body.render(&context, &mut out);
        assert_eq!(out, evil);
        // Safe values pass a header; the template's own text is judged once.
        let plain = vec![b"abc".to_vec()];
        let safe = RenderContext {
            variables: &plain,
            ..context
        };
        let header = Template::parse_with("Bearer {{token}}", Some(&names))
            .unwrap()
            .placed(Place::Header);
        assert_eq!(header.refusal(&safe), None);
        let own = |text: &str, place| Template::parse(text).unwrap().placed(place).unsafe_text();
        assert_eq!(own("a\rb", Place::Header), Some("holds CR, LF or NUL"));
        assert_eq!(
            own("{{pick a \"b\nc\"}}", Place::Header),
            Some("holds CR, LF or NUL")
        );
        assert_eq!(
            own("/a b/{{seq}}", Place::Path),
            Some("holds a space or a control character")
        );
        assert_eq!(own("/a/{{seq}}?q=1", Place::Path), None);
        assert_eq!(own("a\r\nb", Place::Body), None);
    }
}
