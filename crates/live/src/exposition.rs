//! The Prometheus text exposition format 0.0.4, written by hand: `# HELP` and
//! `# TYPE` lines, then one `name{labels} value` line per series, families together.
//!
//! [`Metrics::visit`](crate::prometheus::Metrics) hands every series to a [`Sink`];
//! [`render_text`] is the sink of `/metrics`, the remote-write push is another, so
//! both always carry the same series.

use std::fmt::Write;

use crate::latest::Latest;
use crate::prometheus::Metrics;
use crate::sink::{Kind, Sink};

/// The content type of a scrape answer.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

impl Latest<Metrics> {
    /// The latest metrics in the Prometheus text format 0.0.4.
    pub fn render_text(&self) -> String {
        render_text(&self.get())
    }
}

/// Every series of `metrics` in the text format.
pub(crate) fn render_text(metrics: &Metrics) -> String {
    let mut text = Text(String::with_capacity(16 << 10));
    metrics.visit(&mut text);
    text.0
}

/// The stream connections' series alone, worded from `streams` (a steered run's
/// coordinator, from its merged figures).
pub(crate) fn streams_text(streams: &report::StreamsSoFar) -> String {
    let mut text = Text(String::new());
    crate::prometheus::visit_streams(streams, &mut text);
    text.0
}

struct Text(String);

impl Sink for Text {
    fn family(&mut self, name: &str, kind: Kind, help: &str) {
        let _ = writeln!(self.0, "# HELP {name} {}", escape_help(help));
        let _ = writeln!(self.0, "# TYPE {name} {}", kind.name());
    }

    fn sample(&mut self, name: &str, suffix: &str, labels: &[(&str, String)], value: f64) {
        write_sample(&mut self.0, (name, suffix), labels, value);
    }
}

/// `name{labels} value` and a line feed: a sample line, the same in both formats.
pub(crate) fn write_sample(
    out: &mut String,
    (name, suffix): (&str, &str),
    labels: &[(&str, String)],
    value: f64,
) {
    out.push_str(name);
    out.push_str(suffix);
    if !labels.is_empty() {
        out.push('{');
        for (i, (label, value)) in labels.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(out, "{label}=\"{}\"", escape_label_value(value));
        }
        out.push('}');
    }
    out.push(' ');
    out.push_str(&format_value(value));
    out.push('\n');
}

/// A label value: backslash, double quote and line feed escaped.
pub(crate) fn escape_label_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// A HELP text: backslash and line feed escaped (quotes stay).
pub(crate) fn escape_help(help: &str) -> String {
    help.replace('\\', "\\\\").replace('\n', "\\n")
}

/// A sample value as Prometheus writes it: integers without a fraction, the
/// shortest decimal that reads back exactly, `+Inf`, `-Inf`, `NaN`.
pub(crate) fn format_value(value: f64) -> String {
    if value.is_nan() {
        "NaN".to_owned()
    } else if value.is_infinite() {
        if value > 0.0 { "+Inf" } else { "-Inf" }.to_owned()
    } else {
        format!("{value}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_label_values_and_help() {
        let rows = [
            ("plain", "plain", "plain"),
            (r#"a"b"#, r#"a\"b"#, r#"a"b"#),
            (r"a\b", r"a\\b", r"a\\b"),
            ("a\nb", r"a\nb", r"a\nb"),
            (
                "http://h/p?q=1&x=é",
                "http://h/p?q=1&x=é",
                "http://h/p?q=1&x=é",
            ),
            ("", "", ""),
        ];
        for (raw, label, help) in rows {
            assert_eq!(escape_label_value(raw), label, "{raw:?}");
            assert_eq!(escape_help(raw), help, "{raw:?}");
        }
    }

    #[test]
    fn formats_values() {
        let rows = [
            (0.0, "0"),
            (3.0, "3"),
            (0.005, "0.005"),
            (1.5e-7, "0.00000015"),
            (12345678901.0, "12345678901"),
            (f64::INFINITY, "+Inf"),
            (f64::NEG_INFINITY, "-Inf"),
            (f64::NAN, "NaN"),
        ];
        for (value, want) in rows {
            assert_eq!(format_value(value), want, "{value}");
        }
    }

    #[test]
    fn writes_families_then_samples() {
        let mut text = Text(String::new());
        text.family("x_total", Kind::Counter, "Some \\ help\nhere");
        text.sample("x_total", "", &[], 2.0);
        text.sample(
            "x_total",
            "",
            &[("url", "a\"b".to_owned()), ("status", "200".to_owned())],
            1.5,
        );
        assert_eq!(
            text.0,
            "# HELP x_total Some \\\\ help\\nhere\n# TYPE x_total counter\n\
             x_total 2\nx_total{url=\"a\\\"b\",status=\"200\"} 1.5\n"
        );
    }
}
