//! [`Check`]: a named expectation on a flow step's answer, parsed once from text
//! (`status 2xx`, `json $.token exists`, `latency < 200ms`, ...; docs/FLOWS.md lists
//! them) and judged on the bytes already read ([`Check::passes`]): no allocation
//! unless a JSON object or array is compared whole.

use regex::bytes::Regex;

use crate::answer::Answer;
use crate::json_path::{JsonPath, write_value};

/// A check with its name (its text unless the user named it).
#[derive(Debug, Clone)]
pub struct Check {
    /// The check's name within its step.
    pub name: String,
    /// `event NAME: CHECK`: it judges only the events of this type (an `sse` or
    /// `stream` step's; others are not judged by it). `None`: every answer or event.
    pub event: Option<String>,
    expect: Expect,
}

#[derive(Debug, Clone)]
enum Expect {
    /// Any of these; each a status or a class (`2xx` is 200..300).
    Status(Vec<(u16, u16)>),
    Header {
        name: String,
        test: TextTest,
    },
    Body(TextTest),
    Json {
        path: JsonPath,
        test: JsonTest,
    },
    Size(Compare, u64),
    LatencyNs(Compare, u64),
    /// A gRPC call's status is any of these codes.
    Grpc(Vec<u8>),
}

#[derive(Debug, Clone)]
enum TextTest {
    Present,
    Equals(Vec<u8>),
    Contains(Vec<u8>),
    Matches(Regex),
}

#[derive(Debug, Clone)]
enum JsonTest {
    Exists,
    Equals(serde_json::Value),
    Differs(serde_json::Value),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Compare {
    Below,
    AtMost,
    Above,
    AtLeast,
    Equal,
}

const FORMS: &str = "status 200 | status 2xx | header NAME [= VALUE | contains TEXT | matches REGEX] | \
     body contains TEXT | body matches REGEX | json PATH exists | json PATH = VALUE | json PATH != VALUE | \
     size < 10kb | latency < 200ms | grpc OK";

impl Check {
    /// Parses `expect`, named `name` (the text itself when `None`).
    pub fn parse(expect: &str, name: Option<&str>) -> Result<Check, String> {
        let text = expect.trim();
        if let Some(scoped) = text.strip_prefix("event ") {
            let Some((event, rest)) = scoped.split_once(": ") else {
                return Err(format!("check {text:?}: want event TYPE: CHECK"));
            };
            let event = event.trim();
            if event.is_empty() || event.contains(char::is_whitespace) {
                return Err(format!("check {text:?}: {event:?} is not an event type"));
            }
            let check = Check::parse(rest, Some(name.unwrap_or(text)))?;
            if check.event.is_some() {
                return Err(format!("check {text:?}: one event type at most"));
            }
            return Ok(Check {
                event: Some(event.to_owned()),
                ..check
            });
        }
        let (kind, rest) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
        let rest = rest.trim();
        let expect = match kind {
            "status" => Expect::Status(parse_statuses(rest)?),
            "header" => parse_header(rest)?,
            "body" => Expect::Body(parse_text_test(rest, false)?),
            "json" => parse_json(rest)?,
            "size" => {
                let (compare, value) = parse_compare(rest)?;
                let size = units::parse_size(value).map_err(|e| format!("size: {e}"))?;
                Expect::Size(compare, size)
            }
            "latency" => {
                let (compare, value) = parse_compare(rest)?;
                let latency = units::parse_duration(value).map_err(|e| format!("latency: {e}"))?;
                Expect::LatencyNs(
                    compare,
                    u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX),
                )
            }
            "grpc" => Expect::Grpc(parse_grpc_codes(rest)?),
            _ => return Err(format!("check {text:?}: want one of: {FORMS}")),
        };
        Ok(Check {
            name: name.map_or_else(|| text.to_owned(), str::to_owned),
            event: None,
            expect,
        })
    }

    /// Whether the answer passes; `scratch` holds an unescaped JSON string.
    /// No answer (status 0) passes nothing.
    pub fn passes(&self, answer: &Answer<'_>, scratch: &mut Vec<u8>) -> bool {
        if answer.status == 0 {
            return false;
        }
        match &self.expect {
            Expect::Status(sets) => sets
                .iter()
                .any(|&(low, high)| (low..=high).contains(&answer.status)),
            Expect::Header { name, test } => {
                answer.header(name).is_some_and(|value| test.passes(value))
            }
            Expect::Body(test) => test.passes(answer.body),
            Expect::Json { path, test } => {
                let found = path.find(answer.body, &mut |_| 0);
                test.passes(found, scratch)
            }
            Expect::Size(compare, size) => compare.holds(answer.body_bytes, *size),
            Expect::LatencyNs(compare, bound) => compare.holds(answer.latency_ns, *bound),
            Expect::Grpc(codes) => answer.grpc_status.is_some_and(|code| codes.contains(&code)),
        }
    }

    /// Whether judging the check needs the answer's head (its headers).
    pub fn reads_head(&self) -> bool {
        matches!(self.expect, Expect::Header { .. })
    }

    /// Whether the check reads a gRPC call's status.
    pub fn reads_grpc_status(&self) -> bool {
        matches!(self.expect, Expect::Grpc(_))
    }

    /// Whether judging the check needs the body's bytes.
    pub fn reads_body(&self) -> bool {
        matches!(self.expect, Expect::Body(_) | Expect::Json { .. })
    }
}

impl TextTest {
    fn passes(&self, value: &[u8]) -> bool {
        match self {
            TextTest::Present => true,
            TextTest::Equals(want) => value == want.as_slice(),
            TextTest::Contains(want) => contains(value, want),
            TextTest::Matches(regex) => regex.is_match(value),
        }
    }
}

impl JsonTest {
    fn passes(&self, found: Option<&[u8]>, scratch: &mut Vec<u8>) -> bool {
        match (self, found) {
            (_, None) => false,
            (JsonTest::Exists, Some(_)) => true,
            (JsonTest::Equals(want), Some(found)) => json_equals(found, want, scratch),
            (JsonTest::Differs(want), Some(found)) => !json_equals(found, want, scratch),
        }
    }
}

/// Whether the JSON text `found` is the value `want`: strings and scalars compared
/// without parsing into a tree.
fn json_equals(found: &[u8], want: &serde_json::Value, scratch: &mut Vec<u8>) -> bool {
    match want {
        serde_json::Value::String(text) => {
            if found.first() != Some(&b'"') {
                return false;
            }
            scratch.clear();
            write_value(found, scratch);
            scratch.as_slice() == text.as_bytes()
        }
        serde_json::Value::Number(number) => std::str::from_utf8(found)
            .ok()
            .and_then(|f| f.parse::<f64>().ok())
            .zip(number.as_f64())
            .is_some_and(|(f, n)| f == n),
        serde_json::Value::Bool(_) | serde_json::Value::Null => {
            found == want.to_string().as_bytes()
        }
        _ => serde_json::from_slice::<serde_json::Value>(found).is_ok_and(|f| f == *want),
    }
}

impl Compare {
    fn holds(self, value: u64, bound: u64) -> bool {
        match self {
            Compare::Below => value < bound,
            Compare::AtMost => value <= bound,
            Compare::Above => value > bound,
            Compare::AtLeast => value >= bound,
            Compare::Equal => value == bound,
        }
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || haystack.windows(needle.len()).any(|w| w == needle)
}

/// `OK`, `OK NOT_FOUND` (any of them), or `= OK` / `= "OK"` as a status by name.
fn parse_grpc_codes(rest: &str) -> Result<Vec<u8>, String> {
    let rest = rest.strip_prefix('=').unwrap_or(rest);
    let codes: Vec<u8> = rest
        .split([' ', ','])
        .map(|w| w.trim_matches('"'))
        .filter(|w| !w.is_empty())
        .map(|word| {
            units::grpc_code(word).ok_or_else(|| {
                format!(
                    "grpc {word:?}: want a gRPC status by name ({})",
                    units::GRPC_CODE_NAMES.join(", ")
                )
            })
        })
        .collect::<Result<_, _>>()?;
    if codes.is_empty() {
        return Err("grpc: want a gRPC status by name, like grpc OK".to_owned());
    }
    Ok(codes)
}

fn parse_statuses(rest: &str) -> Result<Vec<(u16, u16)>, String> {
    let sets: Vec<(u16, u16)> = rest
        .split([' ', ','])
        .filter(|w| !w.is_empty())
        .map(|word| {
            let bad = || format!("status {word:?}: want a code like 200 or a class like 2xx");
            match word.as_bytes() {
                [d @ b'1'..=b'5', b'x' | b'X', b'x' | b'X'] => {
                    let low = u16::from(d - b'0') * 100;
                    Ok((low, low + 99))
                }
                _ => word
                    .parse::<u16>()
                    .ok()
                    .filter(|c| (100..=599).contains(c))
                    .map(|c| (c, c))
                    .ok_or_else(bad),
            }
        })
        .collect::<Result<_, _>>()?;
    if sets.is_empty() {
        return Err("status needs at least one code, like status 200".to_owned());
    }
    Ok(sets)
}

fn parse_header(rest: &str) -> Result<Expect, String> {
    let (name, test) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    if name.is_empty() {
        return Err("header needs a name, like header Content-Type".to_owned());
    }
    Ok(Expect::Header {
        name: name.to_owned(),
        test: parse_text_test(test.trim(), true)?,
    })
}

/// `= VALUE`, `contains TEXT`, `matches REGEX`, or nothing (present) for headers.
fn parse_text_test(rest: &str, is_header: bool) -> Result<TextTest, String> {
    let (op, value) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let value = unquote(value.trim());
    match op {
        "" if is_header => Ok(TextTest::Present),
        "=" | "==" if is_header => Ok(TextTest::Equals(value.as_bytes().to_vec())),
        "contains" if !value.is_empty() => Ok(TextTest::Contains(value.as_bytes().to_vec())),
        "matches" => Regex::new(value)
            .map(TextTest::Matches)
            .map_err(|e| format!("regex {value:?}: {}", first_line(&e.to_string()))),
        _ if is_header => Err(format!(
            "header check {rest:?}: want NAME, NAME = VALUE, NAME contains TEXT or NAME matches REGEX"
        )),
        _ => Err(format!(
            "body check {rest:?}: want body contains TEXT or body matches REGEX"
        )),
    }
}

fn parse_json(rest: &str) -> Result<Expect, String> {
    let (path, test) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let path = JsonPath::parse(path)?;
    let test = test.trim();
    let (op, value) = test.split_once(char::is_whitespace).unwrap_or((test, ""));
    let test = match op {
        "exists" if value.is_empty() => JsonTest::Exists,
        "=" | "==" => JsonTest::Equals(json_literal(value.trim())?),
        "!=" => JsonTest::Differs(json_literal(value.trim())?),
        _ => {
            return Err(format!(
                "json check {rest:?}: want json PATH exists, json PATH = VALUE or json PATH != VALUE"
            ));
        }
    };
    Ok(Expect::Json { path, test })
}

/// A JSON value as written, or a bare word taken as a string.
fn json_literal(text: &str) -> Result<serde_json::Value, String> {
    if text.is_empty() {
        return Err("a JSON check compares with a value: json $.ok = true".to_owned());
    }
    Ok(serde_json::from_str(text).unwrap_or_else(|_| serde_json::Value::String(text.to_owned())))
}

fn parse_compare(rest: &str) -> Result<(Compare, &str), String> {
    let (op, value) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let compare = match op {
        "<" => Compare::Below,
        "<=" => Compare::AtMost,
        ">" => Compare::Above,
        ">=" => Compare::AtLeast,
        "=" | "==" => Compare::Equal,
        _ => return Err(format!("{rest:?}: want < <= > >= or = then a value")),
    };
    Ok((compare, value.trim()))
}

fn unquote(text: &str) -> &str {
    text.strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(text)
}

fn first_line(text: &str) -> &str {
    text.lines().last().unwrap_or(text).trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, body: &'static str, latency_ms: u64) -> Answer<'static> {
        Answer {
            status,
            head: b"HTTP/1.1 200 OK\r\nContent-Type: application/json; charset=utf-8\r\nX-Id: 42\r\n\r\n",
            body: body.as_bytes(),
            body_bytes: body.len() as u64,
            latency_ns: latency_ms * 1_000_000,
            grpc_status: None,
        }
    }

    #[test]
    fn judges_each_kind_of_check() {
        let ok = answer(
            200,
            r#"{"token":"t1","n":3,"ok":true,"user":{"name":"ann"},"tags":["a"]}"#,
            120,
        );
        let rows: &[(&str, bool)] = &[
            ("status 200", true),
            ("status 201 204", false),
            ("status 2xx", true),
            ("status 4xx, 200", true),
            ("header Content-Type", true),
            ("header x-id = 42", true),
            ("header X-Id = 43", false),
            ("header content-type contains json", true),
            ("header content-type matches ^text/", false),
            ("header X-Missing", false),
            ("body contains \"token\"", true),
            ("body contains nothing-like-this", false),
            (r#"body matches "n":\d+"#, true),
            ("json $.token exists", true),
            ("json $.nope exists", false),
            ("json $.token = t1", true),
            ("json $.token = \"t1\"", true),
            ("json $.token != t1", false),
            ("json $.n = 3", true),
            ("json $.n = 3.0", true),
            ("json $.n = \"3\"", false),
            ("json $.ok = true", true),
            ("json $.ok = false", false),
            ("json /user/name = ann", true),
            ("json $.tags = [\"a\"]", true),
            ("size < 1kb", true),
            ("size > 1kb", false),
            ("size >= 10", true),
            ("latency < 200ms", true),
            ("latency < 100ms", false),
            ("latency >= 120ms", true),
        ];
        let mut scratch = Vec::new();
        for (text, want) in rows {
            let check = Check::parse(text, None).unwrap();
            assert_eq!(check.passes(&ok, &mut scratch), *want, "{text}");
            assert_eq!(check.name, *text);
        }
        let none = answer(0, "", 0);
        assert!(
            !Check::parse("latency < 1h", None)
                .unwrap()
                .passes(&none, &mut scratch)
        );
        let grpc = |code| Answer {
            grpc_status: code,
            ..answer(200, "{}", 1)
        };
        let rows: &[(&str, Option<u8>, bool)] = &[
            ("grpc OK", Some(0), true),
            ("grpc = \"OK\"", Some(0), true),
            ("grpc = OK", Some(14), false),
            ("grpc OK UNAVAILABLE", Some(14), true),
            ("grpc not_found", Some(5), true),
            ("grpc OK", None, false),
        ];
        for (text, code, want) in rows {
            let check = Check::parse(text, None).unwrap();
            assert_eq!(check.passes(&grpc(*code), &mut scratch), *want, "{text}");
        }
        let named = Check::parse("status 200", Some("logged in")).unwrap();
        assert_eq!(named.name, "logged in");
    }

    #[test]
    fn names_bad_checks() {
        let rows: &[(&str, &str)] = &[
            ("stats 200", "want one of: status 200"),
            ("status", "at least one code"),
            ("status 20", "want a code like 200"),
            ("status 6xx", "want a code like 200"),
            ("header", "needs a name"),
            ("header X ~ 1", "want NAME, NAME = VALUE"),
            ("body has x", "want body contains TEXT"),
            ("body matches (", "regex \"(\""),
            ("json token exists", "want a JSONPath starting with $"),
            ("json $.a", "want json PATH exists"),
            ("json $.a =", "compares with a value"),
            ("size < lots", "size:"),
            ("latency ~ 1s", "want < <= > >= or ="),
            ("latency < 5", "latency:"),
            ("grpc", "want a gRPC status by name, like grpc OK"),
            (
                "grpc 0",
                "grpc \"0\": want a gRPC status by name (OK, CANCELLED",
            ),
            ("grpc = FINE", "grpc \"FINE\": want a gRPC status by name"),
        ];
        for (text, want) in rows {
            let err = Check::parse(text, None).unwrap_err();
            assert!(err.contains(want), "{text}: {err}");
        }
    }
}
