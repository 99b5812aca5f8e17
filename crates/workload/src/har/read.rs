//! Reading a HAR 1.2 file into [`Entry`]s: only the fields the import uses, each
//! checked, every error naming the file, the line and the field
//! (`session.har:42: log.entries[3].request.url: ...`).
//!
//! Required (the import cannot do without them): `log.entries[]`, and in each entry
//! `startedDateTime`, `time`, `request.method`, `request.url`, `response.status`.
//! Optional: headers, `postData`, `response.content` (tools leave them out when empty),
//! and Chrome's `_resourceType` and `_fromCache`.

use base64::Engine as _;
use serde_json::{Map, Value};
use url::Url;

use super::locate::{JsonPath, line_of};
use super::sniff;
use crate::WorkloadError;

/// One request and its answer, as recorded.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    /// When the request started, in milliseconds since the Unix epoch.
    pub started_ms: f64,
    /// How long the exchange took, in milliseconds (HAR's `time`).
    pub time_ms: f64,
    pub method: String,
    /// Without its fragment (`#...`), which is never sent.
    pub url: Url,
    pub headers: Vec<(String, String)>,
    pub body: Option<String>,
    /// `postData.mimeType`, for a body whose headers lack a `Content-Type`.
    pub body_mime: Option<String>,
    /// 0 when the browser got no answer (blocked, cancelled).
    pub status: u16,
    pub response_headers: Vec<(String, String)>,
    /// `response.content.mimeType` without its parameters, lowercase.
    pub response_mime: String,
    /// The answer's body when it was recorded and is text.
    pub response_text: Option<String>,
    /// `response.bodySize`, bytes, when known (HAR writes -1 when not).
    pub body_size: Option<u64>,
    /// Chrome's `_resourceType` (`script`, `image`, `xhr`, ...).
    pub resource_type: Option<String>,
    /// Chrome's `_fromCache`: served by the browser's cache, not the network.
    pub from_cache: bool,
    /// Cookie names the request sent and the answer set (`request.cookies`,
    /// `response.cookies`, besides the `Cookie` and `Set-Cookie` headers).
    pub sent_cookies: Vec<String>,
    pub set_cookies: Vec<String>,
}

/// A HAR file's entries, with what was left out while reading.
#[derive(Debug, Default)]
pub(crate) struct Har {
    /// `log.creator.name` and `version`, for the flow's header comment.
    pub creator: Option<String>,
    pub entries: Vec<Entry>,
    /// Entries whose URL is a browser's own (`data:`, `blob:`, `ws:`, extensions):
    /// their schemes, one per entry.
    pub other_schemes: Vec<String>,
}

/// URL schemes a browser records beside HTTP that no HTTP load test can send: left
/// out (and counted) rather than refused, or every recording of a page with a
/// WebSocket or an inline image would be.
const BROWSER_SCHEMES: &[&str] = &[
    "data",
    "blob",
    "ws",
    "wss",
    "about",
    "chrome",
    "chrome-extension",
    "moz-extension",
    "safari-extension",
    "edge",
];

/// How deep serde_json reads nested arrays and objects before it gives up (its
/// recursion limit); a HAR file is about eight levels deep.
const MAX_JSON_DEPTH: usize = 128;

/// The input's name and text, for errors that name a line.
pub(crate) struct Source<'a> {
    pub name: &'a str,
    pub text: &'a str,
}

impl Source<'_> {
    /// An error about the field at `path`.
    pub fn fail(&self, path: &JsonPath, reason: impl Into<String>) -> WorkloadError {
        let line = line_of(self.text, path);
        let label = if path.0.is_empty() {
            format!("{}:{line}", self.name)
        } else {
            format!("{}:{line}: {path}", self.name)
        };
        WorkloadError::Field {
            label,
            reason: reason.into(),
        }
    }

    /// Parses the whole text as a HAR file.
    pub fn read(&self) -> Result<Har, WorkloadError> {
        let root = self.parse_json()?;
        let log = self.log(&root)?;
        let log_path = JsonPath::default().key("log");
        let entries_path = log_path.key("entries");
        let list = match log.get("entries") {
            Some(Value::Array(list)) => list,
            Some(other) => return Err(self.fail(&entries_path, wrong_type("an array", other))),
            None => {
                return Err(self.fail(
                    &entries_path,
                    "missing: a HAR log lists its requests in \"entries\"",
                ));
            }
        };
        if list.is_empty() {
            return Err(self.fail(&entries_path, "no entries: the recording holds no request"));
        }
        let mut har = Har {
            creator: creator(log),
            ..Har::default()
        };
        for (index, value) in list.iter().enumerate() {
            match self.entry(value, &entries_path.index(index))? {
                Ok(entry) => har.entries.push(entry),
                Err(scheme) => har.other_schemes.push(scheme),
            }
        }
        Ok(har)
    }

    /// The text as JSON, or an error saying where it breaks and what it looks like.
    fn parse_json(&self) -> Result<Value, WorkloadError> {
        serde_json::from_str(self.text).map_err(|err| {
            let reason = match (err.classify(), sniff::describe_text(self.text)) {
                (serde_json::error::Category::Eof, _) if !self.text.trim().is_empty() => {
                    format!("the JSON ends early (a truncated file?): {}", message(&err))
                }
                // Before the sniffing: `[[[[...` would read as TOML's `[[scenario]]`.
                _ if message(&err) == "recursion limit exceeded" => format!(
                    "not JSON: nested deeper than {MAX_JSON_DEPTH} levels (serde_json's limit), \
                     not a HAR file"
                ),
                (_, Some(looks_like)) => {
                    format!("not JSON: this looks like {looks_like}, not a HAR file")
                }
                _ => format!("not JSON: {}", message(&err)),
            };
            WorkloadError::Field {
                label: format!("{}:{}:{}", self.name, err.line(), err.column()),
                reason,
            }
        })
    }

    /// `log`, or an error saying what the document looks like instead.
    fn log<'v>(&self, root: &'v Value) -> Result<&'v Map<String, Value>, WorkloadError> {
        let path = JsonPath::default().key("log");
        match root.get("log") {
            Some(Value::Object(log)) => Ok(log),
            Some(other) => Err(self.fail(&path, wrong_type("an object", other))),
            None => Err(self.fail(
                &JsonPath::default(),
                format!(
                    "not a HAR file: this looks like {}; a HAR file is a JSON object whose \
                     \"log\" holds \"entries\" (a browser saves one from its developer tools: \
                     Network tab, \"Save all as HAR\")",
                    sniff::describe_json(root)
                ),
            )),
        }
    }

    /// One entry; `Err(scheme)` inside when its URL is a browser's own.
    fn entry(
        &self,
        value: &Value,
        path: &JsonPath,
    ) -> Result<Result<Entry, String>, WorkloadError> {
        let object = self.object(value, path)?;
        let request_path = path.key("request");
        let request = self.object(self.member(object, path, "request")?, &request_path)?;
        let url_path = request_path.key("url");
        let url_text = self.text(self.member(request, &request_path, "url")?, &url_path)?;
        let url = match self.url(url_text, &url_path)? {
            Ok(url) => url,
            Err(scheme) => return Ok(Err(scheme)),
        };
        let method_path = request_path.key("method");
        let method = self.text(self.member(request, &request_path, "method")?, &method_path)?;
        crate::target::check_method(method).map_err(|reason| self.fail(&method_path, reason))?;
        let response_path = path.key("response");
        let response = self.object(self.member(object, path, "response")?, &response_path)?;
        let started_path = path.key("startedDateTime");
        let started = self.text(self.member(object, path, "startedDateTime")?, &started_path)?;
        let started_ms = parse_timestamp_ms(started).ok_or_else(|| {
            self.fail(
                &started_path,
                format!(
                    "{started:?} is not an ISO 8601 date and time (like 2024-05-01T10:00:00.123Z)"
                ),
            )
        })?;
        let time_ms = self.number(self.member(object, path, "time")?, &path.key("time"))?;
        let (body, body_mime) = self.post_data(request, &request_path)?;
        let content = self.content(response, &response_path)?;
        Ok(Ok(Entry {
            started_ms,
            time_ms: time_ms.max(0.0),
            method: method.to_owned(),
            url,
            headers: self.headers(request, &request_path, true)?,
            body,
            body_mime,
            status: self.status(response, &response_path)?,
            response_headers: self.headers(response, &response_path, false)?,
            response_mime: content.0,
            response_text: content.1,
            body_size: response
                .get("bodySize")
                .and_then(Value::as_f64)
                .filter(|size| *size >= 0.0)
                .map(|size| size as u64),
            resource_type: object
                .get("_resourceType")
                .and_then(Value::as_str)
                .map(str::to_owned),
            from_cache: from_cache(object),
            sent_cookies: cookie_names(request),
            set_cookies: cookie_names(response),
        }))
    }

    /// An http(s) URL without its fragment; `Err(scheme)` inside for a browser's own.
    fn url(&self, text: &str, path: &JsonPath) -> Result<Result<Url, String>, WorkloadError> {
        let scheme = text
            .split(':')
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase();
        if text.contains(':') && BROWSER_SCHEMES.contains(&scheme.as_str()) {
            return Ok(Err(scheme));
        }
        let shown = units::redact_url(text);
        let mut url = Url::parse(text)
            .map_err(|err| self.fail(path, format!("{shown:?} is not a URL ({err})")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(self.fail(path, format!("{shown:?} is not an http or https URL")));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(self.fail(path, format!("{shown:?} has no host")));
        }
        url.set_fragment(None);
        Ok(Ok(url))
    }

    fn status(&self, response: &Map<String, Value>, path: &JsonPath) -> Result<u16, WorkloadError> {
        let status_path = path.key("status");
        let status = self.number(self.member(response, path, "status")?, &status_path)?;
        if status.fract() != 0.0 || !(0.0..=999.0).contains(&status) {
            return Err(self.fail(&status_path, format!("{status} is not an HTTP status")));
        }
        Ok(status as u16)
    }

    /// `headers`: absent means none; present, each must be `{name, value}` strings,
    /// and a request's must be sendable (a token for a name, no line break in a value;
    /// HTTP/2 pseudo headers are dropped later, whatever they hold).
    fn headers(
        &self,
        object: &Map<String, Value>,
        path: &JsonPath,
        request: bool,
    ) -> Result<Vec<(String, String)>, WorkloadError> {
        let headers_path = path.key("headers");
        let list = match object.get("headers") {
            None | Some(Value::Null) => return Ok(Vec::new()),
            Some(Value::Array(list)) => list,
            Some(other) => return Err(self.fail(&headers_path, wrong_type("an array", other))),
        };
        let mut headers = Vec::with_capacity(list.len());
        for (i, header) in list.iter().enumerate() {
            let at = headers_path.index(i);
            let header = self.object(header, &at)?;
            let name = self.text(self.member(header, &at, "name")?, &at.key("name"))?;
            let value = self.text(self.member(header, &at, "value")?, &at.key("value"))?;
            if request && !name.starts_with(':') {
                crate::target::check_header(name, value)
                    .map_err(|reason| self.fail(&at, reason))?;
            }
            headers.push((name.to_owned(), value.to_owned()));
        }
        Ok(headers)
    }

    /// `postData`: its text, or a form rebuilt from its `params` when the tool left
    /// the text out; and its MIME type.
    fn post_data(
        &self,
        request: &Map<String, Value>,
        path: &JsonPath,
    ) -> Result<(Option<String>, Option<String>), WorkloadError> {
        let post_path = path.key("postData");
        let post = match request.get("postData") {
            None | Some(Value::Null) => return Ok((None, None)),
            Some(value) => self.object(value, &post_path)?,
        };
        let mime = match post.get("mimeType") {
            None | Some(Value::Null) => None,
            Some(value) => Some(self.text(value, &post_path.key("mimeType"))?.to_owned()),
        };
        let text = match post.get("text") {
            None | Some(Value::Null) => form_from_params(post),
            Some(value) => Some(self.text(value, &post_path.key("text"))?.to_owned()),
        };
        Ok((text.filter(|t| !t.is_empty()), mime))
    }

    /// `response.content`: the MIME type (lowercase, no parameters) and the body when
    /// it is text (base64 bodies decoded).
    fn content(
        &self,
        response: &Map<String, Value>,
        path: &JsonPath,
    ) -> Result<(String, Option<String>), WorkloadError> {
        let content_path = path.key("content");
        let content = match response.get("content") {
            None | Some(Value::Null) => return Ok((String::new(), None)),
            Some(value) => self.object(value, &content_path)?,
        };
        let mime = match content.get("mimeType") {
            Some(Value::String(mime)) => bare_mime(mime),
            _ => String::new(),
        };
        let text = match content.get("text") {
            Some(Value::String(text)) => Some(text.as_str()),
            _ => None,
        };
        let base64 = content.get("encoding").and_then(Value::as_str) == Some("base64");
        let text = match (text, base64) {
            (Some(text), true) => base64::engine::general_purpose::STANDARD
                .decode(text.trim())
                .ok()
                .and_then(|bytes| String::from_utf8(bytes).ok()),
            (text, false) => text.map(str::to_owned),
            (None, true) => None,
        };
        Ok((mime, text))
    }

    fn member<'v>(
        &self,
        object: &'v Map<String, Value>,
        path: &JsonPath,
        key: &str,
    ) -> Result<&'v Value, WorkloadError> {
        object
            .get(key)
            .ok_or_else(|| self.fail(&path.key(key), "missing"))
    }

    fn object<'v>(
        &self,
        value: &'v Value,
        path: &JsonPath,
    ) -> Result<&'v Map<String, Value>, WorkloadError> {
        value
            .as_object()
            .ok_or_else(|| self.fail(path, wrong_type("an object", value)))
    }

    fn text<'v>(&self, value: &'v Value, path: &JsonPath) -> Result<&'v str, WorkloadError> {
        value
            .as_str()
            .ok_or_else(|| self.fail(path, wrong_type("a string", value)))
    }

    fn number(&self, value: &Value, path: &JsonPath) -> Result<f64, WorkloadError> {
        value
            .as_f64()
            .ok_or_else(|| self.fail(path, wrong_type("a number", value)))
    }
}

/// serde_json's message without its " at line L column C" (the label has them).
fn message(err: &serde_json::Error) -> String {
    let text = err.to_string();
    match text.rfind(" at line ") {
        Some(at) => text[..at].to_owned(),
        None => text,
    }
}

fn wrong_type(want: &str, found: &Value) -> String {
    let found = match found {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) if s.chars().count() <= 40 => format!("{s:?}"),
        Value::String(_) => "a string".to_owned(),
        Value::Array(_) => "an array".to_owned(),
        Value::Object(_) => "an object".to_owned(),
    };
    format!("expected {want}, found {found}")
}

fn creator(log: &Map<String, Value>) -> Option<String> {
    let creator = log.get("creator")?;
    let name = creator.get("name")?.as_str()?;
    Some(match creator.get("version").and_then(Value::as_str) {
        Some(version) if !version.is_empty() => format!("{name} {version}"),
        _ => name.to_owned(),
    })
}

/// Chrome writes `"_fromCache": "memory"` or `"disk"`.
fn from_cache(entry: &Map<String, Value>) -> bool {
    match entry.get("_fromCache") {
        Some(Value::String(place)) => !place.is_empty(),
        Some(Value::Bool(yes)) => *yes,
        _ => false,
    }
}

/// The names in a request's or response's `cookies` array.
fn cookie_names(object: &Map<String, Value>) -> Vec<String> {
    let Some(Value::Array(cookies)) = object.get("cookies") else {
        return Vec::new();
    };
    cookies
        .iter()
        .filter_map(|c| c.get("name")?.as_str())
        .map(str::to_owned)
        .collect()
}

/// `name=value&...` from `postData.params`, for tools that record a form that way.
fn form_from_params(post: &Map<String, Value>) -> Option<String> {
    let params = post.get("params")?.as_array()?;
    let pairs: Vec<String> = params
        .iter()
        .filter_map(|p| {
            let name = p.get("name")?.as_str()?;
            let value = p.get("value").and_then(Value::as_str).unwrap_or_default();
            Some(format!("{name}={value}"))
        })
        .collect();
    (!pairs.is_empty()).then(|| pairs.join("&"))
}

/// `application/json; charset=utf-8` -> `application/json`.
pub(super) fn bare_mime(mime: &str) -> String {
    mime.split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

/// An ISO 8601 date and time (`2024-05-01T10:00:00.123+02:00`, `Z`, or no zone as
/// UTC) as milliseconds since the Unix epoch. Only differences between entries are
/// used, so a missing zone does no harm.
pub(super) fn parse_timestamp_ms(text: &str) -> Option<f64> {
    let (date, time) = text.split_once(['T', 't', ' '])?;
    let mut date_parts = date.splitn(3, '-');
    let year: i64 = digits(date_parts.next()?, 4)?;
    let month: i64 = digits(date_parts.next()?, 2)?;
    let day: i64 = digits(date_parts.next()?, 2)?;
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    let zone_at = time.find(['Z', 'z', '+', '-']).unwrap_or(time.len());
    let (clock, zone) = time.split_at(zone_at);
    let offset_minutes = zone_offset_minutes(zone)?;
    let mut clock_parts = clock.splitn(3, ':');
    let hour: i64 = digits(clock_parts.next()?, 2)?;
    let minute: i64 = digits(clock_parts.next()?, 2)?;
    let seconds_text = clock_parts.next()?;
    let (whole, fraction) = seconds_text.split_once('.').unwrap_or((seconds_text, ""));
    let second: i64 = digits(whole, 2)?;
    if hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let fraction_ms = if fraction.is_empty() {
        0.0
    } else if fraction.bytes().all(|b| b.is_ascii_digit()) {
        format!("0.{fraction}").parse::<f64>().ok()? * 1000.0
    } else {
        return None;
    };
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset_minutes * 60;
    Some(seconds as f64 * 1000.0 + fraction_ms)
}

/// Exactly `count` ASCII digits.
fn digits(text: &str, count: usize) -> Option<i64> {
    (text.len() == count && text.bytes().all(|b| b.is_ascii_digit()))
        .then(|| text.parse().ok())
        .flatten()
}

/// `""` and `Z`: 0; `+02:00`, `-0530`, `+02`: the offset in minutes.
fn zone_offset_minutes(zone: &str) -> Option<i64> {
    if zone.is_empty() || zone.eq_ignore_ascii_case("z") {
        return Some(0);
    }
    let sign = if zone.starts_with('-') { -1 } else { 1 };
    let rest = zone[1..].replace(':', "");
    let (hours, minutes) = match rest.len() {
        2 => (digits(&rest, 2)?, 0),
        4 => (digits(&rest[..2], 2)?, digits(&rest[2..], 2)?),
        _ => return None,
    };
    Some(sign * (hours * 60 + minutes))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let shifted_month = (month + 9) % 12;
    let day_of_year = (153 * shifted_month + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_timestamps() {
        let rows: &[(&str, Option<f64>)] = &[
            ("1970-01-01T00:00:00Z", Some(0.0)),
            ("1970-01-01T00:00:01.5Z", Some(1500.0)),
            ("1970-01-01T01:00:00+01:00", Some(0.0)),
            ("1970-01-01T00:00:00-0030", Some(1_800_000.0)),
            ("1970-01-01T00:00:00.123", Some(123.0)),
            ("2000-03-01T00:00:00Z", Some(951_868_800_000.0)),
            ("2024-05-01T10:00:00.123456+02", Some(1_714_550_400_123.456)),
            ("2024-05-01 10:00:00Z", Some(1_714_557_600_000.0)),
            ("2024-13-01T10:00:00Z", None),
            ("2024-05-01T25:00:00Z", None),
            ("2024-05-01", None),
            ("yesterday", None),
            ("2024-05-01T10:00:00.12a", None),
            ("2024-05-01T10:00:00+1", None),
            ("", None),
        ];
        for (text, want) in rows {
            let got = parse_timestamp_ms(text);
            match (got, want) {
                (Some(got), Some(want)) => assert!((got - want).abs() < 0.01, "{text}: {got}"),
                _ => assert_eq!(got, *want, "{text}"),
            }
        }
    }

    #[test]
    fn strips_mime_parameters() {
        assert_eq!(
            bare_mime("Application/JSON; charset=utf-8"),
            "application/json"
        );
        assert_eq!(bare_mime(""), "");
    }
}
