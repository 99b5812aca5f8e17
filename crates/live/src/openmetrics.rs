//! OpenMetrics exemplars on `-prometheus-addr` (docs/PROMETHEUS.md, docs/TRACES.md):
//! under `attack -trace`, each latency bucket of `request_seconds` carries the latest
//! traced request that fell in it, `# {trace_id="..."} value timestamp`, so a
//! Prometheus with exemplar storage (or Grafana) links a latency spike to its trace.
//!
//! Exemplars exist only in the OpenMetrics text format, so a scrape gets it only when
//! it asks (`Accept: application/openmetrics-text`, as Prometheus does); other
//! scrapers get the text format 0.0.4 as before. Series names are the same in both:
//! counters whose name lacks `_total` (vegeta's `request_bytes_in`, ...) are typed
//! `unknown` in OpenMetrics, which wants counters' samples to end in `_total`.
//! The exemplars themselves are kept by `exemplar.rs`.

use std::fmt::Write as _;

use crate::exemplar::BucketExemplar;
use crate::exposition::{escape_label_value, format_value, write_sample};
use crate::latest::Latest;
use crate::prometheus::Metrics;
use crate::sink::{Kind, Sink};

/// The content type of an OpenMetrics scrape answer.
pub const OPENMETRICS_CONTENT_TYPE: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Whether an `Accept` header asks for OpenMetrics (Prometheus lists it first, with
/// the text format after at a lower `q`). A type given `q=0` is refused, not asked.
pub fn wants_openmetrics(accept: Option<&str>) -> bool {
    accept.unwrap_or("").split(',').any(|part| {
        let mut fields = part.split(';').map(str::trim);
        let media = fields.next().unwrap_or("");
        let refused = fields.any(|f| {
            f.strip_prefix("q=")
                .and_then(|q| q.parse::<f64>().ok())
                .is_some_and(|q| q <= 0.0)
        });
        media.eq_ignore_ascii_case("application/openmetrics-text") && !refused
    })
}

impl Latest<Metrics> {
    /// The latest metrics as the scraper asked (`accept`, its `Accept` header): the
    /// content type and the body, OpenMetrics with exemplars or the text format 0.0.4.
    pub fn render_for(&self, accept: Option<&str>) -> (&'static str, String) {
        if wants_openmetrics(accept) {
            (OPENMETRICS_CONTENT_TYPE, render_openmetrics(&self.get()))
        } else {
            (crate::PROMETHEUS_CONTENT_TYPE, self.render_text())
        }
    }
}

/// Every series of `metrics` in the OpenMetrics text format, exemplars included.
pub(crate) fn render_openmetrics(metrics: &Metrics) -> String {
    let mut text = OpenMetrics(String::with_capacity(16 << 10));
    metrics.visit(&mut text);
    text.0.push_str("# EOF\n");
    text.0
}

struct OpenMetrics(String);

impl Sink for OpenMetrics {
    fn family(&mut self, name: &str, kind: Kind, help: &str) {
        let (name, kind) = match (kind, name.strip_suffix("_total")) {
            (Kind::Counter, Some(family)) => (family, "counter"),
            (Kind::Counter, None) => (name, "unknown"),
            (kind, _) => (name, kind.name()),
        };
        let _ = writeln!(self.0, "# HELP {name} {}", escape_label_value(help));
        let _ = writeln!(self.0, "# TYPE {name} {kind}");
    }

    fn sample(&mut self, name: &str, suffix: &str, labels: &[(&str, String)], value: f64) {
        write_sample(&mut self.0, (name, suffix), labels, value);
    }

    fn exemplar(&mut self, exemplar: &BucketExemplar) {
        // On the bucket's line, before its line feed.
        self.0.pop();
        let _ = writeln!(
            self.0,
            " # {{trace_id=\"{:032x}\"}} {} {}",
            exemplar.trace_id,
            format_value(exemplar.latency_ns as f64 / 1e9),
            unix_seconds(exemplar.at_unix_ns),
        );
    }
}

/// Unix seconds to the millisecond (what Prometheus keeps), in integers: an `f64` of
/// nanoseconds since 1970 has no digits to spare.
fn unix_seconds(at_unix_ns: u64) -> String {
    let ms = at_unix_ns / 1_000_000;
    format!("{}.{:03}", ms / 1000, ms % 1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openmetrics_is_asked_for_by_the_accept_header() {
        let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;\
                          version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        // (Accept, OpenMetrics)
        let rows = [
            (Some(prometheus), true),
            (Some("Application/OpenMetrics-Text"), true),
            (Some("text/plain;version=0.0.4"), false),
            (Some("*/*"), false),
            (Some("application/openmetrics-text;q=0, text/plain"), false),
            (Some("application/openmetrics-textual"), false),
            (None, false),
        ];
        for (accept, want) in rows {
            assert_eq!(wants_openmetrics(accept), want, "{accept:?}");
        }
    }

    #[test]
    fn families_are_typed_for_openmetrics_and_exemplars_follow_their_bucket() {
        let mut text = OpenMetrics(String::new());
        text.family(
            "loadlab_requests_sent_total",
            Kind::Counter,
            "Sent \"so far\"",
        );
        text.sample("loadlab_requests_sent_total", "", &[], 3.0);
        text.family("request_bytes_in", Kind::Counter, "Bytes");
        text.family("request_seconds", Kind::Histogram, "Request latency");
        text.sample(
            "request_seconds",
            "_bucket",
            &[("le", "0.5".to_owned())],
            2.0,
        );
        text.exemplar(&BucketExemplar {
            trace_id: 0xab,
            latency_ns: 412_000_000,
            at_unix_ns: 1_700_000_000_250_000_000,
        });
        assert_eq!(
            text.0,
            "# HELP loadlab_requests_sent Sent \\\"so far\\\"\n\
             # TYPE loadlab_requests_sent counter\n\
             loadlab_requests_sent_total 3\n\
             # HELP request_bytes_in Bytes\n# TYPE request_bytes_in unknown\n\
             # HELP request_seconds Request latency\n# TYPE request_seconds histogram\n\
             request_seconds_bucket{le=\"0.5\"} 2 # {trace_id=\"000000000000000000000000000000ab\"} 0.412 1700000000.250\n"
        );
    }
}
