//! [`JsonLines`]: one JSON object per line, its fields found under the user's keys
//! ([`Keys::parse`] of `time=ts,method=verb,url=path,latency=dur_ms:ms`, dotted paths
//! for nested objects) or under the common ones (`time`/`timestamp`/`ts`, `method`,
//! `url`/`uri`/`path`, `host`, `status`, `bytes`, `user_agent`,
//! `latency`/`duration`/`request_time`).

use std::cell::Cell;

use serde_json::Value;

use super::fields::{count, decimal_ns, status};
use super::request_line::{method, query, target};
use super::timestamps::{NS_PER_S, Unit, iso8601_ns, unix_ns};
use crate::{LineParser, LoggedRequest};

/// Our names for the fields, as a mapping names them.
const NAMES: [&str; 10] = [
    "time",
    "method",
    "url",
    "path",
    "query",
    "host",
    "status",
    "bytes",
    "user_agent",
    "latency",
];

/// The keys one of our fields may be under, tried in order, and its unit.
#[derive(Debug, Clone, Default)]
struct Key {
    names: Vec<String>,
    unit: Option<Unit>,
}

impl Key {
    fn of(names: &[&str]) -> Key {
        Key {
            names: names.iter().map(|&n| n.to_owned()).collect(),
            unit: None,
        }
    }

    /// The first of the keys the object has (not null), and its name.
    fn find<'v>(&self, object: &'v Value) -> Option<(&str, &'v Value)> {
        self.names
            .iter()
            .find_map(|name| lookup(object, name).map(|value| (name.as_str(), value)))
    }
}

/// `key` in `object`: a key of that exact name, else a dotted path into nested
/// objects.
fn lookup<'v>(object: &'v Value, key: &str) -> Option<&'v Value> {
    let value = match object.get(key) {
        Some(value) => value,
        None => key
            .split('.')
            .try_fold(object, |value, part| value.get(part))?,
    };
    (!value.is_null()).then_some(value)
}

/// Where each of our fields is found.
#[derive(Debug, Clone)]
pub(super) struct Keys {
    time: Key,
    method: Key,
    url: Key,
    path: Key,
    query: Key,
    host: Key,
    status: Key,
    bytes: Key,
    user_agent: Key,
    latency: Key,
}

impl Default for Keys {
    fn default() -> Self {
        Keys {
            time: Key::of(&["time", "timestamp", "ts", "@timestamp"]),
            method: Key::of(&["method"]),
            url: Key::of(&["url", "uri", "path"]),
            path: Key::default(),
            query: Key::default(),
            host: Key::of(&["host"]),
            status: Key::of(&["status"]),
            bytes: Key::of(&["bytes"]),
            user_agent: Key::of(&["user_agent"]),
            latency: Key::of(&["latency", "duration", "request_time"]),
        }
    }
}

impl Keys {
    /// The common keys, with the fields `mapping` names (`name=key[:unit]`, commas
    /// between) under the user's keys instead.
    pub(super) fn parse(mapping: &str) -> Result<Keys, String> {
        let mut keys = Keys::default();
        for item in mapping.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (ours, theirs) = item
                .split_once('=')
                .ok_or_else(|| format!("log fields: {item:?} is not NAME=KEY"))?;
            let (theirs, unit) = match theirs.rsplit_once(':') {
                Some((key, unit)) => (key, Some(parse_unit(unit)?)),
                None => (theirs, None),
            };
            if theirs.is_empty() {
                return Err(format!("log fields: {ours} names no key"));
            }
            if unit.is_some() && !matches!(ours, "time" | "latency") {
                return Err(format!(
                    "log fields: {ours} takes no unit (only time and latency do)"
                ));
            }
            match ours {
                "url" => keys.path.names.clear(),
                "path" => keys.url.names.clear(),
                _ => {}
            }
            let key = keys.slot(ours).ok_or_else(|| {
                format!(
                    "log fields: unknown field {ours:?} (fields: {})",
                    NAMES.join(", ")
                )
            })?;
            *key = Key {
                names: vec![theirs.to_owned()],
                unit,
            };
        }
        Ok(keys)
    }

    fn slot(&mut self, name: &str) -> Option<&mut Key> {
        Some(match name {
            "time" => &mut self.time,
            "method" => &mut self.method,
            "url" => &mut self.url,
            "path" => &mut self.path,
            "query" => &mut self.query,
            "host" => &mut self.host,
            "status" => &mut self.status,
            "bytes" => &mut self.bytes,
            "user_agent" => &mut self.user_agent,
            "latency" => &mut self.latency,
            _ => return None,
        })
    }
}

fn parse_unit(text: &str) -> Result<Unit, String> {
    Unit::parse(text).ok_or_else(|| format!("log fields: unit {text:?} is not s, ms, us or ns"))
}

/// JSON lines under [`Keys`].
pub(super) struct JsonLines {
    keys: Keys,
    /// The finest time resolution the lines have shown (Go and others drop a
    /// fraction's trailing zeros, so one line's digits can understate it).
    finest_ns: Cell<u64>,
}

impl JsonLines {
    pub(super) fn new(keys: Keys) -> Self {
        JsonLines {
            keys,
            finest_ns: Cell::new(u64::MAX),
        }
    }

    /// The url, or the path; with the query where one is mapped and the target has
    /// none of its own.
    fn target(&self, object: &Value) -> Result<String, String> {
        let (key, found) = self
            .keys
            .url
            .find(object)
            .or_else(|| self.keys.path.find(object))
            .ok_or_else(|| {
                let tried = [&self.keys.url.names[..], &self.keys.path.names[..]].concat();
                format!("no url (tried {})", tried.join(", "))
            })?;
        let mut target = target(text(key, found)?.as_bytes())?;
        if let Some((key, args)) = self.keys.query.find(object) {
            let args = text(key, args)?.trim_start_matches('?');
            if !args.is_empty() && !target.contains('?') {
                target.push('?');
                target.push_str(&query(args.as_bytes())?);
            }
        }
        Ok(target)
    }

    fn optional_text(key: &Key, object: &Value) -> Result<Option<String>, String> {
        key.find(object)
            .map(|(name, value)| text(name, value).map(str::to_owned))
            .transpose()
    }
}

fn text<'v>(key: &str, value: &'v Value) -> Result<&'v str, String> {
    value
        .as_str()
        .ok_or_else(|| format!("{key} {value} is not a string"))
}

/// A time: RFC 3339 text, or a unix number (its unit given or guessed by size).
fn time_ns(key: &str, value: &Value, unit: Option<Unit>) -> Result<(u64, u64), String> {
    let not_time = || format!("{key} {value} is not a time (RFC 3339 or unix)");
    match value {
        Value::String(s) if s.bytes().all(|b| b.is_ascii_digit() || b == b'.') => {
            unix_ns(s.as_bytes(), unit).ok_or_else(not_time)
        }
        Value::String(s) => iso8601_ns(s.as_bytes()).or_else(|_| {
            let time: jiff::Timestamp = s.parse().map_err(|_| not_time())?;
            let ns = u64::try_from(time.as_nanosecond()).map_err(|_| not_time())?;
            Ok((ns, 1))
        }),
        Value::Number(n) => {
            if let Some(whole) = n.as_u64() {
                let unit = unit.unwrap_or_else(|| Unit::of_unix_time(whole));
                let ns = whole.checked_mul(unit.ns()).ok_or_else(not_time)?;
                return Ok((ns, unit.ns()));
            }
            let real = n.as_f64().filter(|f| *f >= 0.0).ok_or_else(not_time)?;
            let unit = unit.unwrap_or_else(|| Unit::of_unix_time(real as u64));
            Ok((
                (real * unit.ns() as f64) as u64,
                (unit.ns() / 1_000_000).max(1),
            ))
        }
        _ => Err(not_time()),
    }
}

/// A duration: a number in `unit` (seconds unless the mapping says), or its text.
fn duration_ns(key: &str, value: &Value, unit: Unit) -> Result<Option<u64>, String> {
    let not_duration = || format!("{key} {value} is not a duration");
    match value {
        Value::String(s) if s == "-" => Ok(None),
        Value::String(s) => decimal_ns(s.as_bytes(), unit.ns())
            .map(Some)
            .ok_or_else(not_duration),
        Value::Number(n) => match (n.as_u64(), n.as_f64()) {
            (Some(whole), _) => whole
                .checked_mul(unit.ns())
                .map(Some)
                .ok_or_else(not_duration),
            (None, Some(real)) if real >= 0.0 => Ok(Some((real * unit.ns() as f64) as u64)),
            _ => Err(not_duration()),
        },
        _ => Err(not_duration()),
    }
}

/// A number field (status, bytes) logged as a number or as its text.
fn number_text<'v>(
    key: &str,
    value: &'v Value,
    buffer: &'v mut String,
) -> Result<&'v [u8], String> {
    match value {
        Value::String(s) => Ok(s.as_bytes()),
        Value::Number(n) => {
            *buffer = n.to_string();
            Ok(buffer.as_bytes())
        }
        _ => Err(format!("{key} {value} is not a number")),
    }
}

impl LineParser for JsonLines {
    fn parse_line(&self, line: &str) -> Result<Option<LoggedRequest>, String> {
        let line = line.trim();
        if line.is_empty() {
            return Ok(None);
        }
        let object: Value =
            serde_json::from_str(line).map_err(|e| format!("line is not JSON: {e}"))?;
        if !object.is_object() {
            return Err("line is not a JSON object".to_owned());
        }
        let keys = &self.keys;
        let (key, time) = keys
            .time
            .find(&object)
            .ok_or_else(|| format!("no time (tried {})", keys.time.names.join(", ")))?;
        let (time_unix_ns, resolution_ns) = time_ns(key, time, keys.time.unit)?;
        self.finest_ns.set(self.finest_ns.get().min(resolution_ns));
        let method = match keys.method.find(&object) {
            Some((key, value)) => method(text(key, value)?.as_bytes())?,
            None => "GET".to_owned(),
        };
        let mut buffer = String::new();
        let status = match keys.status.find(&object) {
            Some((key, value)) => status(number_text(key, value, &mut buffer)?)
                .map_err(|e| e.replacen("status", key, 1))?,
            None => None,
        };
        let bytes = match keys.bytes.find(&object) {
            Some((key, value)) => count(number_text(key, value, &mut buffer)?, key)?,
            None => None,
        };
        let latency_ns = match keys.latency.find(&object) {
            Some((key, value)) => duration_ns(key, value, keys.latency.unit.unwrap_or(Unit::S))?,
            None => None,
        };
        Ok(Some(LoggedRequest {
            time_unix_ns,
            method,
            target: self.target(&object)?,
            host: Self::optional_text(&keys.host, &object)?,
            status,
            bytes,
            user_agent: Self::optional_text(&keys.user_agent, &object)?,
            latency_ns,
            line: 0,
            put_back_ns: 0,
        }))
    }

    fn resolution_ns(&self) -> u64 {
        match self.finest_ns.get() {
            u64::MAX => NS_PER_S,
            finest => finest,
        }
    }

    fn name(&self) -> String {
        "json".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{Want, check_rows};
    use super::*;

    /// 2024-03-01T12:00:00Z.
    const T: u64 = 1_709_294_400_000_000_000;

    #[test]
    fn common_keys() {
        let parser = JsonLines::new(Keys::default());
        assert_eq!(parser.resolution_ns(), NS_PER_S);
        let rows: &[(&str, Want)] = &[
            (
                r#"{"ts":"2024-03-01T12:00:00.5Z","method":"get","path":"/search?q=x","status":200,"latency":0.25}"#,
                Ok(Some((
                    T + 500_000_000,
                    "GET",
                    "/search?q=x",
                    None,
                    Some(200),
                    None,
                    None,
                    Some(250_000_000),
                ))),
            ),
            (
                r#"{"time":1709294400,"url":"https://example.com/a","host":"example.com","status":"404","bytes":"12","user_agent":"curl/8.0","duration":"0.5"}"#,
                Ok(Some((
                    T,
                    "GET",
                    "https://example.com/a",
                    Some("example.com"),
                    Some(404),
                    Some(12),
                    Some("curl/8.0"),
                    Some(500_000_000),
                ))),
            ),
            (
                r#"{"timestamp":"2024-03-01T13:00:00+01:00","uri":"/caf\u00e9","status":null}"#,
                Ok(Some((T, "GET", "/caf%C3%A9", None, None, None, None, None))),
            ),
            (
                r#"{"@timestamp":1709294400123456789,"url":"/"}"#,
                Ok(Some((
                    T + 123_456_789,
                    "GET",
                    "/",
                    None,
                    None,
                    None,
                    None,
                    None,
                ))),
            ),
            ("  ", Ok(None)),
            (
                "not json",
                Err("line is not JSON: expected ident at line 1 column 2"),
            ),
            ("[1]", Err("line is not a JSON object")),
            (
                r#"{"url":"/"}"#,
                Err("no time (tried time, timestamp, ts, @timestamp)"),
            ),
            (r#"{"ts":1}"#, Err("no url (tried url, uri, path)")),
            (
                r#"{"ts":"yesterday","url":"/"}"#,
                Err("ts \"yesterday\" is not a time (RFC 3339 or unix)"),
            ),
            (
                r#"{"ts":true,"url":"/"}"#,
                Err("ts true is not a time (RFC 3339 or unix)"),
            ),
            (
                r#"{"ts":1,"url":"/","method":"FETCH"}"#,
                Err("method \"FETCH\" is not an HTTP method"),
            ),
            (
                r#"{"ts":1,"url":"/","method":7}"#,
                Err("method 7 is not a string"),
            ),
            (
                r#"{"ts":1,"url":"/","status":"abc"}"#,
                Err("status \"abc\" is not a number"),
            ),
            (
                r#"{"ts":1,"url":"/","bytes":-1}"#,
                Err("bytes \"-1\" is not a number"),
            ),
            (
                r#"{"ts":1,"url":"a/b"}"#,
                Err("uri \"a/b\" is neither a path nor an http(s) URL"),
            ),
            (
                r#"{"ts":1,"url":"/","latency":-0.5}"#,
                Err("latency -0.5 is not a duration"),
            ),
        ];
        check_rows(&parser, rows);
        assert_eq!(parser.resolution_ns(), 1, "the finest seen: nanoseconds");
    }

    #[test]
    fn mapped_keys() {
        let mapping = "time=@t:ms, method=req.verb, path=req.path, query=req.qs, host=req.host, \
                       status=res.code, bytes=http.bytes, user_agent=req.ua, latency=dur:ms";
        let parser = JsonLines::new(Keys::parse(mapping).expect("the mapping parses"));
        let rows: &[(&str, Want)] = &[
            (
                r#"{"@t":1709294400250,"req":{"verb":"PUT","path":"/items/1","qs":"?v=2","host":"api","ua":"app/1"},"res":{"code":201},"http.bytes":3,"dur":12.5}"#,
                Ok(Some((
                    T + 250_000_000,
                    "PUT",
                    "/items/1?v=2",
                    Some("api"),
                    Some(201),
                    Some(3),
                    Some("app/1"),
                    Some(12_500_000),
                ))),
            ),
            (
                r#"{"@t":1709294400250,"req":{"path":"/","qs":"a b"}}"#,
                Err("args \"a b\" holds a space"),
            ),
            (
                r#"{"@t":"2024-03-01T12:00:00Z","url":"/ignored"}"#,
                Err("no url (tried req.path)"),
            ),
            (
                r#"{"@t":1,"req":{"path":"/"},"res":{"code":"x"}}"#,
                Err("res.code \"x\" is not a number"),
            ),
        ];
        check_rows(&parser, rows);
        assert_eq!(parser.resolution_ns(), 1_000_000);
    }

    #[test]
    fn a_mapped_query_joins_a_target_without_one() {
        let parser = JsonLines::new(Keys::parse("query=args").expect("the mapping parses"));
        let rows: &[(&str, Want)] = &[
            (
                r#"{"ts":1709294400,"path":"/a","args":"b=1"}"#,
                Ok(Some((T, "GET", "/a?b=1", None, None, None, None, None))),
            ),
            (
                r#"{"ts":1709294400,"url":"/a?x=2","args":"b=1"}"#,
                Ok(Some((T, "GET", "/a?x=2", None, None, None, None, None))),
            ),
        ];
        check_rows(&parser, rows);
    }
}
