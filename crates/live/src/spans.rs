//! [`ClientSpans`]: under `attack -trace -trace-spans`, a client span per traced
//! request, so a trace starts at loadlab: its trace id and span id are the ones the
//! request's `traceparent` carried (the server's span is its child), it starts at the
//! request's intended send time and lasts its latency, as loadlab measured it.
//!
//! The spans are made on the engine's collector thread from the records (the ids are
//! the sampler's pure function of attack and seq, computed again here: workers carry
//! nothing more) and queued in a [`SpanQueue`], bounded: past [`MAX_QUEUED_SPANS`] a
//! span is dropped and counted. The push thread (`push.rs`) takes the queue every few
//! seconds and sends it to the OTLP endpoint's `/v1/traces`.

use std::sync::{Arc, Mutex, PoisonError};

use engine::{Clock, RunConfig, RunObserver};
use record::{ErrorEntry, GeneratorStats, Record, TargetInfo};

use crate::exemplar::Tracing;
use crate::otlp::proto::{AnyValue, InstrumentationScope, KeyValue, Resource};

/// Spans waiting for the push thread beyond this many are dropped (and counted).
pub const MAX_QUEUED_SPANS: usize = 65_536;

/// The spans made since the last push; shared by [`ClientSpans`] and the push thread.
#[derive(Clone, Default)]
pub struct SpanQueue(Arc<Mutex<Queued>>);

#[derive(Default)]
struct Queued {
    spans: Vec<proto::Span>,
    dropped: u64,
}

impl SpanQueue {
    /// Spans dropped so far because the queue was full (the endpoint too slow).
    pub fn dropped(&self) -> u64 {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .dropped
    }

    /// Takes the queued spans as an OTLP export with `resource` attributes; `None`
    /// when none are queued.
    pub(crate) fn export(&self, resource: &[(&str, String)]) -> Option<Vec<u8>> {
        use prost::Message;
        let spans = {
            let mut queued = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            std::mem::take(&mut queued.spans)
        };
        if spans.is_empty() {
            return None;
        }
        let request = proto::ExportTraceServiceRequest {
            resource_spans: vec![proto::ResourceSpans {
                resource: Some(Resource {
                    attributes: crate::otlp::attributes(resource),
                }),
                scope_spans: vec![proto::ScopeSpans {
                    scope: Some(InstrumentationScope::loadlab()),
                    spans,
                }],
            }],
        };
        Some(request.encode_to_vec())
    }

    fn push(&self, spans: &mut Vec<proto::Span>) {
        let mut queued = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let room = MAX_QUEUED_SPANS.saturating_sub(queued.spans.len());
        let dropped = spans.len().saturating_sub(room);
        queued.dropped += dropped as u64;
        spans.truncate(room);
        queued.spans.append(spans);
    }
}

/// What a Collector's answer says it dropped (its `partial_success`), if anything.
pub(crate) fn rejected(answer: &[u8]) -> Option<String> {
    use prost::Message;
    let answer = proto::ExportTraceServiceResponse::decode(answer).ok()?;
    let partial = answer.partial_success?;
    (partial.rejected_spans > 0 || !partial.error_message.is_empty()).then(|| {
        format!(
            "the endpoint rejected {} spans: {}",
            partial.rejected_spans, partial.error_message
        )
    })
}

/// The observer that makes the spans; see the module docs.
pub struct ClientSpans {
    tracing: Option<Tracing>,
    /// (method, url) of each target id, as the run's target table grows.
    targets: Vec<(String, String)>,
    /// Error id - 1 -> its kind's name.
    errors: Vec<&'static str>,
    /// This batch's spans, reused.
    batch: Vec<proto::Span>,
    queue: SpanQueue,
}

impl ClientSpans {
    /// Watches a run of `config`; makes no span when it does not trace.
    pub fn new(config: &RunConfig) -> ClientSpans {
        ClientSpans {
            tracing: Tracing::of(config),
            targets: Vec::new(),
            errors: Vec::new(),
            batch: Vec::new(),
            queue: SpanQueue::default(),
        }
    }

    /// Where the push thread takes the spans.
    pub fn queue(&self) -> SpanQueue {
        self.queue.clone()
    }

    /// The span of `record`, when it carried our ids.
    fn span(&self, record: &Record) -> Option<proto::Span> {
        let ids = self.tracing.as_ref()?.ids(record)?;
        let (method, url) = (self.targets.get(record.target as usize))
            .map_or(("", ""), |(m, u)| (m.as_str(), u.as_str()));
        let mut attributes = vec![
            string("http.request.method", method),
            string("url.full", url),
        ];
        let error = (record.error as usize)
            .checked_sub(1)
            .map(|id| self.errors.get(id).copied().unwrap_or("error"));
        if record.status > 0 {
            attributes.push(KeyValue {
                key: "http.response.status_code".to_owned(),
                value: Some(AnyValue {
                    string_value: None,
                    int_value: Some(i64::from(record.status)),
                }),
            });
        }
        // OpenTelemetry's HTTP conventions: a client span fails on an error or a 4xx/5xx.
        let failed = error.or((record.status >= 400).then_some("status"));
        if let Some(kind) = error {
            attributes.push(string("error.type", kind));
        }
        Some(proto::Span {
            trace_id: ids.trace_id.to_be_bytes().to_vec(),
            span_id: ids.span_id.to_be_bytes().to_vec(),
            name: method.to_owned(),
            kind: proto::SPAN_KIND_CLIENT,
            start_time_unix_nano: record.intended_unix_ns,
            end_time_unix_nano: record.end_unix_ns(),
            attributes,
            status: failed.map(|why| proto::Status {
                message: why.to_owned(),
                code: proto::STATUS_CODE_ERROR,
            }),
        })
    }
}

fn string(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue {
            string_value: Some(value.to_owned()),
            int_value: None,
        }),
    }
}

impl RunObserver for ClientSpans {
    fn start(&mut self, _clock: Clock) {}

    fn stats(&mut self, _stats: &GeneratorStats) {}

    fn targets(&mut self, first_index: usize, new: &[TargetInfo]) {
        self.targets.truncate(first_index);
        (self.targets).extend(new.iter().map(|t| (t.method.clone(), t.url.clone())));
    }

    fn records(&mut self, records: &[Record]) {
        if self.tracing.is_none() {
            return;
        }
        for record in records {
            if let Some(span) = self.span(record) {
                self.batch.push(span);
            }
        }
        // One lock per batch of records, not per record.
        if !self.batch.is_empty() {
            self.queue.push(&mut self.batch);
        }
    }

    fn errors(&mut self, first_index: usize, new: &[ErrorEntry]) {
        self.errors.truncate(first_index);
        (self.errors).extend(new.iter().map(|entry| entry.kind.name()));
    }
}

/// The OTLP trace messages (opentelemetry-proto's `trace/v1/trace.proto` and
/// `collector/trace/v1`), written out by hand: only the fields a client span of
/// loadlab fills, with the spec's tags.
pub(crate) mod proto {
    use crate::otlp::proto::{InstrumentationScope, KeyValue, Resource};

    /// `Span.SpanKind.SPAN_KIND_CLIENT`.
    pub const SPAN_KIND_CLIENT: i32 = 3;
    /// `Status.StatusCode.STATUS_CODE_ERROR`.
    pub const STATUS_CODE_ERROR: i32 = 2;

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ExportTraceServiceRequest {
        #[prost(message, repeated, tag = "1")]
        pub resource_spans: Vec<ResourceSpans>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ExportTraceServiceResponse {
        #[prost(message, optional, tag = "1")]
        pub partial_success: Option<ExportTracePartialSuccess>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ExportTracePartialSuccess {
        #[prost(int64, tag = "1")]
        pub rejected_spans: i64,
        #[prost(string, tag = "2")]
        pub error_message: String,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ResourceSpans {
        #[prost(message, optional, tag = "1")]
        pub resource: Option<Resource>,
        #[prost(message, repeated, tag = "2")]
        pub scope_spans: Vec<ScopeSpans>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ScopeSpans {
        #[prost(message, optional, tag = "1")]
        pub scope: Option<InstrumentationScope>,
        #[prost(message, repeated, tag = "2")]
        pub spans: Vec<Span>,
    }

    /// A root span: no parent, no trace state.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Span {
        #[prost(bytes = "vec", tag = "1")]
        pub trace_id: Vec<u8>,
        #[prost(bytes = "vec", tag = "2")]
        pub span_id: Vec<u8>,
        #[prost(string, tag = "5")]
        pub name: String,
        #[prost(int32, tag = "6")]
        pub kind: i32,
        #[prost(fixed64, tag = "7")]
        pub start_time_unix_nano: u64,
        #[prost(fixed64, tag = "8")]
        pub end_time_unix_nano: u64,
        #[prost(message, repeated, tag = "9")]
        pub attributes: Vec<KeyValue>,
        #[prost(message, optional, tag = "15")]
        pub status: Option<Status>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Status {
        #[prost(string, tag = "2")]
        pub message: String,
        #[prost(int32, tag = "3")]
        pub code: i32,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use prost::Message;

    use super::*;

    fn traced_run(sample: f64) -> RunConfig {
        let target = workload::Target::get("GET", url::Url::parse("http://127.0.0.1:1/x").unwrap());
        let mut config = RunConfig::single(engine::AttackConfig::new(
            "a",
            vec![target],
            workload::Plan {
                pacing: workload::Pacing::Open(workload::Schedule::constant(10.0)),
                duration_ns: None,
                max_requests: None,
                shard: workload::Shard::WHOLE,
            },
        ));
        config.settings.trace = Some(workload::TraceSettings { sample });
        config.settings.seed = 9;
        config
    }

    fn info() -> TargetInfo {
        TargetInfo {
            method: "GET".to_owned(),
            url: "http://127.0.0.1:1/x".to_owned(),
            step: None,
            checks: Vec::new(),
        }
    }

    fn exported(queue: &SpanQueue) -> Vec<proto::Span> {
        let body = queue.export(&[("service.name", "loadlab".to_owned())]);
        body.map_or_else(Vec::new, |body| {
            let request = proto::ExportTraceServiceRequest::decode(body.as_slice()).unwrap();
            request.resource_spans[0].scope_spans[0].spans.clone()
        })
    }

    #[test]
    fn a_traced_request_is_a_client_span_with_the_ids_it_sent() {
        let config = traced_run(1.0);
        let mut spans = ClientSpans::new(&config);
        spans.targets(0, &[info()]);
        spans.errors(
            0,
            &[ErrorEntry {
                kind: record::ErrorKind::Timeout,
                text: "timeout".to_owned(),
            }],
        );
        let ok = Record {
            seq: 3,
            status: 200,
            intended_unix_ns: 1_000,
            latency_ns: 500,
            ..Record::default()
        };
        let failed = Record {
            seq: 4,
            error: 1,
            ..ok
        };
        spans.records(&[ok, failed]);
        let got = exported(&spans.queue());
        assert_eq!(got.len(), 2);
        let sampler = workload::TraceSampler::new(workload::TraceSettings { sample: 1.0 }, 9);
        let ids = sampler.ids(0, 3).unwrap();
        assert_eq!(got[0].trace_id, ids.trace_id.to_be_bytes());
        assert_eq!(got[0].span_id, ids.span_id.to_be_bytes());
        assert_eq!(got[0].kind, proto::SPAN_KIND_CLIENT);
        assert_eq!(
            (got[0].start_time_unix_nano, got[0].end_time_unix_nano),
            (1_000, 1_500)
        );
        assert_eq!(got[0].name, "GET");
        assert_eq!(got[0].status, None);
        let status = got[1].status.as_ref().unwrap();
        assert_eq!(
            (status.code, status.message.as_str()),
            (proto::STATUS_CODE_ERROR, "timeout")
        );
        assert!(exported(&spans.queue()).is_empty(), "taken once");
    }

    #[test]
    fn untraced_requests_make_no_span_and_a_full_queue_drops_and_counts() {
        let untraced = {
            let mut config = traced_run(1.0);
            config.settings.trace = None;
            config
        };
        let mut none = ClientSpans::new(&untraced);
        none.records(&[Record::default()]);
        assert!(exported(&none.queue()).is_empty());

        let sampled = ClientSpans::new(&traced_run(0.5));
        let mut sampled = sampled;
        let records: Vec<Record> = (0..200)
            .map(|seq| Record {
                seq,
                ..Record::default()
            })
            .collect();
        sampled.records(&records);
        let made = exported(&sampled.queue()).len();
        assert!((50..150).contains(&made), "about half: {made}");

        let mut full = ClientSpans::new(&traced_run(1.0));
        let many: Vec<Record> = (0..MAX_QUEUED_SPANS as u64 + 10)
            .map(|seq| Record {
                seq,
                ..Record::default()
            })
            .collect();
        full.records(&many);
        assert_eq!(full.queue().dropped(), 10);
        assert_eq!(exported(&full.queue()).len(), MAX_QUEUED_SPANS);
    }
}
