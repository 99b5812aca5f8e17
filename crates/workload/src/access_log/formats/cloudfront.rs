//! [`CloudFront`] standard (legacy) access logs: tab-separated, `#Version` and
//! `#Fields` header lines. The `#Fields` line places the columns when present (a
//! file of fewer or reordered fields), else the standard 33-field order. `date` and
//! `time` (UTC, 1 s) are when the response ended; `time-taken` is taken off them.

use std::cell::Cell;

use super::fields::{count, quoted, seconds_ns, status};
use super::request_line::{logged_text, method, percent_decode, query, target};
use super::timestamps::{NS_PER_S, iso8601_ns};
use crate::{LineParser, LoggedRequest};

/// Where each field we read sits in a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Columns {
    date: Option<usize>,
    time: Option<usize>,
    method: Option<usize>,
    distribution_host: Option<usize>,
    host_header: Option<usize>,
    stem: Option<usize>,
    query: Option<usize>,
    status: Option<usize>,
    bytes: Option<usize>,
    user_agent: Option<usize>,
    time_taken: Option<usize>,
}

/// The standard order of the fields (the documented 33).
const STANDARD: Columns = Columns {
    date: Some(0),
    time: Some(1),
    bytes: Some(3),
    method: Some(5),
    distribution_host: Some(6),
    stem: Some(7),
    status: Some(8),
    user_agent: Some(10),
    query: Some(11),
    host_header: Some(15),
    time_taken: Some(18),
};

impl Columns {
    /// The columns a `#Fields: date time ...` line names.
    fn of_header(names: &str) -> Columns {
        let at = |wanted: &str| names.split_whitespace().position(|name| name == wanted);
        Columns {
            date: at("date"),
            time: at("time"),
            method: at("cs-method"),
            distribution_host: at("cs(Host)"),
            host_header: at("x-host-header"),
            stem: at("cs-uri-stem"),
            query: at("cs-uri-query"),
            status: at("sc-status"),
            bytes: at("sc-bytes"),
            user_agent: at("cs(User-Agent)"),
            time_taken: at("time-taken"),
        }
    }
}

/// The most fields a line is split into.
const MAX_FIELDS: usize = 48;

/// CloudFront's parser; it learns the columns from a `#Fields` line.
pub(super) struct CloudFront {
    columns: Cell<Columns>,
}

impl CloudFront {
    pub(super) fn new() -> Self {
        CloudFront {
            columns: Cell::new(STANDARD),
        }
    }
}

/// One line's fields, each looked up by the column it should be in.
struct Line<'a> {
    fields: [&'a [u8]; MAX_FIELDS],
    found: usize,
}

impl<'a> Line<'a> {
    fn field(&self, column: Option<usize>, name: &str) -> Result<&'a [u8], String> {
        let column = column.ok_or_else(|| format!("the #Fields line has no {name}"))?;
        if column >= self.found {
            return Err(format!(
                "{} fields, {name} is field {}",
                self.found,
                column + 1
            ));
        }
        Ok(self.fields[column])
    }

    /// A field that may be missing from the layout or hold `-`.
    fn optional(&self, column: Option<usize>) -> Option<&'a [u8]> {
        let column = column.filter(|&c| c < self.found)?;
        let field = self.fields[column];
        (field != b"-" && !field.is_empty()).then_some(field)
    }
}

fn end_time_ns(date: &[u8], time: &[u8]) -> Result<u64, String> {
    if date.len() != 10 || time.len() != 8 {
        return Err(format!(
            "date and time {} {} are not YYYY-MM-DD HH:MM:SS",
            quoted(date),
            quoted(time)
        ));
    }
    let mut text = [b'T'; 19];
    text[..10].copy_from_slice(date);
    text[11..].copy_from_slice(time);
    iso8601_ns(&text).map(|(ns, _)| ns).map_err(|_| {
        format!(
            "date and time {} {} are not YYYY-MM-DD HH:MM:SS",
            quoted(date),
            quoted(time)
        )
    })
}

impl LineParser for CloudFront {
    fn parse_line(&self, line: &str) -> Result<Option<LoggedRequest>, String> {
        let line = line.trim_end_matches(['\r', '\n']);
        if let Some(names) = line.strip_prefix("#Fields:") {
            self.columns.set(Columns::of_header(names));
            return Ok(None);
        }
        if line.starts_with('#') || line.trim().is_empty() {
            return Ok(None);
        }
        let mut fields = Line {
            fields: [&[][..]; MAX_FIELDS],
            found: 0,
        };
        for (slot, field) in fields
            .fields
            .iter_mut()
            .zip(line.as_bytes().split(|&b| b == b'\t'))
        {
            *slot = field;
            fields.found += 1;
        }
        if fields.found < 2 {
            return Err("line has no tabs: not a CloudFront log line".to_owned());
        }
        let columns = self.columns.get();
        let end_ns = end_time_ns(
            fields.field(columns.date, "date")?,
            fields.field(columns.time, "time")?,
        )?;
        let latency_ns = match fields.optional(columns.time_taken) {
            Some(text) => seconds_ns(text, "time-taken")?,
            None => None,
        };
        let mut target = target(fields.field(columns.stem, "cs-uri-stem")?)?;
        if let Some(args) = fields.optional(columns.query) {
            target.push('?');
            target.push_str(&query(args)?);
        }
        let host = fields
            .optional(columns.host_header)
            .or_else(|| fields.optional(columns.distribution_host));
        Ok(Some(LoggedRequest {
            time_unix_ns: end_ns.saturating_sub(latency_ns.unwrap_or(0)),
            method: method(fields.field(columns.method, "cs-method")?)?,
            target,
            host: host.and_then(logged_text),
            status: fields
                .optional(columns.status)
                .map(status)
                .transpose()?
                .flatten(),
            bytes: fields
                .optional(columns.bytes)
                .map(|text| count(text, "sc-bytes"))
                .transpose()?
                .flatten(),
            user_agent: fields
                .optional(columns.user_agent)
                .and_then(|text| logged_text(&percent_decode(text))),
            latency_ns,
            line: 0,
            put_back_ns: 0,
        }))
    }

    fn resolution_ns(&self) -> u64 {
        NS_PER_S
    }

    fn name(&self) -> String {
        "cloudfront".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{Want, check_rows};
    use super::*;

    const HEADER: &str = "#Fields: date time x-edge-location sc-bytes c-ip cs-method cs(Host) cs-uri-stem sc-status cs(Referer) cs(User-Agent) cs-uri-query cs(Cookie) x-edge-result-type x-edge-request-id x-host-header cs-protocol cs-bytes time-taken x-forwarded-for ssl-protocol ssl-cipher x-edge-response-result-type cs-protocol-version fle-status fle-encrypted-fields c-port time-to-first-byte x-edge-detailed-result-type sc-content-type sc-content-len sc-range-start sc-range-end";

    fn standard_line(stem: &str, query: &str, status: &str) -> String {
        [
            "2019-12-04",
            "21:02:31",
            "LAX1",
            "392",
            "192.0.2.100",
            "GET",
            "d111111abcdef8.cloudfront.net",
            stem,
            status,
            "-",
            "Mozilla/5.0%20(Windows%20NT%2010.0)",
            query,
            "-",
            "Hit",
            "SOX4xwn4XV6Q4rgb7XiVGOHms_BGlTAC4KyHmureZmBNrjGdRLiNIQ==",
            "www.example.com",
            "https",
            "23",
            "0.250",
            "-",
            "TLSv1.2",
            "ECDHE-RSA-AES128-GCM-SHA256",
            "Hit",
            "HTTP/2.0",
            "-",
            "-",
            "11040",
            "0.001",
            "Hit",
            "text/html",
            "78",
            "-",
            "-",
        ]
        .join("\t")
    }

    #[test]
    fn standard_lines() {
        let rows: &[(&str, Want)] = &[
            ("#Version: 1.0", Ok(None)),
            (HEADER, Ok(None)),
            (
                &standard_line("/index.html", "a=1&b=%C3%A9", "200"),
                Ok(Some((
                    1_575_493_350_750_000_000,
                    "GET",
                    "/index.html?a=1&b=%C3%A9",
                    Some("www.example.com"),
                    Some(200),
                    Some(392),
                    Some("Mozilla/5.0 (Windows NT 10.0)"),
                    Some(250_000_000),
                ))),
            ),
            (
                &standard_line("/", "-", "000"),
                Ok(Some((
                    1_575_493_350_750_000_000,
                    "GET",
                    "/",
                    Some("www.example.com"),
                    None,
                    Some(392),
                    Some("Mozilla/5.0 (Windows NT 10.0)"),
                    Some(250_000_000),
                ))),
            ),
            (
                &standard_line("/", "-", "2xx"),
                Err("status \"2xx\" is not a number"),
            ),
            (
                &standard_line("index.html", "-", "200"),
                Err("uri \"index.html\" is neither a path nor an http(s) URL"),
            ),
            (
                &standard_line("/", "-", "200").replace("2019-12-04", "12/04/2019"),
                Err("date and time \"12/04/2019\" \"21:02:31\" are not YYYY-MM-DD HH:MM:SS"),
            ),
            (
                &standard_line("/", "-", "200").replace("0.250", "slow"),
                Err("time-taken \"slow\" is not a number of seconds"),
            ),
            (
                "2019-12-04\t21:02:31\tLAX1",
                Err("3 fields, cs-uri-stem is field 8"),
            ),
            (
                "a line without tabs",
                Err("line has no tabs: not a CloudFront log line"),
            ),
        ];
        check_rows(&CloudFront::new(), rows);
    }

    #[test]
    fn a_fields_line_places_the_columns() {
        let parser = CloudFront::new();
        let rows: &[(&str, Want)] = &[
            (
                "#Fields: date time cs-method cs-uri-stem sc-status",
                Ok(None),
            ),
            (
                "2019-12-04\t21:02:31\tpost\t/api\t201",
                Ok(Some((
                    1_575_493_351_000_000_000,
                    "POST",
                    "/api",
                    None,
                    Some(201),
                    None,
                    None,
                    None,
                ))),
            ),
            ("#Fields: date cs-uri-stem", Ok(None)),
            ("2019-12-04\t/api", Err("the #Fields line has no time")),
        ];
        check_rows(&parser, rows);
    }
}
