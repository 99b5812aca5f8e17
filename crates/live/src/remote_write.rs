//! The Prometheus remote-write 1.0 encoding of the published [`Metrics`] (what
//! `-prometheus-remote-write` pushes, `push.rs`): a protobuf `WriteRequest` of the same
//! series `/metrics` shows, with the run's `run_id` and `job` labels; histograms go as
//! classic `_bucket`/`_sum`/`_count` series.

use crate::prometheus::Metrics;
use crate::sink::{Kind, Sink};

/// The remote-write request of `metrics`: every series with `extra` labels, all at
/// `timestamp_ms`, and each family's type and help as metadata.
pub(crate) fn write_request(
    metrics: &Metrics,
    extra: &[(&str, String)],
    timestamp_ms: i64,
) -> proto::WriteRequest {
    let mut sink = Series {
        extra,
        timestamp_ms,
        request: proto::WriteRequest::default(),
    };
    metrics.visit(&mut sink);
    sink.request
}

struct Series<'a> {
    extra: &'a [(&'a str, String)],
    timestamp_ms: i64,
    request: proto::WriteRequest,
}

impl Sink for Series<'_> {
    fn family(&mut self, name: &str, kind: Kind, help: &str) {
        self.request.metadata.push(proto::MetricMetadata {
            r#type: match kind {
                Kind::Counter => proto::COUNTER,
                Kind::Gauge => proto::GAUGE,
                Kind::Histogram => proto::HISTOGRAM,
            },
            metric_family_name: name.to_owned(),
            help: help.to_owned(),
            unit: String::new(),
        });
    }

    fn sample(&mut self, name: &str, suffix: &str, labels: &[(&str, String)], value: f64) {
        let mut all: Vec<proto::Label> = labels
            .iter()
            .chain(self.extra)
            .map(|(name, value)| proto::Label {
                name: (*name).to_owned(),
                value: value.clone(),
            })
            .collect();
        all.push(proto::Label {
            name: "__name__".to_owned(),
            value: format!("{name}{suffix}"),
        });
        // The spec asks for labels sorted by name.
        all.sort_by(|a, b| a.name.cmp(&b.name));
        self.request.timeseries.push(proto::TimeSeries {
            labels: all,
            samples: vec![proto::Sample {
                value,
                timestamp: self.timestamp_ms,
            }],
        });
    }
}

/// The remote-write 1.0 messages (prometheus/prompb `remote.proto` and `types.proto`),
/// written out by hand: only the fields a writer fills, with the spec's tags.
pub(crate) mod proto {
    /// `MetricMetadata.MetricType` values.
    pub const COUNTER: i32 = 1;
    pub const GAUGE: i32 = 2;
    pub const HISTOGRAM: i32 = 3;

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct WriteRequest {
        #[prost(message, repeated, tag = "1")]
        pub timeseries: Vec<TimeSeries>,
        #[prost(message, repeated, tag = "3")]
        pub metadata: Vec<MetricMetadata>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct TimeSeries {
        #[prost(message, repeated, tag = "1")]
        pub labels: Vec<Label>,
        #[prost(message, repeated, tag = "2")]
        pub samples: Vec<Sample>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Label {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(string, tag = "2")]
        pub value: String,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Sample {
        #[prost(double, tag = "1")]
        pub value: f64,
        #[prost(int64, tag = "2")]
        pub timestamp: i64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct MetricMetadata {
        #[prost(int32, tag = "1")]
        pub r#type: i32,
        #[prost(string, tag = "2")]
        pub metric_family_name: String,
        #[prost(string, tag = "4")]
        pub help: String,
        #[prost(string, tag = "5")]
        pub unit: String,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn pushes_carry_the_flow_checks_as_the_scrape_does() {
        let metrics = crate::prometheus::tests::flow_run().handle().metrics();
        let request = write_request(&metrics, &[("run_id", "run-1".to_owned())], 7);
        let checks: Vec<(Vec<(&str, &str)>, f64)> = request
            .timeseries
            .iter()
            .filter(|series| {
                (series.labels.iter())
                    .any(|l| l.name == "__name__" && l.value == "loadlab_checks_total")
            })
            .map(|series| {
                let labels = (series.labels.iter())
                    .map(|l| (l.name.as_str(), l.value.as_str()))
                    .collect();
                (labels, series.samples[0].value)
            })
            .collect();
        assert_eq!(checks.len(), 8, "4 checks, pass and fail each");
        let (labels, value) = &checks[3];
        assert_eq!(
            labels,
            &[
                ("__name__", "loadlab_checks_total"),
                ("check", "status 200"),
                ("result", "fail"),
                ("run_id", "run-1"),
                ("scenario", "shop"),
                ("step", "list"),
            ],
            "sorted by name"
        );
        assert_eq!(*value, 1.0);
        let family = (request.metadata.iter())
            .find(|m| m.metric_family_name == "loadlab_checks_total")
            .unwrap();
        assert_eq!(family.r#type, proto::COUNTER);
    }
}
