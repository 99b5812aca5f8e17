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
    if !pattern.has(Var::Request) && !(pattern.has(Var::RequestMethod) && has_uri) {
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
        extra => Err(format!("log_format directive has {extra:?} after its format strings")),
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
    Err(format!("log_format directive has an unclosed {quote} string"))
}
