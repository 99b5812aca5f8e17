//! Templates in answers: a route's `body` and `headers` values may say
//! `{{request.path}}`, `{{request.query.NAME}}`, `{{request.header.NAME}}`,
//! `{{request.cookie.NAME}}`, `{{request.param.NAME}}` (a route's `/{NAME}` segment)
//! and `{{id}}` (one unique id per answer, shared by its headers and body).
//!
//! Parsed once when the recipe loads; rendered per request into a buffer the worker
//! reuses. Only `{{request.` and `{{id}}` open a template: any other `{{...}}` is text,
//! so bodies written before templates existed keep their meaning.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::request::{RequestHeaders, pair_value};

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Template {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq)]
enum Part {
    Text(String),
    Path,
    Query(String),
    /// Lowercase.
    Header(String),
    Cookie(String),
    Param,
    Id,
}

/// What a template may read of the request being answered.
pub(crate) struct RequestParts<'a> {
    /// The path, without the query string.
    pub path: &'a [u8],
    /// The query string, without the `?`.
    pub query: &'a [u8],
    pub headers: RequestHeaders<'a>,
    /// The `/{NAME}` segment of a route with a path parameter, else empty.
    pub param: &'a [u8],
}

/// The answer's `{{id}}`: drawn from `counter` on first use, then the same value.
pub(crate) struct AnswerId<'a> {
    counter: &'a AtomicU64,
    value: Option<u64>,
}

impl<'a> AnswerId<'a> {
    pub fn new(counter: &'a AtomicU64) -> Self {
        Self {
            counter,
            value: None,
        }
    }

    fn get(&mut self) -> u64 {
        // Relaxed: uniqueness needs only the atomic increment, no ordering.
        *self
            .value
            .get_or_insert_with(|| self.counter.fetch_add(1, Ordering::Relaxed) + 1)
    }
}

const KNOWN: &str = "request.path, request.query.NAME, request.header.NAME, request.cookie.NAME, request.param.NAME or id";

impl Template {
    /// Parses `text`. `Ok(None)` when it holds no template, so the answer keeps its
    /// pre-rendered bytes. `param` is the route's path parameter, if it has one.
    pub fn parse(text: &str, param: Option<&str>) -> Result<Option<Template>, String> {
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut rest = text;
        while let Some(open) = rest.find("{{") {
            let inner = &rest[open + 2..];
            if !opens_template(inner) {
                literal.push_str(&rest[..open + 2]);
                rest = inner;
                continue;
            }
            let Some(close) = inner.find("}}") else {
                let at = text.len() - inner.len() - 2;
                return Err(format!("template at byte {at} has no closing }}}}"));
            };
            literal.push_str(&rest[..open]);
            if !literal.is_empty() {
                parts.push(Part::Text(std::mem::take(&mut literal)));
            }
            parts.push(part(inner[..close].trim(), param)?);
            rest = &inner[close + 2..];
        }
        if parts.is_empty() {
            return Ok(None);
        }
        literal.push_str(rest);
        if !literal.is_empty() {
            parts.push(Part::Text(literal));
        }
        Ok(Some(Template { parts }))
    }

    /// Appends the rendered text to `out`; a value the request lacks renders empty.
    pub fn render(&self, request: &RequestParts<'_>, id: &mut AnswerId<'_>, out: &mut Vec<u8>) {
        for part in &self.parts {
            match part {
                Part::Text(text) => out.extend_from_slice(text.as_bytes()),
                Part::Path => out.extend_from_slice(request.path),
                Part::Query(name) => {
                    let value = pair_value(request.query, b'&', name.as_bytes());
                    out.extend_from_slice(value.unwrap_or_default());
                }
                Part::Header(name) => {
                    out.extend_from_slice(request.headers.get(name).unwrap_or_default());
                }
                Part::Cookie(name) => {
                    out.extend_from_slice(request.headers.cookie(name).unwrap_or_default());
                }
                Part::Param => out.extend_from_slice(request.param),
                Part::Id => append_decimal(out, id.get()),
            }
        }
    }
}

/// Whether the text after `{{` starts a template: `request.`, or the word `id` (so
/// `{{identity}}` stays text, and an unclosed `{{id` is an error).
fn opens_template(inner: &str) -> bool {
    let inner = inner.trim_start();
    inner.starts_with("request.")
        || inner.strip_prefix("id").is_some_and(|after| {
            !after.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        })
}

fn part(inner: &str, param: Option<&str>) -> Result<Part, String> {
    if inner == "id" {
        return Ok(Part::Id);
    }
    if inner == "request.path" {
        return Ok(Part::Path);
    }
    let unknown = || format!("unknown template {{{{{inner}}}}}: expected {KNOWN}");
    let (kind, name) = inner
        .strip_prefix("request.")
        .and_then(|rest| rest.split_once('.'))
        .ok_or_else(unknown)?;
    let valid = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_graphic() && !b"{}=;&".contains(&b));
    if !valid {
        return Err(format!("template {{{{{inner}}}}}: bad name {name:?}"));
    }
    match kind {
        "query" => Ok(Part::Query(name.to_owned())),
        "header" => Ok(Part::Header(name.to_ascii_lowercase())),
        "cookie" => Ok(Part::Cookie(name.to_owned())),
        "param" if param == Some(name) => Ok(Part::Param),
        "param" => Err(match param {
            Some(param) => {
                format!("template {{{{{inner}}}}}: the route's parameter is {{{param}}}")
            }
            None => format!("template {{{{{inner}}}}}: the route has no /{{{name}}} parameter"),
        }),
        _ => Err(unknown()),
    }
}

fn append_decimal(out: &mut Vec<u8>, value: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = value;
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(text: &str, param: Option<&str>, counter: &AtomicU64) -> String {
        let template = Template::parse(text, param).unwrap().unwrap();
        let head =
            b"GET /items/7?q=hello&n=2 HTTP/1.1\r\nX-User: ann\r\nCookie: session=42\r\n\r\n";
        let request = RequestParts {
            path: b"/items/7",
            query: b"q=hello&n=2",
            headers: RequestHeaders::Raw(head),
            param: b"7",
        };
        let mut out = Vec::new();
        template.render(&request, &mut AnswerId::new(counter), &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn renders_request_values() {
        let counter = AtomicU64::new(0);
        let rows = [
            ("{{request.path}}", None, "/items/7"),
            ("q={{request.query.q}};", None, "q=hello;"),
            ("[{{ request.query.missing }}]", None, "[]"),
            ("{{request.header.X-USER}}", None, "ann"),
            ("{{request.header.absent}}!", None, "!"),
            ("s={{request.cookie.session}}", None, "s=42"),
            ("{\"id\":{{request.param.id}}}", Some("id"), "{\"id\":7}"),
            ("{{id}} {{id}}", None, "1 1"),
            ("{{ id }}", None, "2"),
            ("a {{b}} {{identity}} {{", None, "a {{b}} {{identity}} {{"),
        ];
        for (text, param, want) in rows {
            if Template::parse(text, param).unwrap().is_none() {
                assert_eq!(text, want, "no template, text as written");
                continue;
            }
            assert_eq!(render(text, param, &counter), want, "{text}");
        }
    }

    #[test]
    fn plain_text_is_no_template() {
        for text in ["", "hello", "{\"a\": {\"b\": 1}}", "{{mustache}}", "}}{{"] {
            assert_eq!(Template::parse(text, None), Ok(None), "{text}");
        }
    }

    #[test]
    fn bad_templates_are_named() {
        let rows = [
            (
                "{{request.path",
                None,
                "template at byte 0 has no closing }}",
            ),
            ("ab{{id", None, "template at byte 2 has no closing }}"),
            (
                "{{request.body}}",
                None,
                "unknown template {{request.body}}: expected",
            ),
            (
                "{{request.query}}",
                None,
                "unknown template {{request.query}}",
            ),
            (
                "{{request.query.}}",
                None,
                "template {{request.query.}}: bad name \"\"",
            ),
            ("{{request.header.a b}}", None, "bad name \"a b\""),
            (
                "{{request.param.id}}",
                None,
                "the route has no /{id} parameter",
            ),
            (
                "{{request.param.x}}",
                Some("id"),
                "the route's parameter is {id}",
            ),
        ];
        for (text, param, want) in rows {
            match Template::parse(text, param) {
                Err(got) => assert!(got.contains(want), "{text}: {got}"),
                Ok(got) => panic!("{text}: accepted as {got:?}"),
            }
        }
    }
}
