//! Apache httpd access logs, the Common Log Format (`%h %l %u %t "%r" %>s %b`) and
//! `combined` (with `"%{Referer}i" "%{User-agent}i"`), as [`PatternParser`]s. `%t` is
//! when the request was received; `%b` writes `-` for an empty body.

use super::pattern::{Pattern, PatternParser};

/// `common`, in the pattern syntax (nginx's variable names).
const COMMON: &str =
    r#"$remote_addr $remote_ident $remote_user [$time_local] "$request" $status $body_bytes_sent"#;

/// A parser for `common`, or for `combined` when `combined`.
pub(super) fn parser(combined: bool) -> Result<PatternParser, String> {
    let (name, format) = if combined {
        (
            "apache-combined",
            format!(r#"{COMMON} "$http_referer" "$http_user_agent""#),
        )
    } else {
        ("apache-common", COMMON.to_owned())
    };
    Ok(PatternParser::new(
        name,
        Pattern::compile(&format)?,
        false,
        true,
    ))
}

#[cfg(test)]
mod tests {
    use super::super::tests::{Want, check_rows};
    use super::*;

    /// 10/Oct/2000:13:55:36 -0700.
    const T: u64 = 971_211_336_000_000_000;

    #[test]
    fn common_lines() {
        let parser = parser(false).expect("common compiles");
        let rows: &[(&str, Want)] = &[
            (
                r#"127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326"#,
                Ok(Some((
                    T,
                    "GET",
                    "/apache_pb.gif",
                    None,
                    Some(200),
                    Some(2326),
                    None,
                    None,
                ))),
            ),
            (
                r#"127.0.0.1 - - [10/Oct/2000:22:55:36 +0200] "GET /q?\"x\" HTTP/1.0" 304 -"#,
                Ok(Some((
                    T,
                    "GET",
                    "/q?\"x\"",
                    None,
                    Some(304),
                    Some(0),
                    None,
                    None,
                ))),
            ),
            (
                r#"127.0.0.1 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" 2oo 1"#,
                Err("status \"2oo\" is not a number"),
            ),
            (
                r#"127.0.0.1 - - 10/Oct/2000:13:55:36 -0700 "GET / HTTP/1.0" 200 1"#,
                Err("no \" [\" after $remote_user"),
            ),
        ];
        check_rows(&parser, rows);
    }

    #[test]
    fn combined_lines() {
        let parser = parser(true).expect("combined compiles");
        let rows: &[(&str, Want)] = &[
            (
                r#"127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /a.gif HTTP/1.0" 200 2326 "http://www.example.com/start.html" "Mozilla/4.08 [en] (Win98; I ;Nav) \"q\"""#,
                Ok(Some((
                    T,
                    "GET",
                    "/a.gif",
                    None,
                    Some(200),
                    Some(2326),
                    Some("Mozilla/4.08 [en] (Win98; I ;Nav) \"q\""),
                    None,
                ))),
            ),
            (
                r#"127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /a.gif HTTP/1.0" 200 2326"#,
                Err("no \" \\\"\" after $body_bytes_sent"),
            ),
        ];
        check_rows(&parser, rows);
    }
}
