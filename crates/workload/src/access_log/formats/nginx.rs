//! nginx access logs: [`parser`] reads the `combined` format by default, or the
//! user's `log_format` (the format string, or the whole directive pasted from
//! nginx.conf) compiled into a [`Pattern`].

use super::pattern::{Pattern, PatternParser, Var};

/// nginx's predefined `combined` format.
pub(super) const COMBINED: &str = r#"$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent""#;

/// A parser for `log_format`, or for `combined` without one.
pub(super) fn parser(log_format: Option<&str>) -> Result<PatternParser, String> {
    let format = match log_format {
        Some(text) => format_string(text)?,
        None => COMBINED.to_owned(),
    };
    let pattern = Pattern::compile(&format)?;
    check_names_a_request(&pattern)?;
    Ok(PatternParser::new("nginx", pattern, true, false))
}

/// A format gives a request only with its method, its URI and its time.
fn check_names_a_request(pattern: &Pattern) -> Result<(), String> {
    let has_uri = [Var::RequestUri, Var::Uri, Var::UriArgs]
        .into_iter()
        .any(|var| pattern.has(var));
    if !(pattern.has(Var::Request) || pattern.has(Var::RequestMethod) && has_uri) {
        return Err(
            "log_format names no request: it needs $request, or $request_method with \
             $request_uri or $uri"
                .to_owned(),
        );
    }
    let has_time = [Var::TimeLocal, Var::TimeIso8601, Var::Msec]
        .into_iter()
        .any(|var| pattern.has(var));
    if !has_time {
        return Err(
            "log_format names no time: it needs $time_local, $time_iso8601 or $msec".to_owned(),
        );
    }
    Ok(())
}

/// The format string of a `log_format` directive pasted whole
/// (`log_format main escape=json '$remote_addr ' '"$request"';`): its quoted pieces
/// joined, as nginx joins them. Any other text is the format string itself.
fn format_string(text: &str) -> Result<String, String> {
    let Some(directive) = text.trim().strip_prefix("log_format") else {
        return Ok(text.to_owned());
    };
    if !directive.starts_with(char::is_whitespace) {
        return Ok(text.to_owned());
    }
    let start = directive
        .find(['\'', '"'])
        .ok_or("log_format directive has no quoted format string")?;
    let mut format = String::new();
    let mut rest = &directive[start..];
    loop {
        rest = rest.trim_start();
        let Some(quote) = rest.chars().next().filter(|c| matches!(c, '\'' | '"')) else {
            break;
        };
        rest = quoted_piece(&rest[1..], quote, &mut format)?;
    }
    match rest.trim() {
        "" | ";" => Ok(format),
        extra => Err(format!(
            "log_format directive has {extra:?} after its format strings"
        )),
    }
}

/// Appends one quoted piece (its backslash escapes undone) and returns what follows.
fn quoted_piece<'a>(text: &'a str, quote: char, format: &mut String) -> Result<&'a str, String> {
    let mut chars = text.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                if let Some((_, escaped)) = chars.next() {
                    format.push(escaped);
                }
            }
            c if c == quote => return Ok(&text[i + 1..]),
            c => format.push(c),
        }
    }
    Err(format!(
        "log_format directive has an unclosed {quote} string"
    ))
}

#[cfg(test)]
mod tests {
    use super::super::tests::{Want, check_rows};
    use super::*;
    use crate::LineParser;

    /// 10/Oct/2000:13:55:36 -0700.
    const T: u64 = 971_211_336_000_000_000;

    fn combined(request: &str, status: &str, bytes: &str, user_agent: &str) -> String {
        format!(
            r#"203.0.113.7 - - [10/Oct/2000:13:55:36 -0700] "{request}" {status} {bytes} "-" "{user_agent}""#
        )
    }

    #[test]
    fn combined_lines() {
        let parser = parser(None).expect("combined compiles");
        assert_eq!(parser.resolution_ns(), 1_000_000_000);
        let rows: &[(&str, Want)] = &[
            (
                &combined("GET /a?b=1 HTTP/1.1", "200", "2326", "curl/8.0"),
                Ok(Some((
                    T,
                    "GET",
                    "/a?b=1",
                    None,
                    Some(200),
                    Some(2326),
                    Some("curl/8.0"),
                    None,
                ))),
            ),
            (
                r#"192.0.2.10 - frank [11/Oct/2000:02:25:36 +0530] "post /form HTTP/2.0" 499 0 "https://example.com/" "Mozilla/5.0 (X11; Linux x86_64) \x22quoted\x22""#,
                Ok(Some((
                    T,
                    "POST",
                    "/form",
                    None,
                    Some(499),
                    Some(0),
                    Some("Mozilla/5.0 (X11; Linux x86_64) \"quoted\""),
                    None,
                ))),
            ),
            (
                &combined(r"GET /caf\xC3\xA9?q=\x22x\x22 HTTP/1.1", "304", "-", "-"),
                Ok(Some((
                    T,
                    "GET",
                    "/caf%C3%A9?q=\"x\"",
                    None,
                    Some(304),
                    None,
                    None,
                    None,
                ))),
            ),
            (
                &combined("GET http://example.com/proxy HTTP/1.1", "200", "5", "-"),
                Ok(Some((
                    T,
                    "GET",
                    "http://example.com/proxy",
                    None,
                    Some(200),
                    Some(5),
                    None,
                    None,
                ))),
            ),
            (
                &format!(
                    "{} \"198.51.100.1\"\r",
                    combined("HEAD / HTTP/1.1", "200", "0", "-")
                ),
                Ok(Some((T, "HEAD", "/", None, Some(200), Some(0), None, None))),
            ),
            ("", Ok(None)),
            (
                &combined("-", "400", "0", "-"),
                Err("request \"-\" is not METHOD URI PROTOCOL"),
            ),
            (
                &combined(r"\x16\x03\x01", "400", "0", "-"),
                Err(r#"request "\\x16\\x03\\x01" is not METHOD URI PROTOCOL"#),
            ),
            (
                &combined("GET /a b HTTP/1.1", "200", "0", "-"),
                Err("uri \"/a b\" holds a space"),
            ),
            (
                &combined(r"GET /a\x0Ab HTTP/1.1", "200", "0", "-"),
                Err("uri \"/a\\nb\" holds a control character"),
            ),
            (
                &combined("PROPFIND / HTTP/1.1", "200", "0", "-"),
                Err("method \"PROPFIND\" is not an HTTP method"),
            ),
            (
                &combined("GET / HTTP/1.1", "abc", "0", "-"),
                Err("status \"abc\" is not a number"),
            ),
            (
                &combined("GET / HTTP/1.1", "200", "12k", "-"),
                Err("body_bytes_sent \"12k\" is not a number"),
            ),
            (
                &combined("GET / HTTP/1.1", "200", "0", "-").replace("Oct", "Foo"),
                Err("time \"10/Foo/2000:13:55:36 -0700\" is not dd/Mon/yyyy:HH:MM:SS +zone"),
            ),
            ("GARBAGE", Err("no \" - \" after $remote_addr")),
            (
                r#"203.0.113.7 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.1" 200"#,
                Err("no \" \" after $status"),
            ),
            (
                &format!("{}x", combined("GET / HTTP/1.1", "200", "0", "-")),
                Err("\"x\" follows the log format's end"),
            ),
        ];
        check_rows(&parser, rows);
    }

    #[test]
    fn user_log_formats() {
        let timed = r#"$remote_addr [$time_local] "$request" $status $body_bytes_sent $request_time "$http_user_agent""#;
        let by_parts = r#"$msec $http_host "$request_method $uri$is_args$args" $status $bytes_sent $request_time"#;
        let upstream = r#"$time_iso8601 ${host}$request_uri $request_method $status "$upstream_response_time""#;
        type Row = (&'static str, &'static str, Want, u64);
        let rows: &[Row] = &[
            (
                timed,
                r#"192.0.2.10 [10/Oct/2000:13:55:36 -0700] "GET /slow HTTP/1.1" 200 10 0.250 "curl/8.0""#,
                Ok(Some((
                    T - 250_000_000,
                    "GET",
                    "/slow",
                    None,
                    Some(200),
                    Some(10),
                    Some("curl/8.0"),
                    Some(250_000_000),
                ))),
                1_000_000_000,
            ),
            (
                by_parts,
                r#"1700000000.123 api.example.com:8080 "DELETE /a b/caf\xC3\xA9?x=1" 204 180 0.004"#,
                Ok(Some((
                    1_700_000_000_119_000_000,
                    "DELETE",
                    "/a%20b/caf%C3%A9?x=1",
                    Some("api.example.com:8080"),
                    Some(204),
                    Some(180),
                    None,
                    Some(4_000_000),
                ))),
                1_000_000,
            ),
            (
                by_parts,
                r#"1700000000.123 - "GET /plain" 200 0 0.000"#,
                Ok(Some((
                    1_700_000_000_123_000_000,
                    "GET",
                    "/plain",
                    None,
                    Some(200),
                    Some(0),
                    None,
                    Some(0),
                ))),
                1_000_000,
            ),
            (
                by_parts,
                r#"1700000000.1x3 - "GET /" 200 0 0.000"#,
                Err("msec \"1700000000.1x3\" is not seconds.millis"),
                1_000_000,
            ),
            (
                by_parts,
                r#"1700000000.123 - "GET /?a b" 200 0 0.000"#,
                Err("args \"a b\" holds a space"),
                1_000_000,
            ),
            (
                upstream,
                r#"2000-10-10T13:55:36-07:00 example.com/a?b=1 GET 502 "0.010, 0.002""#,
                Ok(Some((
                    T - 12_000_000,
                    "GET",
                    "/a?b=1",
                    Some("example.com"),
                    Some(502),
                    None,
                    None,
                    Some(12_000_000),
                ))),
                1_000_000_000,
            ),
            (
                upstream,
                r#"2000-10-10T13:55:36-07:00 example.com/a GET 502 "-""#,
                Ok(Some((
                    T,
                    "GET",
                    "/a",
                    Some("example.com"),
                    Some(502),
                    None,
                    None,
                    None,
                ))),
                1_000_000_000,
            ),
            (
                timed,
                r#"192.0.2.10 [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.1" 200 10 soon "-""#,
                Err("request_time \"soon\" is not a number of seconds"),
                1_000_000_000,
            ),
        ];
        for (format, line, want, resolution_ns) in rows {
            let parser = parser(Some(format)).expect("the format compiles");
            assert_eq!(parser.resolution_ns(), *resolution_ns, "{format}");
            check_rows(&parser, &[(line, *want)]);
        }
    }

    #[test]
    fn a_pasted_directive_is_its_format_string() {
        let directive = r#"log_format main escape=default '$remote_addr - $remote_user [$time_local] "$request" '
                      '$status $body_bytes_sent "$http_referer" '
                      '"$http_user_agent" "$http_x_forwarded_for" \'$msec\'';"#;
        let line = r#"192.0.2.10 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.1" 200 1 "-" "curl/8.0" "-" '971211336.500'"#;
        let parser = parser(Some(directive)).expect("the directive compiles");
        let rows: &[(&str, Want)] = &[(
            line,
            Ok(Some((
                971_211_336_500_000_000,
                "GET",
                "/",
                None,
                Some(200),
                Some(1),
                Some("curl/8.0"),
                None,
            ))),
        )];
        check_rows(&parser, rows);
        let broken = [
            (
                "log_format main;",
                "log_format directive has no quoted format string",
            ),
            (
                "log_format main '$request",
                "log_format directive has an unclosed ' string",
            ),
            (
                "log_format main '$time_local $request' gzip;",
                "log_format directive has \"gzip;\" after its format strings",
            ),
        ];
        for (directive, want) in broken {
            assert_eq!(parser_error(directive), want, "{directive}");
        }
    }

    fn parser_error(log_format: &str) -> String {
        match parser(Some(log_format)) {
            Ok(_) => "compiled".to_owned(),
            Err(reason) => reason,
        }
    }
}
