//! Shared table helpers for the formats' tests, and the tests across formats:
//! [`line_parser`] by name, [`sniff`], and random bytes never panicking a parser.

use proptest::prelude::*;

use super::{LOG_FORMATS, line_parser, sniff};
use crate::{LineParser, LoggedRequest};

/// A row's expected request: time, method, target, host, status, bytes, user agent,
/// latency; `Ok(None)` for a skipped line, `Err(reason)` for a bad one.
pub(super) type Want = Result<Option<Fields>, &'static str>;

type Fields = (
    u64,
    &'static str,
    &'static str,
    Option<&'static str>,
    Option<u16>,
    Option<u64>,
    Option<&'static str>,
    Option<u64>,
);

fn expected(fields: Fields) -> LoggedRequest {
    let (time_unix_ns, method, target, host, status, bytes, user_agent, latency_ns) = fields;
    LoggedRequest {
        time_unix_ns,
        method: method.to_owned(),
        target: target.to_owned(),
        host: host.map(str::to_owned),
        status,
        bytes,
        user_agent: user_agent.map(str::to_owned),
        latency_ns,
        line: 0,
        put_back_ns: 0,
    }
}

/// Each row's line through `parser`, in order (a parser may keep state across lines).
pub(super) fn check_rows(parser: &dyn LineParser, rows: &[(&str, Want)]) {
    for (line, want) in rows {
        let want = want
            .map(|fields| fields.map(expected))
            .map_err(str::to_owned);
        assert_eq!(parser.parse_line(line), want, "line: {line}");
    }
}

const NGINX: &str =
    r#"203.0.113.7 - - [10/Oct/2000:13:55:36 -0700] "GET /a?b=1 HTTP/1.1" 200 2326 "-" "curl/8.0""#;
const APACHE_COMMON: &str =
    r#"127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 -"#;
const ALB: &str = r#"http 2018-07-02T22:23:00.186641Z app/my-loadbalancer/50dc6c495c0c9188 198.51.100.39:2817 192.0.2.10:80 0.000 0.001 0.000 200 200 34 366 "GET http://www.example.com:80/ HTTP/1.1" "curl/7.46.0" - - arn:aws:elasticloadbalancing:us-east-2:123456789012:targetgroup/my-targets/73e2d6bc24d8a067 "Root=1-58337262-36d228ad5d99923122bbe354" "-" "-" 0 2018-07-02T22:22:48.364000Z "forward" "-" "-" "192.0.2.10:80" "200" "-" "-""#;
const ELB: &str = r#"2015-05-13T23:39:43.945958Z my-loadbalancer 198.51.100.39:2817 192.0.2.10:80 0.000073 0.001048 0.000057 200 200 0 29 "GET http://www.example.com:80/ HTTP/1.1" "curl/7.38.0" - -"#;
const CLOUDFRONT: &str = "2019-12-04\t21:02:31\tLAX1\t392\t192.0.2.100\tGET\td111111abcdef8.cloudfront.net\t/index.html\t200\t-\tMozilla/5.0%20(Windows%20NT%2010.0)\t-\t-\tHit\tSOX4xwn4XV6Q4rgb7XiVGOHms_BGlTAC4KyHmureZmBNrjGdRLiNIQ==\td111111abcdef8.cloudfront.net\thttps\t23\t0.001\t-\tTLSv1.2\tECDHE-RSA-AES128-GCM-SHA256\tHit\tHTTP/2.0\t-\t-\t11040\t0.001\tHit\ttext/html\t78\t-\t-";
const JSON: &str =
    r#"{"ts":"2024-03-01T12:00:00.5Z","method":"get","path":"/search?q=x","status":200}"#;
const VEGETA_JSON: &str = r#"{"attack":"","seq":0,"code":200,"timestamp":"2018-05-08T14:13:47.123456789+02:00","latency":1934000,"bytes_out":0,"bytes_in":13,"error":"","body":null,"method":"GET","url":"http://localhost:8080/","headers":null}"#;
const VEGETA_CSV: &str = "1525781627123456789,200,1934000,0,13,,,,0,GET,http://localhost:8080/,";

#[test]
fn line_parser_knows_every_listed_format() {
    for name in LOG_FORMATS {
        let parser = line_parser(name, None, None);
        assert_eq!(parser.map(|p| p.name()).as_deref(), Ok(*name));
    }
}

#[test]
fn line_parser_names_what_is_wrong() {
    let rows: &[(&str, Option<&str>, Option<&str>, &str)] = &[
        (
            "ngnix",
            None,
            None,
            "unknown log format \"ngnix\" (want auto or one of nginx, apache-common, \
             apache-combined, alb, elb, cloudfront, json, vegeta-json, vegeta-csv)",
        ),
        (
            "nginx",
            Some("$remote_addr [$time_local] $status"),
            None,
            "log_format names no request: it needs $request, or $request_method with \
             $request_uri or $uri",
        ),
        (
            "nginx",
            Some("$remote_addr \"$request\" $status"),
            None,
            "log_format names no time: it needs $time_local, $time_iso8601 or $msec",
        ),
        (
            "nginx",
            Some("[$time_local] \"$request\" $status$body_bytes_sent"),
            None,
            "log_format: $status and $body_bytes_sent have nothing between them",
        ),
        (
            "nginx",
            Some("[$time_local] \"$request\" ${status"),
            None,
            "log_format: ${status has no closing }",
        ),
        (
            "alb",
            Some("$request"),
            None,
            "a log_format goes with the nginx format, not alb",
        ),
        (
            "nginx",
            None,
            Some("time=ts"),
            "log fields go with the json format, not nginx",
        ),
        (
            "json",
            None,
            Some("when=ts"),
            "log fields: unknown field \"when\" (fields: time, method, url, path, query, \
             host, status, bytes, user_agent, latency)",
        ),
        (
            "json",
            None,
            Some("time"),
            "log fields: \"time\" is not NAME=KEY",
        ),
        (
            "json",
            None,
            Some("latency=dur:minutes"),
            "log fields: unit \"minutes\" is not s, ms, us or ns",
        ),
        (
            "json",
            None,
            Some("status=code:ms"),
            "log fields: status takes no unit (only time and latency do)",
        ),
    ];
    for (name, log_format, fields, want) in rows {
        let got = line_parser(name, *log_format, *fields).map(|p| p.name());
        assert_eq!(
            got,
            Err((*want).to_owned()),
            "{name} {log_format:?} {fields:?}"
        );
    }
}

#[test]
fn sniff_picks_each_format_from_a_few_lines() {
    let cloudfront = [
        "#Version: 1.0",
        "#Fields: date time x-edge-location sc-bytes c-ip cs-method cs(Host) cs-uri-stem sc-status cs(Referer) cs(User-Agent) cs-uri-query cs(Cookie) x-edge-result-type x-edge-request-id x-host-header cs-protocol cs-bytes time-taken",
        CLOUDFRONT,
        CLOUDFRONT,
    ];
    let rows: Vec<(Vec<&str>, &str)> = vec![
        (vec![NGINX, NGINX, "garbage line"], "nginx"),
        (vec![APACHE_COMMON, APACHE_COMMON], "apache-common"),
        (vec![ALB, ALB], "alb"),
        (vec![ELB], "elb"),
        (cloudfront.to_vec(), "cloudfront"),
        (vec![JSON, JSON], "json"),
        (vec![VEGETA_JSON, VEGETA_JSON], "vegeta-json"),
        (vec![VEGETA_CSV], "vegeta-csv"),
    ];
    for (lines, want) in rows {
        let got = sniff(&lines).map(|p| p.name());
        assert_eq!(got.as_deref(), Some(want), "{lines:?}");
    }
}

#[test]
fn sniff_finds_nothing_in_garbage_or_a_mostly_broken_file() {
    let rows: &[&[&str]] = &[
        &[],
        &["hello world", "this is not a log"],
        &["#Version: 1.0", "#Fields: date time"],
        &[NGINX, "x", "y", "z"],
        &["{\"a\":1}", "[1,2]"],
    ];
    for lines in rows {
        assert!(sniff(lines).is_none(), "{lines:?}");
    }
}

#[test]
fn a_sniffed_cloudfront_parser_keeps_the_columns_it_learned() {
    let lines = [
        "#Fields: date time cs-method cs-uri-stem sc-status",
        "2019-12-04\t21:02:31\tGET\t/a\t200",
    ];
    let parser = sniff(&lines).expect("cloudfront fits");
    let request = parser.parse_line(lines[1]).ok().flatten();
    assert_eq!(request.map(|r| r.target).as_deref(), Some("/a"));
}

#[test]
fn a_sniffed_nginx_parser_reads_a_trailing_request_time_only_when_there_is_one() {
    let timed = format!("{NGINX} 1.250");
    let rows: [(&str, Option<u64>); 2] = [(&timed, Some(1_250_000_000)), (NGINX, None)];
    for (line, latency_ns) in rows {
        let parser = sniff(&[line, line]).expect("nginx fits");
        assert_eq!(parser.name(), "nginx");
        let request = parser.parse_line(line).ok().flatten().expect("a request");
        assert_eq!(request.latency_ns, latency_ns, "{line}");
    }
}

/// Lines a format almost reads: a valid line of each format with bytes replaced.
fn near_lines() -> impl Strategy<Value = String> {
    let valid = prop::sample::select(vec![
        NGINX,
        APACHE_COMMON,
        ALB,
        ELB,
        CLOUDFRONT,
        JSON,
        VEGETA_JSON,
        VEGETA_CSV,
    ]);
    let edits = prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..6);
    (valid, edits, any::<prop::sample::Index>()).prop_map(|(line, edits, cut)| {
        let mut bytes = line.as_bytes().to_vec();
        for (at, byte) in edits {
            let i = at.index(bytes.len());
            bytes[i] = byte;
        }
        bytes.truncate(cut.index(bytes.len() + 1));
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok());
    ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::with_cases(cases.unwrap_or(256))
    }
}

fn parse_with_all(line: &str) {
    for name in LOG_FORMATS {
        if let Ok(parser) = line_parser(name, None, None) {
            let _ = parser.parse_line(line);
        }
    }
    let custom = "$msec $host \"$request_method $uri$is_args$args\" $status $request_time $upstream_response_time";
    if let Ok(parser) = line_parser("nginx", Some(custom), None) {
        let _ = parser.parse_line(line);
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn random_bytes_never_panic_a_parser(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        parse_with_all(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn damaged_lines_never_panic_a_parser(line in near_lines()) {
        parse_with_all(&line);
        let _ = sniff(&[line.as_str()]);
    }

    #[test]
    fn random_log_formats_compile_or_say_why(format in "[ $a-z_{}\"\\[\\]]{0,40}") {
        let _ = line_parser("nginx", Some(&format), None);
    }
}
