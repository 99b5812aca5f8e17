//! A HAR recording as a log: its entries as [`LoggedRequest`]s in time order, and
//! [`HarFormat`], the [`LineParser`] a caller returns to have a file read this way.
//!
//! A HAR file is one JSON document, not lines, and small: it is read whole, with the
//! HAR import's reader (`crate::har`, the checks and messages of `encode -from har`).

use std::borrow::Cow;

use super::{LineParser, LoggedRequest};
use crate::WorkloadError;

/// The format name that has [`super::LogStream`] read a file whole as HAR.
pub(crate) const HAR_FORMAT: &str = "har";

/// The `har` format: returned by a caller's format choice for a HAR file, it has the
/// log stream read the file whole rather than by line.
#[derive(Debug, Clone, Copy, Default)]
pub struct HarFormat;

impl LineParser for HarFormat {
    /// Never called by the log stream, which reads a HAR file whole.
    fn parse_line(&self, _line: &str) -> Result<Option<LoggedRequest>, String> {
        Err("a HAR file is read whole, not by line".to_owned())
    }

    /// HAR's `startedDateTime` has milliseconds.
    fn resolution_ns(&self) -> u64 {
        1_000_000
    }

    fn name(&self) -> String {
        HAR_FORMAT.to_owned()
    }
}

/// A HAR file's HTTP entries (a browser's own URLs, `data:` and the like, left out)
/// in time order. `line` is the entry's place among them, 1-based.
pub(crate) fn read(bytes: &[u8], source_name: &str) -> Result<Vec<LoggedRequest>, WorkloadError> {
    let text = std::str::from_utf8(bytes).map_err(|err| WorkloadError::Target {
        source_name: source_name.to_owned(),
        line: 1 + bytes[..err.valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count() as u64,
        reason: "not UTF-8 text (a HAR file is JSON)".to_owned(),
    })?;
    let mut requests: Vec<LoggedRequest> = crate::har::read_entries(text, source_name)?
        .into_iter()
        .zip(1..)
        .map(|(entry, line)| LoggedRequest {
            time_unix_ns: ms_to_ns(entry.started_ms),
            host: header(&entry.headers, "host")
                .or_else(|| header(&entry.headers, ":authority"))
                .or_else(|| host_of(&entry.url)),
            user_agent: header(&entry.headers, "user-agent"),
            method: entry.method.into_owned(),
            target: entry.url.to_string(),
            status: (entry.status != 0).then_some(entry.status),
            bytes: entry.body_size,
            latency_ns: Some(ms_to_ns(entry.time_ms)),
            line,
            put_back_ns: 0,
        })
        .collect();
    // HAR orders entries by start "usually"; a stable sort keeps ties in file order.
    requests.sort_by_key(|request| request.time_unix_ns);
    Ok(requests)
}

/// A header's value, by case-insensitive name.
fn header(headers: &[(Cow<'_, str>, Cow<'_, str>)], name: &str) -> Option<String> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, value)| value.as_ref().to_owned())
}

/// `host` or `host:port` of a URL, as a `Host` header would say it.
fn host_of(url: &url::Url) -> Option<String> {
    let host = url.host_str()?;
    Some(match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    })
}

/// Milliseconds (HAR's unit, a float) as nanoseconds; before 1970 is 0. The whole
/// milliseconds and the fraction go apart: their product with 10^6 is past f64's
/// precision.
fn ms_to_ns(ms: f64) -> u64 {
    let whole_ms = ms.floor();
    // `as` saturates: negative and NaN become 0.
    let fraction_ns = ((ms - whole_ms) * 1_000_000.0).round() as u64;
    (whole_ms as u64)
        .saturating_mul(1_000_000)
        .saturating_add(fraction_ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn har(entries: &str) -> String {
        format!(r#"{{"log": {{"version": "1.2", "entries": [{entries}]}}}}"#)
    }

    fn entry(started: &str, method: &str, url: &str, status: u16, headers: &str) -> String {
        format!(
            r#"{{"startedDateTime": "{started}", "time": 12.5,
                "request": {{"method": "{method}", "url": "{url}", "headers": [{headers}]}},
                "response": {{"status": {status}, "bodySize": 321}}}}"#
        )
    }

    #[test]
    fn reads_entries_in_time_order() {
        let text = har(&[
            entry(
                "2026-11-24T10:00:01.000Z",
                "POST",
                "https://api.example.com:8443/orders?x=1#top",
                201,
                r#"{"name": "User-Agent", "value": "curl/8"}"#,
            ),
            entry(
                "2026-11-24T10:00:00.500Z",
                "GET",
                "data:text/plain,hi",
                200,
                "",
            ),
            entry(
                "2026-11-24T10:00:00.250Z",
                "GET",
                "https://example.com/",
                0,
                r#"{"name": "Host", "value": "front.example.com"}"#,
            ),
        ]
        .join(","));
        let requests = read(text.as_bytes(), "s.har").unwrap();
        assert_eq!(requests.len(), 2, "{requests:?}");
        let (first, second) = (&requests[0], &requests[1]);
        assert_eq!(first.time_unix_ns, 1_795_514_400_250_000_000);
        assert_eq!(first.host.as_deref(), Some("front.example.com"));
        assert_eq!(first.status, None, "status 0 is no answer");
        assert_eq!(first.line, 2);
        assert_eq!(second.method, "POST");
        assert_eq!(second.target, "https://api.example.com:8443/orders?x=1");
        assert_eq!(second.host.as_deref(), Some("api.example.com:8443"));
        assert_eq!(second.user_agent.as_deref(), Some("curl/8"));
        assert_eq!(second.status, Some(201));
        assert_eq!(second.bytes, Some(321));
        assert_eq!(second.latency_ns, Some(12_500_000));
        assert_eq!(second.line, 1);
    }

    #[test]
    fn refuses_bad_har_naming_file_and_field() {
        let rows: Vec<(Vec<u8>, &str)> = vec![
            (
                b"{\"log\": {\"entries\": []}}".to_vec(),
                "s.har:1: log.entries: no entries",
            ),
            (b"{\"log\": ".to_vec(), "s.har:1:8: the JSON ends early"),
            (b"{\"log\": \xff}".to_vec(), "s.har:1: not UTF-8"),
            (
                har(&entry("yesterday", "GET", "http://a/", 200, "")).into_bytes(),
                "s.har:1: log.entries[0].startedDateTime: \"yesterday\" is not",
            ),
        ];
        for (text, want) in &rows {
            let err = read(text, "s.har").unwrap_err().to_string();
            assert!(err.starts_with(want), "{err}\nwant: {want}");
        }
    }

    #[test]
    fn har_format_is_named_har() {
        assert_eq!(HarFormat.name(), "har");
        assert!(HarFormat.parse_line("{}").is_err());
    }
}
