//! AWS load balancer access logs, space-separated with the request and user agent in
//! quotes: [`Alb`] (Application Load Balancer: `type time elb client:port target:port
//! request_processing_time target_processing_time response_processing_time
//! elb_status_code target_status_code received_bytes sent_bytes "request"
//! "user_agent" ... request_creation_time ...`) and [`Elb`] (Classic Load Balancer:
//! `timestamp elb client:port backend:port` and the same times, codes, bytes, request
//! and user agent). Both log absolute URLs (`http://host:80/path`), kept as they are.

use super::fields::{Fields, count, quoted, seconds_ns, status, trim_end};
use super::request_line::{authority, logged_text, request};
use super::timestamps::iso8601_ns;
use crate::{LineParser, LoggedRequest};

/// Application Load Balancer entries. `time` is when the response was sent;
/// `request_creation_time` (field 22) when the request arrived, used when present.
pub(super) struct Alb;

/// Classic Load Balancer entries; `timestamp` is when the request arrived.
pub(super) struct Elb;

const ALB_TYPES: [&[u8]; 6] = [b"http", b"https", b"h2", b"grpcs", b"ws", b"wss"];

/// The first `N` fields of a line, and how many it had.
fn split<const N: usize>(line: &[u8]) -> ([&[u8]; N], usize) {
    let mut fields = [&[][..]; N];
    let mut found = 0;
    for (slot, field) in fields.iter_mut().zip(Fields::new(line)) {
        *slot = field;
        found += 1;
    }
    (fields, found)
}

/// An ISO 8601 field, its error naming it.
fn time_ns(text: &[u8], field: &str) -> Result<u64, String> {
    iso8601_ns(text)
        .map(|(ns, _)| ns)
        .map_err(|_| format!("{field} {} is not an ISO 8601 time", quoted(text)))
}

/// The load balancer's three processing times summed; `None` when one is `-1` (the
/// request never reached a target, or the connection closed early).
fn latency_ns(times: &[&[u8]], names: [&str; 3]) -> Result<Option<u64>, String> {
    let mut total_ns = 0u64;
    for (text, name) in times.iter().zip(names) {
        if *text == b"-1" {
            return Ok(None);
        }
        let ns = seconds_ns(text, name)?.unwrap_or(0);
        total_ns = total_ns.saturating_add(ns);
    }
    Ok(Some(total_ns))
}

/// The request and what follows it, shared by both layouts: `fields` starts at
/// `elb_status_code`.
fn entry(
    time_unix_ns: u64,
    fields: &[&[u8]],
    latency_ns: Option<u64>,
) -> Result<LoggedRequest, String> {
    let [elb_status, _, _, sent, request_line, user_agent, ..] = fields else {
        return Err("entry ends before its request".to_owned());
    };
    let (method, target) = request(request_line)?;
    Ok(LoggedRequest {
        time_unix_ns,
        method,
        host: authority(&target),
        target,
        status: status(elb_status)?,
        bytes: count(sent, "sent_bytes")?,
        user_agent: logged_text(user_agent),
        latency_ns,
        line: 0,
        put_back_ns: 0,
    })
}

impl LineParser for Alb {
    fn parse_line(&self, line: &str) -> Result<Option<LoggedRequest>, String> {
        let line = trim_end(line);
        if line.is_empty() {
            return Ok(None);
        }
        let (f, found) = split::<22>(line);
        if !ALB_TYPES.contains(&f[0]) {
            return Err(format!("type {} is not an ALB entry type", quoted(f[0])));
        }
        if found < 14 {
            return Err(format!("{found} fields, an ALB entry has at least 14"));
        }
        let names = [
            "request_processing_time",
            "target_processing_time",
            "response_processing_time",
        ];
        let latency_ns = latency_ns(&f[5..8], names)?;
        let arrival_ns = if found > 21 && f[21] != b"-" {
            time_ns(f[21], "request_creation_time")?
        } else {
            time_ns(f[1], "time")?.saturating_sub(latency_ns.unwrap_or(0))
        };
        entry(arrival_ns, &f[8..found.min(14)], latency_ns).map(Some)
    }

    fn resolution_ns(&self) -> u64 {
        1_000
    }

    fn name(&self) -> String {
        "alb".to_owned()
    }
}

impl LineParser for Elb {
    fn parse_line(&self, line: &str) -> Result<Option<LoggedRequest>, String> {
        let line = trim_end(line);
        if line.is_empty() {
            return Ok(None);
        }
        let (f, found) = split::<13>(line);
        let arrival_ns = time_ns(f[0], "timestamp")?;
        if found < 12 {
            return Err(format!(
                "{found} fields, a Classic ELB entry has at least 12"
            ));
        }
        let names = [
            "request_processing_time",
            "backend_processing_time",
            "response_processing_time",
        ];
        let latency_ns = latency_ns(&f[4..7], names)?;
        let mut f = f;
        if found == 12 {
            // An entry from before user agents were logged.
            f[12] = b"-";
        }
        entry(arrival_ns, &f[7..13], latency_ns).map(Some)
    }

    fn resolution_ns(&self) -> u64 {
        1_000
    }

    fn name(&self) -> String {
        "elb".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{Want, check_rows};
    use super::*;

    const ALB: &str = r#"https 2018-07-02T22:23:00.186641Z app/my-loadbalancer/50dc6c495c0c9188 198.51.100.39:2817 203.0.113.1:80 0.086 0.048 0.037 200 200 0 57 "GET https://www.example.com:443/a?b=1 HTTP/1.1" "curl/7.46.0" ECDHE-RSA-AES128-GCM-SHA256 TLSv1.2 arn:aws:elasticloadbalancing:us-east-2:123456789012:targetgroup/my-targets/73e2d6bc24d8a067 "Root=1-58337281-1d84f3d73c47ec4e58577259" "www.example.com" "arn:aws:acm:us-east-2:123456789012:certificate/12345678-1234-1234-1234-123456789012" 1 2018-07-02T22:22:48.364000Z "authenticate,forward" "-" "-" "203.0.113.1:80" "200" "-" "-""#;

    #[test]
    fn alb_entries() {
        let no_target = r#"http 2018-07-02T22:23:00.186641Z app/lb/50dc 198.51.100.39:2817 - -1 -1 -1 502 - 34 366 "GET http://www.example.com:80/ HTTP/1.1" "Mozilla/5.0 (X11)" - -"#;
        let rows: &[(&str, Want)] = &[
            (
                ALB,
                Ok(Some((
                    1_530_570_168_364_000_000,
                    "GET",
                    "https://www.example.com:443/a?b=1",
                    Some("www.example.com"),
                    Some(200),
                    Some(57),
                    Some("curl/7.46.0"),
                    Some(171_000_000),
                ))),
            ),
            (
                no_target,
                Ok(Some((
                    1_530_570_180_186_641_000,
                    "GET",
                    "http://www.example.com:80/",
                    Some("www.example.com"),
                    Some(502),
                    Some(366),
                    Some("Mozilla/5.0 (X11)"),
                    None,
                ))),
            ),
            ("", Ok(None)),
            (
                "tcp 2018-07-02T22:23:00Z x",
                Err("type \"tcp\" is not an ALB entry type"),
            ),
            (
                "http 2018-07-02T22:23:00Z x y",
                Err("4 fields, an ALB entry has at least 14"),
            ),
            (
                &no_target.replace("2018-07-02T22:23:00.186641Z", "yesterday"),
                Err("time \"yesterday\" is not an ISO 8601 time"),
            ),
            (
                &no_target.replace(" 502 ", " 5x2 "),
                Err("status \"5x2\" is not a number"),
            ),
            (
                &no_target.replace(" 366 ", " lots "),
                Err("sent_bytes \"lots\" is not a number"),
            ),
            (
                &ALB.replace("0.086", "fast"),
                Err("request_processing_time \"fast\" is not a number of seconds"),
            ),
            (
                &ALB.replace("2018-07-02T22:22:48.364000Z", "soon"),
                Err("request_creation_time \"soon\" is not an ISO 8601 time"),
            ),
            (
                &no_target.replace("GET http://www.example.com:80/ HTTP/1.1", "- - - "),
                Err("request \"- - - \" is not METHOD URI PROTOCOL"),
            ),
        ];
        check_rows(&Alb, rows);
    }

    #[test]
    fn elb_entries() {
        let line = r#"2015-05-13T23:39:43.945958Z my-loadbalancer 198.51.100.39:2817 203.0.113.1:80 0.000086 0.001048 0.001337 200 200 0 57 "GET https://www.example.com:443/ HTTP/1.1" "curl/7.38.0" DHE-RSA-AES128-SHA TLSv1.2"#;
        let old = r#"2014-10-08T00:20:22.223Z lb 189.164.112.148:24586 203.0.113.76:6081 0.00005 0.2 0.00003 404 404 0 922 "post http://api.example.com:8080/v1/x HTTP/1.1""#;
        let rows: &[(&str, Want)] = &[
            (
                line,
                Ok(Some((
                    1_431_560_383_945_958_000,
                    "GET",
                    "https://www.example.com:443/",
                    Some("www.example.com"),
                    Some(200),
                    Some(57),
                    Some("curl/7.38.0"),
                    Some(2_471_000),
                ))),
            ),
            (
                old,
                Ok(Some((
                    1_412_727_622_223_000_000,
                    "POST",
                    "http://api.example.com:8080/v1/x",
                    Some("api.example.com:8080"),
                    Some(404),
                    Some(922),
                    None,
                    Some(200_080_000),
                ))),
            ),
            (
                "not an entry",
                Err("timestamp \"not\" is not an ISO 8601 time"),
            ),
            (
                "2015-05-13T23:39:43.945958Z lb a b",
                Err("4 fields, a Classic ELB entry has at least 12"),
            ),
            (
                &line.replace(" 200 200 ", " - - "),
                Ok(Some((
                    1_431_560_383_945_958_000,
                    "GET",
                    "https://www.example.com:443/",
                    Some("www.example.com"),
                    None,
                    Some(57),
                    Some("curl/7.38.0"),
                    Some(2_471_000),
                ))),
            ),
            (
                &line.replace("GET https", "BREW https"),
                Err("method \"BREW\" is not an HTTP method"),
            ),
        ];
        check_rows(&Elb, rows);
    }
}
