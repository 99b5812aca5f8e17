//! The Prometheus text exposition format (0.0.4, and the OpenMetrics text that
//! exporters commonly serve): `# HELP`, `# TYPE`, comments, samples with labels whose
//! values may hold `,` `=` `}` `"` and escapes, optional timestamps, `NaN` and `±Inf`,
//! exemplars (ignored), `# EOF`, and quoted UTF-8 metric names (`{"my.metric"}`).
//!
//! A malformed line fails the whole scrape, as in Prometheus: a half-read exposition
//! would turn into wrong rates.

use std::collections::HashMap;

/// A family's declared type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MetricType {
    Counter,
    Gauge,
    Histogram,
    Summary,
    /// `untyped`, `unknown`, and OpenMetrics types we read as plain values.
    Untyped,
}

/// One sample line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Sample {
    pub name: String,
    /// In the order given.
    pub labels: Vec<(String, String)>,
    pub value: f64,
    pub timestamp_ms: Option<i64>,
}

/// A parsed scrape.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Exposition {
    pub types: HashMap<String, MetricType>,
    pub help: HashMap<String, String>,
    pub samples: Vec<Sample>,
}

/// Where and why the text is not an exposition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ParseError {
    pub line: usize,
    pub reason: String,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.reason)
    }
}

pub(crate) fn parse(text: &str) -> Result<Exposition, ParseError> {
    let mut exposition = Exposition::default();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        let fail = |reason: String| ParseError {
            line: index + 1,
            reason,
        };
        let trimmed = line.trim_start();
        if trimmed.is_empty() {
            continue;
        }
        if let Some(comment) = trimmed.strip_prefix('#') {
            if comment.trim() == "EOF" {
                break;
            }
            parse_comment(comment, &mut exposition).map_err(fail)?;
            continue;
        }
        let sample = parse_sample(trimmed).map_err(fail)?;
        exposition.samples.push(sample);
    }
    Ok(exposition)
}

/// `# HELP name text`, `# TYPE name type`; other comments are ignored.
fn parse_comment(comment: &str, exposition: &mut Exposition) -> Result<(), String> {
    let comment = comment.trim_start();
    let (keyword, rest) = comment.split_once([' ', '\t']).unwrap_or((comment, ""));
    let rest = rest.trim_start();
    let (name, text) = rest.split_once([' ', '\t']).unwrap_or((rest, ""));
    match keyword {
        "HELP" => {
            check_name(name)?;
            exposition.help.insert(name.to_owned(), unescape_help(text));
        }
        "TYPE" => {
            check_name(name)?;
            let kind = match text.trim() {
                "counter" => MetricType::Counter,
                "gauge" => MetricType::Gauge,
                "histogram" => MetricType::Histogram,
                "summary" => MetricType::Summary,
                "untyped" | "unknown" | "gaugehistogram" | "stateset" | "info" => {
                    MetricType::Untyped
                }
                other => return Err(format!("unknown metric type {other:?} for {name}")),
            };
            if exposition.types.insert(name.to_owned(), kind).is_some() {
                return Err(format!("a second TYPE line for {name}"));
            }
        }
        _ => {}
    }
    Ok(())
}

fn unescape_help(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match (c, c == '\\') {
            (_, true) => match chars.next() {
                Some('n') => out.push('\n'),
                Some('\\') => out.push('\\'),
                Some(other) => {
                    out.push('\\');
                    out.push(other);
                }
                None => out.push('\\'),
            },
            _ => out.push(c),
        }
    }
    out
}

fn check_name(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let valid = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':');
    if valid {
        Ok(())
    } else {
        Err(format!("bad metric name {name:?}"))
    }
}

/// `name{labels} value [timestamp] [# exemplar]` or `{"name",labels} value ...`.
fn parse_sample(line: &str) -> Result<Sample, String> {
    let name_end = line.find(['{', ' ', '\t']).unwrap_or(line.len());
    let mut name = line[..name_end].to_owned();
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if rest.trim_start().starts_with('{') {
        rest = rest.trim_start();
        let (parsed, quoted_name, after) = parse_labels(&rest[1..])?;
        labels = parsed;
        if let Some(quoted) = quoted_name {
            if !name.is_empty() {
                return Err("a metric name both before and inside the braces".to_owned());
            }
            name = quoted;
        }
        rest = after;
    }
    if name.is_empty() {
        return Err("a sample without a metric name".to_owned());
    }
    if !line.starts_with('{') {
        check_name(&name)?;
    }
    // Exemplars (OpenMetrics) follow " # ".
    let rest = rest.split(" # ").next().unwrap_or_default();
    let mut fields = rest.split_whitespace();
    let value_text = fields.next().ok_or_else(|| format!("{name}: no value"))?;
    let value =
        parse_value(value_text).ok_or_else(|| format!("{name}: bad value {value_text:?}"))?;
    let timestamp_ms = match fields.next() {
        Some(ts) => Some(
            ts.parse::<i64>()
                .map_err(|_| format!("{name}: bad timestamp {ts:?}"))?,
        ),
        None => None,
    };
    if let Some(extra) = fields.next() {
        return Err(format!("{name}: unexpected {extra:?} after the timestamp"));
    }
    Ok(Sample {
        name,
        labels,
        value,
        timestamp_ms,
    })
}

/// Go's `strconv.ParseFloat` spellings that exporters use: numbers, `NaN`, `±Inf`.
fn parse_value(text: &str) -> Option<f64> {
    let lower = text.to_ascii_lowercase();
    match lower.trim_start_matches(['+', '-']) {
        "inf" | "infinity" => Some(if lower.starts_with('-') {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        }),
        "nan" => Some(f64::NAN),
        _ => text.parse::<f64>().ok().filter(|v| v.is_finite()),
    }
}

type Labels = Vec<(String, String)>;

/// Parses after `{` up to and including `}`: the labels, a quoted metric name if one
/// stands alone, and the text after the brace.
fn parse_labels(mut text: &str) -> Result<(Labels, Option<String>, &str), String> {
    let mut labels = Vec::new();
    let mut quoted_name = None;
    loop {
        text = text.trim_start();
        if let Some(after) = text.strip_prefix('}') {
            return Ok((labels, quoted_name, after));
        }
        let (name, after) = if let Some(quoted) = text.strip_prefix('"') {
            parse_quoted(quoted)?
        } else {
            let end = text
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(text.len());
            if end == 0 {
                return Err(format!("bad label name at {:?}", head(text)));
            }
            (text[..end].to_owned(), &text[end..])
        };
        let after = after.trim_start();
        let after = if let Some(value_text) = after.strip_prefix('=') {
            let value_text = value_text.trim_start();
            let value_text = value_text
                .strip_prefix('"')
                .ok_or_else(|| format!("label {name}: the value must be in double quotes"))?;
            let (value, after) = parse_quoted(value_text)?;
            if labels.iter().any(|(n, _)| *n == name) {
                return Err(format!("label {name} given twice"));
            }
            labels.push((name, value));
            after
        } else if quoted_name.is_none() && labels.is_empty() && text.starts_with('"') {
            quoted_name = Some(name);
            after
        } else {
            return Err(format!("label {name}: expected ="));
        };
        let after = after.trim_start();
        text = match after.strip_prefix(',') {
            Some(next) => next,
            None if after.starts_with('}') => after,
            None => return Err(format!("expected , or }} at {:?}", head(after))),
        };
    }
}

/// Parses a quoted string after its opening quote: `\\`, `\"` and `\n` are escapes.
fn parse_quoted(text: &str) -> Result<(String, &str), String> {
    let mut value = String::new();
    let mut chars = text.char_indices();
    while let Some((at, c)) = chars.next() {
        match c {
            '"' => return Ok((value, &text[at + 1..])),
            '\\' => match chars.next() {
                Some((_, 'n')) => value.push('\n'),
                Some((_, '\\')) => value.push('\\'),
                Some((_, '"')) => value.push('"'),
                Some((_, other)) => {
                    value.push('\\');
                    value.push(other);
                }
                None => break,
            },
            _ => value.push(c),
        }
    }
    Err("a quoted string is not closed".to_owned())
}

fn head(text: &str) -> &str {
    let end = text.char_indices().nth(16).map_or(text.len(), |(at, _)| at);
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(
        name: &str,
        labels: &[(&str, &str)],
        value: f64,
        timestamp_ms: Option<i64>,
    ) -> Sample {
        Sample {
            name: name.to_owned(),
            labels: labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            value,
            timestamp_ms,
        }
    }

    #[test]
    fn parses_sample_lines() {
        let rows: Vec<(&str, Result<Sample, &str>)> = vec![
            ("up 1", Ok(sample("up", &[], 1.0, None))),
            (
                "http_requests_total{method=\"post\",code=\"200\"} 1027 1395066363000",
                Ok(sample(
                    "http_requests_total",
                    &[("method", "post"), ("code", "200")],
                    1027.0,
                    Some(1_395_066_363_000),
                )),
            ),
            // , = } and escapes inside label values.
            (
                r#"msdos_file_access_time_seconds{path="C:\\DIR\\FILE.TXT",error="Cannot find file:\n\"FILE.TXT\""} 1.458255915e9"#,
                Ok(sample(
                    "msdos_file_access_time_seconds",
                    &[
                        ("path", "C:\\DIR\\FILE.TXT"),
                        ("error", "Cannot find file:\n\"FILE.TXT\""),
                    ],
                    1.458255915e9,
                    None,
                )),
            ),
            (
                r#"weird{a="x,y=z}",b="}{"} 2"#,
                Ok(sample("weird", &[("a", "x,y=z}"), ("b", "}{")], 2.0, None)),
            ),
            (
                r#"trailing{a="1",} 3"#,
                Ok(sample("trailing", &[("a", "1")], 3.0, None)),
            ),
            (
                r#"spaced { a = "1" , b="2" } 4"#,
                Ok(sample("spaced", &[("a", "1"), ("b", "2")], 4.0, None)),
            ),
            ("empty{} 5", Ok(sample("empty", &[], 5.0, None))),
            (
                "metric_without_timestamp_and_labels 12.47",
                Ok(sample(
                    "metric_without_timestamp_and_labels",
                    &[],
                    12.47,
                    None,
                )),
            ),
            (
                "something_weird{problem=\"division by zero\"} +Inf -3982045",
                Ok(sample(
                    "something_weird",
                    &[("problem", "division by zero")],
                    f64::INFINITY,
                    Some(-3_982_045),
                )),
            ),
            ("neg -Inf", Ok(sample("neg", &[], f64::NEG_INFINITY, None))),
            ("small 1e-07", Ok(sample("small", &[], 1e-7, None))),
            (
                r#"{"my.dotted.metric",env="prod"} 7"#,
                Ok(sample("my.dotted.metric", &[("env", "prod")], 7.0, None)),
            ),
            (
                r#"exemplar_bucket{le="0.5"} 11 # {trace_id="KOO5S4vxi0o"} 0.67"#,
                Ok(sample("exemplar_bucket", &[("le", "0.5")], 11.0, None)),
            ),
            ("ns:colons_ok 1", Ok(sample("ns:colons_ok", &[], 1.0, None))),
            ("no_value", Err("no value")),
            ("bad_value abc", Err("bad value \"abc\"")),
            ("bad_ts 1 12.5", Err("bad timestamp")),
            ("extra 1 2 3", Err("unexpected \"3\"")),
            ("1bad 1", Err("bad metric name")),
            ("m{a=\"unclosed} 1", Err("not closed")),
            ("m{a=1} 1", Err("double quotes")),
            ("m{a} 1", Err("expected =")),
            ("m{a=\"1\" b=\"2\"} 1", Err("expected , or }")),
            ("m{a=\"1\",a=\"2\"} 1", Err("given twice")),
            ("m{=\"1\"} 1", Err("bad label name")),
            ("{} 1", Err("without a metric name")),
            (
                "<html><body>502 Bad Gateway</body></html>",
                Err("bad metric name"),
            ),
        ];
        for (line, want) in rows {
            match (parse_sample(line), want) {
                (Ok(got), Ok(want)) => {
                    assert_eq!(
                        (&got.name, &got.labels, got.timestamp_ms),
                        (&want.name, &want.labels, want.timestamp_ms),
                        "{line}"
                    );
                    assert!(
                        got.value == want.value || (got.value.is_nan() && want.value.is_nan()),
                        "{line}: {}",
                        got.value
                    );
                }
                (Err(err), Err(want)) => assert!(err.contains(want), "{line}: {err} (want {want})"),
                (got, want) => panic!("{line}: got {got:?}, want {want:?}"),
            }
        }
        assert!(parse_sample("nan_value NaN").unwrap().value.is_nan());
    }

    #[test]
    fn parses_a_whole_exposition() {
        let text = "# HELP http_requests_total The total number of HTTP requests.\n\
# TYPE http_requests_total counter\n\
http_requests_total{method=\"post\",code=\"200\"} 1027 1395066363000\r\n\
\n\
# A normal comment.\n\
#\n\
# HELP odd_help A help with \\\\ and \\n escapes\n\
# TYPE rpc_duration_seconds summary\n\
rpc_duration_seconds{quantile=\"0.5\"} 4773\n\
rpc_duration_seconds_sum 1.7560473e+07\n\
rpc_duration_seconds_count 2693\n\
# TYPE req_seconds histogram\n\
req_seconds_bucket{le=\"0.1\"} 3\n\
req_seconds_bucket{le=\"+Inf\"} 4\n\
# TYPE temp gauge\n\
temp NaN\n\
# EOF\n\
after_eof garbage garbage\n";
        let exposition = parse(text).unwrap();
        assert_eq!(exposition.samples.len(), 7);
        assert_eq!(exposition.types["http_requests_total"], MetricType::Counter);
        assert_eq!(
            exposition.types["rpc_duration_seconds"],
            MetricType::Summary
        );
        assert_eq!(exposition.types["req_seconds"], MetricType::Histogram);
        assert_eq!(exposition.help["odd_help"], "A help with \\ and \n escapes");
        assert!(exposition.samples[6].value.is_nan());
    }

    #[test]
    fn rejects_garbage_with_the_line() {
        let rows: &[(&str, &str)] = &[
            (
                "ok 1\n# TYPE x nonsense\n",
                "line 2: unknown metric type \"nonsense\"",
            ),
            (
                "# TYPE x counter\n# TYPE x gauge\n",
                "line 2: a second TYPE line for x",
            ),
            ("# TYPE 9x counter\n", "bad metric name"),
            ("ok 1\nok 2\n<!DOCTYPE html>\n", "line 3:"),
            ("\u{0}\u{1}\u{2} binary", "line 1:"),
        ];
        for (text, want) in rows {
            let err = parse(text).unwrap_err().to_string();
            assert!(err.contains(want), "{text:?}: {err}");
        }
        assert_eq!(parse("").unwrap(), Exposition::default());
    }
}
