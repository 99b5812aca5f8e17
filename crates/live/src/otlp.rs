//! The OTLP encoding of the published [`Metrics`] (what `-otlp-endpoint` pushes,
//! `push.rs`): an `ExportMetricsServiceRequest` (HTTP/protobuf) of the same families
//! and labels `/metrics` shows, read through the same [`Sink`]. Counters become
//! monotonic cumulative sums, gauges gauges, histograms explicit-bucket histograms
//! (the `_bucket` series' cumulative counts taken back to per-bucket counts) with
//! their trace exemplars; the run's `service.name` and `run_id` are resource
//! attributes. Every point starts at the run's start.

use crate::exemplar::BucketExemplar;
use crate::prometheus::Metrics;
use crate::sink::{Kind, Sink};

/// The export request of `metrics` at `now_unix_ns`, with `resource` attributes.
pub(crate) fn export_request(
    metrics: &Metrics,
    resource: &[(&str, String)],
    now_unix_ns: u64,
) -> proto::ExportMetricsServiceRequest {
    let mut sink = Points {
        start_unix_ns: metrics.start_unix_ns(),
        now_unix_ns,
        metrics: Vec::new(),
        bucket_seen: None,
    };
    metrics.visit(&mut sink);
    proto::ExportMetricsServiceRequest {
        resource_metrics: vec![proto::ResourceMetrics {
            resource: Some(proto::Resource {
                attributes: attributes(resource),
            }),
            scope_metrics: vec![proto::ScopeMetrics {
                scope: Some(proto::InstrumentationScope::loadlab()),
                metrics: sink.metrics,
            }],
        }],
    }
}

/// What a Collector's answer says it dropped (its `partial_success`), if anything.
pub(crate) fn rejected(answer: &[u8]) -> Option<String> {
    use prost::Message;
    let answer = proto::ExportMetricsServiceResponse::decode(answer).ok()?;
    let partial = answer.partial_success?;
    (partial.rejected_data_points > 0 || !partial.error_message.is_empty()).then(|| {
        format!(
            "the collector rejected {} data points: {}",
            partial.rejected_data_points, partial.error_message
        )
    })
}

/// String attributes, as OTLP carries them.
pub(crate) fn attributes(labels: &[(&str, String)]) -> Vec<proto::KeyValue> {
    (labels.iter())
        .map(|(key, value)| proto::KeyValue {
            key: (*key).to_owned(),
            value: Some(proto::AnyValue {
                string_value: Some(value.clone()),
                int_value: None,
            }),
        })
        .collect()
}

struct Points {
    start_unix_ns: u64,
    now_unix_ns: u64,
    metrics: Vec<proto::Metric>,
    /// Within a histogram's point: the cumulative count of the last `_bucket` read.
    bucket_seen: Option<u64>,
}

impl Points {
    fn number(&self, labels: &[(&str, String)], value: f64) -> proto::NumberDataPoint {
        proto::NumberDataPoint {
            attributes: attributes(labels),
            start_time_unix_nano: self.start_unix_ns,
            time_unix_nano: self.now_unix_ns,
            as_double: Some(value),
        }
    }

    /// A `_bucket`, `_sum` or `_count` series of the current histogram family.
    fn histogram(&mut self, suffix: &str, labels: &[(&str, String)], value: f64) {
        let (start, now) = (self.start_unix_ns, self.now_unix_ns);
        let Some(histogram) = self.metrics.last_mut().and_then(|m| m.histogram.as_mut()) else {
            return;
        };
        // Counts are whole numbers in f64; `as` saturates, never panics.
        let count = value as u64;
        match suffix {
            "_bucket" => {
                let (le, labels) = labels
                    .split_last()
                    .map_or(("+Inf", labels), |(le, rest)| (le.1.as_str(), rest));
                let seen = match self.bucket_seen {
                    Some(seen) => seen,
                    None => {
                        histogram.data_points.push(proto::HistogramDataPoint {
                            attributes: attributes(labels),
                            start_time_unix_nano: start,
                            time_unix_nano: now,
                            ..proto::HistogramDataPoint::default()
                        });
                        0
                    }
                };
                let Some(point) = histogram.data_points.last_mut() else {
                    return;
                };
                // The last bucket (`+Inf`, which Rust would parse) has no bound.
                if let Some(bound) = le.parse::<f64>().ok().filter(|b| b.is_finite()) {
                    point.explicit_bounds.push(bound);
                }
                point.bucket_counts.push(count.saturating_sub(seen));
                self.bucket_seen = Some(count);
            }
            "_sum" => {
                if let Some(point) = histogram.data_points.last_mut() {
                    point.sum = Some(value);
                }
            }
            _ => {
                if let Some(point) = histogram.data_points.last_mut() {
                    point.count = count;
                }
                self.bucket_seen = None;
            }
        }
    }
}

impl Sink for Points {
    fn family(&mut self, name: &str, kind: Kind, help: &str) {
        let mut metric = proto::Metric {
            name: name.to_owned(),
            description: help.to_owned(),
            ..proto::Metric::default()
        };
        match kind {
            Kind::Counter => {
                metric.sum = Some(proto::Sum {
                    data_points: Vec::new(),
                    aggregation_temporality: proto::CUMULATIVE,
                    is_monotonic: true,
                });
            }
            Kind::Gauge => metric.gauge = Some(proto::Gauge::default()),
            Kind::Histogram => {
                metric.histogram = Some(proto::Histogram {
                    data_points: Vec::new(),
                    aggregation_temporality: proto::CUMULATIVE,
                });
            }
        }
        self.metrics.push(metric);
    }

    fn sample(&mut self, _name: &str, suffix: &str, labels: &[(&str, String)], value: f64) {
        let point = self.number(labels, value);
        let Some(metric) = self.metrics.last_mut() else {
            return;
        };
        if let Some(sum) = metric.sum.as_mut() {
            sum.data_points.push(point);
        } else if let Some(gauge) = metric.gauge.as_mut() {
            gauge.data_points.push(point);
        } else {
            self.histogram(suffix, labels, value);
        }
    }

    fn exemplar(&mut self, exemplar: &BucketExemplar) {
        let point = (self.metrics.last_mut())
            .and_then(|m| m.histogram.as_mut())
            .and_then(|h| h.data_points.last_mut());
        if let Some(point) = point {
            point.exemplars.push(proto::Exemplar {
                time_unix_nano: exemplar.at_unix_ns,
                as_double: Some(exemplar.latency_ns as f64 / 1e9),
                trace_id: exemplar.trace_id.to_be_bytes().to_vec(),
            });
        }
    }
}

/// The OTLP metrics messages (opentelemetry-proto's `metrics/v1/metrics.proto`,
/// `common/v1`, `resource/v1` and `collector/metrics/v1`), written out by hand: only
/// the fields a writer of these series fills, with the spec's tags. A `oneof` is its
/// members as optional fields, one set (the same bytes on the wire).
pub(crate) mod proto {
    /// `AggregationTemporality.AGGREGATION_TEMPORALITY_CUMULATIVE`.
    pub const CUMULATIVE: i32 = 2;

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ExportMetricsServiceRequest {
        #[prost(message, repeated, tag = "1")]
        pub resource_metrics: Vec<ResourceMetrics>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ExportMetricsServiceResponse {
        #[prost(message, optional, tag = "1")]
        pub partial_success: Option<ExportMetricsPartialSuccess>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ExportMetricsPartialSuccess {
        #[prost(int64, tag = "1")]
        pub rejected_data_points: i64,
        #[prost(string, tag = "2")]
        pub error_message: String,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ResourceMetrics {
        #[prost(message, optional, tag = "1")]
        pub resource: Option<Resource>,
        #[prost(message, repeated, tag = "2")]
        pub scope_metrics: Vec<ScopeMetrics>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Resource {
        #[prost(message, repeated, tag = "1")]
        pub attributes: Vec<KeyValue>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ScopeMetrics {
        #[prost(message, optional, tag = "1")]
        pub scope: Option<InstrumentationScope>,
        #[prost(message, repeated, tag = "2")]
        pub metrics: Vec<Metric>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct InstrumentationScope {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(string, tag = "2")]
        pub version: String,
    }

    impl InstrumentationScope {
        /// loadlab's own, at this version.
        pub fn loadlab() -> InstrumentationScope {
            InstrumentationScope {
                name: "loadlab".to_owned(),
                version: env!("CARGO_PKG_VERSION").to_owned(),
            }
        }
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct KeyValue {
        #[prost(string, tag = "1")]
        pub key: String,
        #[prost(message, optional, tag = "2")]
        pub value: Option<AnyValue>,
    }

    /// The `string_value` and `int_value` members of `AnyValue`'s oneof (one set).
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct AnyValue {
        #[prost(string, optional, tag = "1")]
        pub string_value: Option<String>,
        #[prost(int64, optional, tag = "3")]
        pub int_value: Option<i64>,
    }

    /// `Metric` with its `data` oneof's gauge, sum and histogram members.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Metric {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(string, tag = "2")]
        pub description: String,
        #[prost(string, tag = "3")]
        pub unit: String,
        #[prost(message, optional, tag = "5")]
        pub gauge: Option<Gauge>,
        #[prost(message, optional, tag = "7")]
        pub sum: Option<Sum>,
        #[prost(message, optional, tag = "9")]
        pub histogram: Option<Histogram>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Gauge {
        #[prost(message, repeated, tag = "1")]
        pub data_points: Vec<NumberDataPoint>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Sum {
        #[prost(message, repeated, tag = "1")]
        pub data_points: Vec<NumberDataPoint>,
        #[prost(int32, tag = "2")]
        pub aggregation_temporality: i32,
        #[prost(bool, tag = "3")]
        pub is_monotonic: bool,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Histogram {
        #[prost(message, repeated, tag = "1")]
        pub data_points: Vec<HistogramDataPoint>,
        #[prost(int32, tag = "2")]
        pub aggregation_temporality: i32,
    }

    /// `NumberDataPoint` with the `as_double` member of its `value` oneof.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct NumberDataPoint {
        #[prost(message, repeated, tag = "7")]
        pub attributes: Vec<KeyValue>,
        #[prost(fixed64, tag = "2")]
        pub start_time_unix_nano: u64,
        #[prost(fixed64, tag = "3")]
        pub time_unix_nano: u64,
        #[prost(double, optional, tag = "4")]
        pub as_double: Option<f64>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct HistogramDataPoint {
        #[prost(message, repeated, tag = "9")]
        pub attributes: Vec<KeyValue>,
        #[prost(fixed64, tag = "2")]
        pub start_time_unix_nano: u64,
        #[prost(fixed64, tag = "3")]
        pub time_unix_nano: u64,
        #[prost(fixed64, tag = "4")]
        pub count: u64,
        #[prost(double, optional, tag = "5")]
        pub sum: Option<f64>,
        #[prost(fixed64, repeated, tag = "6")]
        pub bucket_counts: Vec<u64>,
        #[prost(double, repeated, tag = "7")]
        pub explicit_bounds: Vec<f64>,
        #[prost(message, repeated, tag = "8")]
        pub exemplars: Vec<Exemplar>,
    }

    /// `Exemplar` with the `as_double` member of its `value` oneof.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Exemplar {
        #[prost(fixed64, tag = "2")]
        pub time_unix_nano: u64,
        #[prost(double, optional, tag = "3")]
        pub as_double: Option<f64>,
        #[prost(bytes = "vec", tag = "5")]
        pub trace_id: Vec<u8>,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use prost::Message;

    use super::*;

    fn string(kv: &proto::KeyValue) -> (&str, &str) {
        let value = kv.value.as_ref().and_then(|v| v.string_value.as_deref());
        (kv.key.as_str(), value.unwrap_or(""))
    }

    #[test]
    fn carries_the_scrapes_families_with_their_labels_and_kinds() {
        let metrics = crate::push::tests::metrics_with_requests().metrics();
        let resource = [("service.name", "loadlab".to_owned())];
        let request = export_request(&metrics, &resource, 9);
        // Through the wire and back, as a Collector reads it.
        let request =
            proto::ExportMetricsServiceRequest::decode(request.encode_to_vec().as_slice()).unwrap();
        let resource_metrics = &request.resource_metrics[0];
        let attributes = &resource_metrics.resource.as_ref().unwrap().attributes;
        assert_eq!(string(&attributes[0]), ("service.name", "loadlab"));
        let all = &resource_metrics.scope_metrics[0].metrics;
        let names: Vec<&str> = all.iter().map(|m| m.name.as_str()).collect();
        let scraped = crate::exposition::render_text(&metrics);
        for line in scraped.lines().filter(|l| l.starts_with("# TYPE ")) {
            let name = line.split(' ').nth(2).unwrap();
            assert!(names.contains(&name), "{name} missing from {names:?}");
        }
        assert_eq!(names.len(), scraped.matches("# TYPE ").count());

        let latency = all.iter().find(|m| m.name == "request_seconds").unwrap();
        let point = &latency.histogram.as_ref().unwrap().data_points[0];
        let labels: Vec<(&str, &str)> = point.attributes.iter().map(string).collect();
        assert_eq!(
            labels,
            [
                ("method", "GET"),
                ("url", "http://127.0.0.1:1/x"),
                ("status", "0")
            ]
        );
        assert_eq!(point.count, 2);
        assert_eq!(point.explicit_bounds.len() + 1, point.bucket_counts.len());
        assert_eq!(point.explicit_bounds[0], 0.005);
        assert_eq!(point.bucket_counts.iter().sum::<u64>(), 2, "per bucket");
        assert_eq!(point.bucket_counts[0], 2, "latency 0 is in the first");
        assert_eq!(point.time_unix_nano, 9);

        let completed = (all.iter())
            .find(|m| m.name == "loadlab_requests_completed_total")
            .unwrap();
        let sum = completed.sum.as_ref().unwrap();
        assert!(sum.is_monotonic);
        assert_eq!(sum.aggregation_temporality, proto::CUMULATIVE);
        assert_eq!(sum.data_points[0].as_double, Some(2.0));
        let finished = all
            .iter()
            .find(|m| m.name == "loadlab_run_finished")
            .unwrap();
        let gauge = finished.gauge.as_ref().unwrap();
        assert_eq!(gauge.data_points[0].as_double, Some(1.0));
    }

    #[test]
    fn a_collectors_partial_success_is_said() {
        let rows: [(Option<proto::ExportMetricsPartialSuccess>, Option<&str>); 3] = [
            (None, None),
            (Some(proto::ExportMetricsPartialSuccess::default()), None),
            (
                Some(proto::ExportMetricsPartialSuccess {
                    rejected_data_points: 3,
                    error_message: "bad name".to_owned(),
                }),
                Some("the collector rejected 3 data points: bad name"),
            ),
        ];
        for (partial, want) in rows {
            let answer = proto::ExportMetricsServiceResponse {
                partial_success: partial,
            };
            assert_eq!(rejected(&answer.encode_to_vec()).as_deref(), want);
        }
        assert_eq!(
            rejected(b"\xff\xff garbage"),
            None,
            "not protobuf: not judged"
        );
    }
}
