//! The line formats of access logs, each a [`LineParser`]; [`line_parser`] makes one
//! by the name `-log-format` gives, [`sniff`] guesses one from a file's first lines.
//!
//! | name | lines | gives |
//! |---|---|---|
//! | `nginx` | `combined`, or any `log_format` string (or directive) | time (`$time_local`, `$time_iso8601`: 1 s; `$msec`: 1 ms) less `$request_time` (nginx logs at completion), method, target (`$request`, or `$request_method` with `$request_uri` / `$uri$is_args$args`), host (`$http_host`, `$host`), status, bytes (`$body_bytes_sent`, `$bytes_sent`), user agent, latency (`$request_time`, else `$upstream_response_time`) |
//! | `apache-common` | `%h %l %u %t "%r" %>s %b` | arrival time (1 s), method, target, status, bytes (`-` = 0) |
//! | `apache-combined` | common + `"%{Referer}i" "%{User-agent}i"` | the same and the user agent |
//! | `alb` | AWS Application Load Balancer entries | `request_creation_time` (1 µs; else `time` less the latency), method, absolute URL, host (from the URL), ELB status, sent bytes, user agent, latency (the three processing times; none if one is `-1`) |
//! | `elb` | AWS Classic Load Balancer entries | arrival `timestamp` (1 µs) and the same as `alb` |
//! | `cloudfront` | CloudFront standard logs, tab-separated | `date` + `time` less `time-taken` (1 s), method, `cs-uri-stem` + `cs-uri-query`, host (`x-host-header`, else `cs(Host)`), status, `sc-bytes`, user agent (URL-decoded), latency; `#` header lines skipped, `#Fields` placing the columns |
//! | `json` | one JSON object per line, keys from a mapping or the common ones | time (RFC 3339 or a unix number, unit given or guessed), method (GET when absent), url or path + query, host, status, bytes, user agent, latency (seconds unless a unit is given) |
//! | `vegeta-json`, `vegeta-csv` | `vegeta encode` output | send time (1 ns), method, absolute URL, host, status (code 0: none), bytes in, latency |
//!
//! Every parser checks what it gives: the method upper case and known, the target in
//! origin form or an absolute http(s) URL with bytes past ASCII percent-encoded, and
//! refuses what a request line cannot carry (a control character, a space), naming
//! the field in its reason. The built-in layouts scan bytes (no regex); nginx's and
//! Apache's cache the last `$time_local` they parsed.

mod apache;
mod aws;
mod cloudfront;
mod fields;
mod json;
mod nginx;
mod pattern;
mod request_line;
mod timestamps;
mod vegeta;

use crate::LineParser;

/// The formats `-log-format` names, for help texts and errors.
pub const LOG_FORMATS: &[&str] = &[
    "nginx",
    "apache-common",
    "apache-combined",
    "alb",
    "elb",
    "cloudfront",
    "json",
    "vegeta-json",
    "vegeta-csv",
];

/// A parser for `name` (one of [`LOG_FORMATS`]). `log_format`: an nginx `log_format`
/// string (with name "nginx" it replaces the default `combined`); `fields`: for
/// "json", the mapping `time=ts,method=verb,url=path,status=code,...` (fields named
/// as the user's JSON keys, dotted paths allowed for nested objects, a `:s|:ms|:us|:ns`
/// unit on time and latency). `Err(reason)` names what is wrong.
pub fn line_parser(
    name: &str,
    log_format: Option<&str>,
    fields: Option<&str>,
) -> Result<Box<dyn LineParser>, String> {
    if log_format.is_some() && name != "nginx" {
        return Err(format!(
            "a log_format goes with the nginx format, not {name}"
        ));
    }
    if fields.is_some() && name != "json" {
        return Err(format!("log fields go with the json format, not {name}"));
    }
    Ok(match name {
        "nginx" => Box::new(nginx::parser(log_format)?),
        "apache-common" => Box::new(apache::parser(false)?),
        "apache-combined" => Box::new(apache::parser(true)?),
        "alb" => Box::new(aws::Alb),
        "elb" => Box::new(aws::Elb),
        "cloudfront" => Box::new(cloudfront::CloudFront::new()),
        "json" => Box::new(json::JsonLines::new(match fields {
            Some(mapping) => json::Keys::parse(mapping)?,
            None => json::Keys::default(),
        })),
        "vegeta-json" => Box::new(vegeta::VegetaJson),
        "vegeta-csv" => Box::new(vegeta::VegetaCsv),
        _ => {
            return Err(format!(
                "unknown log format {name:?} (want auto or one of {})",
                LOG_FORMATS.join(", ")
            ));
        }
    })
}

/// The order [`sniff`] tries formats in, which breaks ties: nginx's `combined` and
/// Apache's are the same layout (nginx first), and vegeta's JSON results are also
/// JSON lines (vegeta first).
const SNIFF_ORDER: [(&str, Option<&str>); 9] = [
    // nginx's `combined` with `$request_time` after it (the common way to log latency):
    // first, so that it wins the tie with `combined`, which also reads such lines.
    ("nginx", Some(COMBINED_TIMED)),
    ("nginx", None),
    ("apache-common", None),
    ("alb", None),
    ("elb", None),
    ("cloudfront", None),
    ("vegeta-json", None),
    ("vegeta-csv", None),
    ("json", None),
];

/// `combined` and `$request_time`.
const COMBINED_TIMED: &str = concat!(
    r#"$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "#,
    r#""$http_referer" "$http_user_agent" $request_time"#
);

/// Guess the format from a file's first non-empty lines (up to 20): the one that
/// reads the most of them, if it reads more than half of those it does not skip.
/// `None` when nothing fits. The parser returned has seen the lines (CloudFront's
/// has learned its columns from a `#Fields` line).
pub fn sniff(lines: &[&str]) -> Option<Box<dyn LineParser>> {
    let lines = &lines[..lines.len().min(20)];
    let mut best: Option<(usize, Box<dyn LineParser>)> = None;
    for (name, log_format) in SNIFF_ORDER {
        let Ok(parser) = line_parser(name, log_format, None) else {
            continue;
        };
        let (mut read, mut failed) = (0, 0);
        for line in lines {
            match parser.parse_line(line) {
                Ok(Some(_)) => read += 1,
                Ok(None) => {}
                Err(_) => failed += 1,
            }
        }
        let fits = read > failed;
        if fits && best.as_ref().is_none_or(|(most, _)| read > *most) {
            best = Some((read, parser));
        }
    }
    best.map(|(_, parser)| parser)
}

#[cfg(test)]
mod tests;
