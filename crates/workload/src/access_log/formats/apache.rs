//! Apache httpd access logs, the Common Log Format (`%h %l %u %t "%r" %>s %b`) and
//! `combined` (with `"%{Referer}i" "%{User-agent}i"`), as [`PatternParser`]s. `%t` is
//! when the request was received; `%b` writes `-` for an empty body.

use super::pattern::{Pattern, PatternParser};

/// `common`, in the pattern syntax (nginx's variable names).
const COMMON: &str = r#"$remote_addr $remote_ident $remote_user [$time_local] "$request" $status $body_bytes_sent"#;

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
    Ok(PatternParser::new(name, Pattern::compile(&format)?, false, true))
}
