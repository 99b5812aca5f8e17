//! [`Push`]: the thread behind `-prometheus-remote-write` and `-otlp-endpoint`. Every
//! few seconds (and once more at the end) it reads the published [`Metrics`] copy and
//! POSTs the same series `/metrics` shows, in its [`PushProtocol`]'s encoding: a
//! Prometheus remote-write 1.0 request (`remote_write.rs`, snappy-compressed) or an
//! OTLP/HTTP protobuf export to a Collector's `/v1/metrics` (`otlp.rs`).
//!
//! It never touches the collector: a receiver that is down, answers 500 or hangs
//! costs this thread a bounded timeout per push and a warning (the first failure at
//! once, then a count at most every [`WARN_EVERY`]), never the run.

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use prost::Message;

use crate::LiveError;
use crate::prometheus::{Metrics, PrometheusHandle};
use crate::spans::SpanQueue;

/// After the first failed push, failures are summed up at most this often.
pub const WARN_EVERY: Duration = Duration::from_secs(30);
/// A receiver's error answer is read up to this size (its first line is shown).
const MAX_ANSWER_BYTES: usize = 64 << 10;

/// A request's header lines, (name, value).
type Headers = &'static [(&'static str, &'static str)];
/// An OTLP/HTTP protobuf export's.
const OTLP_HEADERS: Headers = &[
    ("Content-Type", "application/x-protobuf"),
    ("User-Agent", concat!("loadlab/", env!("CARGO_PKG_VERSION"))),
];

/// What a push speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushProtocol {
    /// Prometheus remote write 1.0 to the URL as given (`-prometheus-remote-write`).
    RemoteWrite,
    /// OTLP/HTTP protobuf to a Collector: the endpoint given plus `/v1/metrics`, as
    /// OpenTelemetry's SDKs read `OTEL_EXPORTER_OTLP_ENDPOINT` (`-otlp-endpoint`).
    Otlp,
    /// The client spans of traced requests (`-trace-spans`), OTLP/HTTP protobuf to the
    /// endpoint plus `/v1/traces`; only [`Push::start_spans`] speaks it.
    OtlpSpans,
}

impl PushProtocol {
    /// The flag that asked for it, for messages.
    pub fn flag(self) -> &'static str {
        match self {
            PushProtocol::RemoteWrite => "-prometheus-remote-write",
            PushProtocol::Otlp => "-otlp-endpoint",
            PushProtocol::OtlpSpans => "-trace-spans",
        }
    }

    /// The URL posted to, from the one given.
    fn target(self, mut url: url::Url) -> url::Url {
        let signal = match self {
            PushProtocol::RemoteWrite => return url,
            PushProtocol::Otlp => "metrics",
            PushProtocol::OtlpSpans => "traces",
        };
        let path = format!("{}/v1/{signal}", url.path().trim_end_matches('/'));
        url.set_path(&path);
        url
    }

    /// The body of one push of `metrics`, and its headers.
    fn body(
        self,
        metrics: &Metrics,
        options: &PushOptions,
        timestamp_ms: i64,
    ) -> Result<(Vec<u8>, Headers), String> {
        match self {
            PushProtocol::RemoteWrite => {
                let extra = [
                    ("job", options.job.clone()),
                    ("run_id", options.run_id.clone()),
                ];
                let request = crate::remote_write::write_request(metrics, &extra, timestamp_ms);
                let body = snap::raw::Encoder::new()
                    .compress_vec(&request.encode_to_vec())
                    .map_err(|err| format!("snappy: {err}"))?;
                let headers: Headers = &[
                    ("Content-Encoding", "snappy"),
                    ("Content-Type", "application/x-protobuf"),
                    ("User-Agent", concat!("loadlab/", env!("CARGO_PKG_VERSION"))),
                    ("X-Prometheus-Remote-Write-Version", "0.1.0"),
                ];
                Ok((body, headers))
            }
            PushProtocol::Otlp | PushProtocol::OtlpSpans => {
                let now_ns = u64::try_from(timestamp_ms).unwrap_or(0) * 1_000_000;
                let request = crate::otlp::export_request(metrics, &options.resource(), now_ns);
                Ok((request.encode_to_vec(), OTLP_HEADERS))
            }
        }
    }

    /// What an accepted push's answer says went wrong, if anything.
    fn accepted(self, answer: &[u8]) -> Result<(), String> {
        match self {
            PushProtocol::RemoteWrite => Ok(()),
            PushProtocol::Otlp => crate::otlp::rejected(answer).map_or(Ok(()), Err),
            PushProtocol::OtlpSpans => crate::spans::rejected(answer).map_or(Ok(()), Err),
        }
    }

    fn example(self) -> &'static str {
        match self {
            PushProtocol::RemoteWrite => {
                "expected http://HOST:PORT/PATH, e.g. http://127.0.0.1:9090/api/v1/write"
            }
            PushProtocol::Otlp | PushProtocol::OtlpSpans => {
                "expected http://HOST:PORT, e.g. http://127.0.0.1:4318"
            }
        }
    }
}

/// Where and how to push.
#[derive(Debug, Clone)]
pub struct PushOptions {
    /// What to speak.
    pub protocol: PushProtocol,
    /// The receiver, e.g. `http://127.0.0.1:9090/api/v1/write` or, for OTLP, the
    /// Collector's endpoint `http://127.0.0.1:4318`.
    pub url: String,
    /// How often to push.
    pub every: Duration,
    /// How long one push may take (connect, send, answer).
    pub timeout: Duration,
    /// The `run_id` label of every series (a resource attribute in OTLP).
    pub run_id: String,
    /// The `job` label of every series (OTLP's `service.name`).
    pub job: String,
    /// Extra headers of every OTLP push (`-otlp-headers`, `OTEL_EXPORTER_OTLP_HEADERS`):
    /// credentials, so never shown.
    pub headers: Vec<(String, String)>,
    /// The TLS client configuration of an `https://` URL (the engine's).
    pub tls: Option<Arc<rustls::ClientConfig>>,
}

/// Reads OpenTelemetry's `OTEL_EXPORTER_OTLP_HEADERS` format: `key=value` pairs
/// separated by commas, each side percent-decoded and trimmed. A header's value is a
/// credential: errors name the pair by its place and key, never its value.
pub fn otlp_headers(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut headers = Vec::new();
    for (index, pair) in text.split(',').enumerate() {
        let place = index + 1;
        if pair.trim().is_empty() {
            continue;
        }
        let Some((name, value)) = pair.split_once('=') else {
            return Err(format!(
                "pair {place} has no '=': want key=value,key2=value2"
            ));
        };
        let name = percent_decode(name.trim())
            .filter(|name| is_token(name))
            .ok_or_else(|| format!("pair {place}: the key is not an HTTP header name"))?;
        let value = percent_decode(value.trim())
            .filter(|value| !value.bytes().any(|b| b.is_ascii_control() && b != b'\t'))
            .ok_or_else(|| {
                format!("pair {place} ({name}): the value is not percent-encoded text without control characters")
            })?;
        headers.push((name, value));
    }
    Ok(headers)
}

/// `%XX` escapes decoded; `None` for a broken escape or bytes that are not UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(text.len());
    let mut rest = text.as_bytes();
    while let Some((&byte, tail)) = rest.split_first() {
        if byte == b'%' {
            let hex = std::str::from_utf8(tail.get(..2)?).ok()?;
            bytes.push(u8::from_str_radix(hex, 16).ok()?);
            rest = &tail[2..];
        } else {
            bytes.push(byte);
            rest = tail;
        }
    }
    String::from_utf8(bytes).ok()
}

/// An HTTP token (RFC 9110 §5.6.2): what a header name must be.
fn is_token(text: &str) -> bool {
    !text.is_empty()
        && (text.bytes()).all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

impl PushOptions {
    /// OTLP's resource attributes: the job as `service.name`, and the run id.
    pub(crate) fn resource(&self) -> [(&'static str, String); 2] {
        [
            ("service.name", self.job.clone()),
            ("run_id", self.run_id.clone()),
        ]
    }
}

/// What a push thread reads.
enum Source {
    /// The published metrics, pushed whole each time.
    Metrics(PrometheusHandle),
    /// The client spans queued since the last push, taken each time.
    Spans(SpanQueue),
}

/// How the pushes went.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PushSummary {
    /// Pushes tried, the final one included.
    pub pushes: u64,
    /// Pushes that failed.
    pub failed: u64,
    /// Why the last failed push failed.
    pub last_error: Option<String>,
}

/// Warnings go here (the CLI prints them on stderr); called on the push thread.
pub type Warn = Box<dyn FnMut(&str) + Send>;

/// The push thread; [`Push::finish`] makes the final push and stops it.
pub struct Push {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<PushSummary>>,
}

impl Push {
    /// Checks the URL and starts pushing what `handle` publishes.
    pub fn start(
        options: PushOptions,
        handle: PrometheusHandle,
        warn: Warn,
    ) -> Result<Push, LiveError> {
        Push::spawn(options, Source::Metrics(handle), warn)
    }

    /// Checks the endpoint and starts pushing the client spans `queue` gathers
    /// ([`crate::ClientSpans`]) to its `/v1/traces`, whatever `options.protocol` says.
    pub fn start_spans(
        options: PushOptions,
        queue: SpanQueue,
        warn: Warn,
    ) -> Result<Push, LiveError> {
        let options = PushOptions {
            protocol: PushProtocol::OtlpSpans,
            ..options
        };
        Push::spawn(options, Source::Spans(queue), warn)
    }

    fn spawn(options: PushOptions, source: Source, warn: Warn) -> Result<Push, LiveError> {
        let url = check_url(options.protocol, &options.url)?;
        if url.scheme() == "https" && options.tls.is_none() {
            return Err(LiveError::PushUrl {
                flag: options.protocol.flag(),
                url: units::redact_url(&options.url),
                reason: "https:// needs a TLS configuration".to_owned(),
            });
        }
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let mut pusher = Pusher {
            shown_url: units::redact_url(&options.url),
            url,
            options,
            source,
            warn,
            summary: PushSummary::default(),
            last_timestamp_ms: 0,
            last_warning: None,
        };
        let thread = {
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name("loadlab-push".to_owned())
                .spawn(move || pusher.run(&stop))?
        };
        Ok(Push {
            stop,
            thread: Some(thread),
        })
    }

    /// Checks a receiver URL the way [`Push::start`] does, so a bad one is refused
    /// before the run reads its targets.
    pub fn check_url(protocol: PushProtocol, url: &str) -> Result<(), LiveError> {
        check_url(protocol, url).map(drop)
    }

    /// Makes the final push (of what was published last) and returns how the
    /// pushes went; takes at most one push timeout.
    pub fn finish(mut self) -> PushSummary {
        {
            let (stopped, wake) = &*self.stop;
            *stopped.lock().unwrap_or_else(PoisonError::into_inner) = true;
            wake.notify_all();
        }
        self.thread
            .take()
            .and_then(|thread| thread.join().ok())
            .unwrap_or_default()
    }
}

fn check_url(protocol: PushProtocol, text: &str) -> Result<url::Url, LiveError> {
    let bad = |reason: &str| LiveError::PushUrl {
        flag: protocol.flag(),
        url: units::redact_url(text),
        reason: reason.to_owned(),
    };
    let url =
        url::Url::parse(text).map_err(|err| bad(&format!("{err}; {}", protocol.example())))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad("only http:// and https:// are supported"));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(bad("the URL has no host"));
    }
    Ok(protocol.target(url))
}

struct Pusher {
    url: url::Url,
    /// The URL as warnings show it (passwords redacted).
    shown_url: String,
    options: PushOptions,
    source: Source,
    warn: Warn,
    summary: PushSummary,
    /// Samples of a series must have growing timestamps: each push is at least 1 ms
    /// after the previous one.
    last_timestamp_ms: i64,
    /// When failures were last summed up.
    last_warning: Option<Instant>,
}

impl Pusher {
    fn run(&mut self, stop: &(Mutex<bool>, Condvar)) -> PushSummary {
        let (stopped, wake) = stop;
        loop {
            let guard = stopped.lock().unwrap_or_else(PoisonError::into_inner);
            let (guard, _) = wake
                .wait_timeout_while(guard, self.options.every, |stopped| !*stopped)
                .unwrap_or_else(PoisonError::into_inner);
            let last = *guard;
            drop(guard);
            self.push_and_warn();
            if last {
                return self.summary.clone();
            }
        }
    }

    fn push_and_warn(&mut self) {
        let Err(reason) = self.push() else {
            return;
        };
        self.summary.failed += 1;
        let now = Instant::now();
        let message = match self.last_warning {
            None => format!(
                "{} {}: push failed: {reason}; the run goes on \
                 (further failures are summed up every {}s and at the end)",
                self.options.protocol.flag(),
                self.shown_url,
                WARN_EVERY.as_secs()
            ),
            Some(at) if now.duration_since(at) >= WARN_EVERY => format!(
                "{} {}: {} of {} pushes failed so far (last: {reason})",
                self.options.protocol.flag(),
                self.shown_url,
                self.summary.failed,
                self.summary.pushes
            ),
            Some(_) => String::new(),
        };
        if !message.is_empty() {
            (self.warn)(&message);
            self.last_warning = Some(now);
        }
        self.summary.last_error = Some(reason);
    }

    fn push(&mut self) -> Result<(), String> {
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| {
                i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
            });
        let timestamp_ms = now_ms.max(self.last_timestamp_ms + 1);
        self.last_timestamp_ms = timestamp_ms;
        let body = match &self.source {
            Source::Metrics(handle) => {
                (self.options.protocol).body(&handle.metrics(), &self.options, timestamp_ms)
            }
            Source::Spans(queue) => match queue.export(&self.options.resource()) {
                Some(body) => Ok((body, OTLP_HEADERS)),
                // Nothing traced since the last push: no request.
                None => return Ok(()),
            },
        };
        self.summary.pushes += 1;
        let (body, headers) = body?;
        let mut headers = headers.to_vec();
        if self.options.protocol != PushProtocol::RemoteWrite {
            headers.extend((self.options.headers.iter()).map(|(n, v)| (n.as_str(), v.as_str())));
        }
        let request = wire::client::Request {
            method: "POST",
            url: &self.url,
            headers: &headers,
            body: &body,
            max_body_bytes: MAX_ANSWER_BYTES,
            tls: self.options.tls.as_ref(),
        };
        let answer =
            wire::client::send(&request, Instant::now() + self.options.timeout).map_err(|err| {
                match err {
                    wire::client::ClientError::TimedOut => {
                        format!("timed out after {:?}", self.options.timeout)
                    }
                    err => err.to_string(),
                }
            })?;
        if (200..300).contains(&answer.status) {
            return self.options.protocol.accepted(&answer.body);
        }
        let text = String::from_utf8_lossy(&answer.body);
        let first_line: String = text
            .lines()
            .next()
            .unwrap_or("")
            .chars()
            .take(200)
            .collect();
        Err(format!("HTTP {}: {}", answer.status, first_line.trim())
            .trim_end_matches([':', ' '])
            .to_owned())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    #![allow(clippy::unwrap_used)]

    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;
    use crate::remote_write::proto;

    /// How a fake receiver answers.
    #[derive(Clone, Copy)]
    enum Receiver {
        Accepts,
        /// Answers 200 with an OTLP partial success that dropped points.
        Drops,
        Fails,
        Hangs,
    }

    /// A receiver on loopback: keeps the bodies it was sent (as sent) and the last
    /// request head; stops with the returned flag.
    struct Fake {
        url: String,
        bodies: Arc<Mutex<Vec<Vec<u8>>>>,
        head: Arc<Mutex<String>>,
        stop: Arc<AtomicBool>,
    }

    impl Drop for Fake {
        fn drop(&mut self) {
            self.stop.store(true, Ordering::Relaxed);
        }
    }

    fn fake(receiver: Receiver) -> Fake {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let fake = Fake {
            url: format!("http://{}/api/v1/write", listener.local_addr().unwrap()),
            bodies: Arc::default(),
            head: Arc::default(),
            stop: Arc::default(),
        };
        let (bodies, head, stop) = (
            Arc::clone(&fake.bodies),
            Arc::clone(&fake.head),
            Arc::clone(&fake.stop),
        );
        std::thread::spawn(move || {
            // Bounded: at most 10 s of polling, whatever the test does.
            for _ in 0..1000 {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                match listener.accept() {
                    Ok((stream, _)) => answer(stream, receiver, &bodies, &head, &stop),
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        fake
    }

    fn answer(
        mut stream: TcpStream,
        receiver: Receiver,
        bodies: &Mutex<Vec<Vec<u8>>>,
        head: &Mutex<String>,
        stop: &AtomicBool,
    ) {
        stream.set_nonblocking(false).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(2)))
            .unwrap();
        let mut got = Vec::new();
        let mut chunk = [0u8; 8192];
        let (head_len, length) = loop {
            let n = stream.read(&mut chunk).unwrap_or(0);
            if n == 0 {
                return;
            }
            got.extend_from_slice(&chunk[..n]);
            if let Some(at) = got.windows(4).position(|w| w == b"\r\n\r\n") {
                let text = String::from_utf8_lossy(&got[..at]).to_string();
                let length: usize = text
                    .lines()
                    .find_map(|line| line.strip_prefix("Content-Length: "))
                    .map_or(0, |n| n.parse().unwrap());
                *head.lock().unwrap() = text;
                break (at + 4, length);
            }
        };
        while got.len() < head_len + length {
            let n = stream.read(&mut chunk).unwrap_or(0);
            if n == 0 {
                return;
            }
            got.extend_from_slice(&chunk[..n]);
        }
        match receiver {
            Receiver::Accepts => {
                bodies.lock().unwrap().push(got[head_len..].to_vec());
                let _ = stream.write_all(b"HTTP/1.1 204 No Content\r\n\r\n");
            }
            Receiver::Drops => {
                let answer = crate::otlp::proto::ExportMetricsServiceResponse {
                    partial_success: Some(crate::otlp::proto::ExportMetricsPartialSuccess {
                        rejected_data_points: 4,
                        error_message: "no room".to_owned(),
                    }),
                }
                .encode_to_vec();
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n",
                    answer.len()
                );
                let _ = stream.write_all(&[head.as_bytes(), &answer].concat());
            }
            Receiver::Fails => {
                let _ = stream.write_all(
                    b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 12\r\n\r\ndisk is full",
                );
            }
            Receiver::Hangs => {
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        }
    }

    pub(crate) fn metrics_with_requests() -> PrometheusHandle {
        let mut stats =
            crate::PrometheusStats::new(&engine::RunConfig::single(engine::AttackConfig::new(
                "a",
                vec![workload::Target::get(
                    "GET",
                    url::Url::parse("http://127.0.0.1:1/x").unwrap(),
                )],
                workload::Plan {
                    pacing: workload::Pacing::Open(workload::Schedule::constant(10.0)),
                    duration_ns: None,
                    max_requests: None,
                    shard: workload::Shard::WHOLE,
                },
            )));
        use engine::RunObserver;
        stats.records(&[record::Record::default(), record::Record::default()]);
        stats.finish();
        stats.handle()
    }

    type Warnings = Arc<Mutex<Vec<String>>>;

    fn push_for(protocol: PushProtocol, url: &str, run: Duration) -> (PushSummary, Vec<String>) {
        let warnings: Warnings = Arc::default();
        let sink = Arc::clone(&warnings);
        let options = PushOptions {
            protocol,
            url: url.to_owned(),
            every: Duration::from_millis(50),
            timeout: Duration::from_millis(300),
            run_id: "run-1".to_owned(),
            job: "loadlab".to_owned(),
            headers: vec![("Authorization".to_owned(), "Bearer s3cret".to_owned())],
            tls: None,
        };
        let pusher = Push::start(
            options,
            metrics_with_requests(),
            Box::new(move |line: &str| sink.lock().unwrap().push(line.to_owned())),
        )
        .unwrap();
        std::thread::sleep(run);
        let started = Instant::now();
        let summary = pusher.finish();
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "the final push is bounded"
        );
        let warnings = warnings.lock().unwrap().clone();
        (summary, warnings)
    }

    #[test]
    fn pushes_the_series_with_the_run_id_and_the_protocol_headers() {
        let receiver = fake(Receiver::Accepts);
        let (summary, warnings) = push_for(
            PushProtocol::RemoteWrite,
            &receiver.url,
            Duration::from_millis(300),
        );
        assert_eq!(summary.failed, 0, "{summary:?}");
        assert!(summary.pushes >= 2, "{summary:?}");
        assert_eq!(warnings, Vec::<String>::new());
        let head = receiver.head.lock().unwrap().clone();
        for line in [
            "POST /api/v1/write HTTP/1.1",
            "Content-Encoding: snappy",
            "Content-Type: application/x-protobuf",
            "X-Prometheus-Remote-Write-Version: 0.1.0",
        ] {
            assert!(head.lines().any(|l| l == line), "{line}: {head}");
        }
        // -otlp-headers are OTLP's: remote write does not send them.
        assert!(!head.contains("s3cret"), "{head}");
        let bodies: Vec<proto::WriteRequest> = (receiver.bodies.lock().unwrap().iter())
            .map(|body| {
                let raw = snap::raw::Decoder::new().decompress_vec(body).unwrap();
                proto::WriteRequest::decode(raw.as_slice()).unwrap()
            })
            .collect();
        let last = bodies.last().unwrap();
        let count = last
            .timeseries
            .iter()
            .find(|series| {
                series
                    .labels
                    .iter()
                    .any(|l| l.name == "__name__" && l.value == "request_seconds_count")
            })
            .unwrap();
        let names: Vec<&str> = count.labels.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(
            names,
            ["__name__", "job", "method", "run_id", "status", "url"],
            "sorted by name"
        );
        assert!(
            count
                .labels
                .iter()
                .any(|l| l.name == "run_id" && l.value == "run-1")
        );
        assert_eq!(count.samples[0].value, 2.0);
        let timestamps: Vec<i64> = bodies
            .iter()
            .map(|body| body.timeseries[0].samples[0].timestamp)
            .collect();
        assert!(timestamps.windows(2).all(|w| w[0] < w[1]), "{timestamps:?}");
        let families: Vec<&str> = last
            .metadata
            .iter()
            .map(|m| m.metric_family_name.as_str())
            .collect();
        assert!(families.contains(&"request_seconds"), "{families:?}");
    }

    #[test]
    fn a_failing_receiver_is_warned_about_once_and_counted() {
        let closed = {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            format!("http://{}/api/v1/write", listener.local_addr().unwrap())
        };
        let gone = Fake {
            url: closed,
            bodies: Arc::default(),
            head: Arc::default(),
            stop: Arc::default(),
        };
        let (remote_write, otlp) = (PushProtocol::RemoteWrite, PushProtocol::Otlp);
        let rows = [
            (
                remote_write,
                fake(Receiver::Fails),
                "HTTP 500: disk is full",
            ),
            (remote_write, fake(Receiver::Hangs), "timed out after 300ms"),
            (remote_write, gone, "connect: "),
            (otlp, fake(Receiver::Fails), "HTTP 500: disk is full"),
            (
                otlp,
                fake(Receiver::Drops),
                "the collector rejected 4 data points: no room",
            ),
        ];
        for (protocol, receiver, reason) in rows {
            let (summary, warnings) = push_for(protocol, &receiver.url, Duration::from_millis(400));
            assert_eq!(summary.failed, summary.pushes, "{reason}: {summary:?}");
            assert!(summary.pushes >= 2, "{reason}: {summary:?}");
            assert!(
                summary.last_error.as_deref().unwrap().starts_with(reason),
                "{reason}: {summary:?}"
            );
            assert_eq!(warnings.len(), 1, "{reason}: rate-limited: {warnings:?}");
            let flag = format!("{} http://127.0.0.1:", protocol.flag());
            assert!(warnings[0].starts_with(&flag), "{warnings:?}");
            assert!(warnings[0].contains(reason), "{warnings:?}");
        }
    }

    #[test]
    fn otlp_posts_to_the_endpoints_metrics_path() {
        let receiver = fake(Receiver::Accepts);
        let endpoint = receiver.url.trim_end_matches("/api/v1/write");
        let (summary, warnings) =
            push_for(PushProtocol::Otlp, endpoint, Duration::from_millis(300));
        assert_eq!((summary.failed, warnings.len()), (0, 0), "{summary:?}");
        let head = receiver.head.lock().unwrap().clone();
        for line in [
            "POST /v1/metrics HTTP/1.1",
            "Content-Type: application/x-protobuf",
            "Authorization: Bearer s3cret",
        ] {
            assert!(head.lines().any(|l| l == line), "{line}: {head}");
        }
        assert!(!head.contains("snappy"), "{head}");
        let bodies = receiver.bodies.lock().unwrap();
        let last = crate::otlp::proto::ExportMetricsServiceRequest::decode(
            bodies.last().unwrap().as_slice(),
        )
        .unwrap();
        let resource = last.resource_metrics[0].resource.as_ref().unwrap();
        let run_id = (resource.attributes.iter())
            .find(|kv| kv.key == "run_id")
            .and_then(|kv| kv.value.as_ref()?.string_value.clone());
        assert_eq!(run_id.as_deref(), Some("run-1"));
    }

    #[test]
    fn otlp_headers_are_read_as_opentelemetry_writes_them_and_never_shown() {
        // (OTEL_EXPORTER_OTLP_HEADERS, the headers, or what the error says)
        type Want<'a> = Result<&'a [(&'a str, &'a str)], &'a str>;
        let rows: [(&str, Want<'_>); 8] = [
            (
                "api-key=s3cret, Authorization=Basic%20dTpw",
                Ok(&[("api-key", "s3cret"), ("Authorization", "Basic dTpw")]),
            ),
            ("a=1,,b=x%3Dy%2Cz", Ok(&[("a", "1"), ("b", "x=y,z")])),
            ("", Ok(&[])),
            ("a=1,s3cret", Err("pair 2 has no '='")),
            (
                "bad key=s3cret",
                Err("pair 1: the key is not an HTTP header name"),
            ),
            (
                "k=s3cret%0D%0AX-Injected:%201",
                Err("pair 1 (k): the value is not"),
            ),
            ("k=s3cret%zz", Err("pair 1 (k): the value is not")),
            ("k=s3cret%C3", Err("pair 1 (k): the value is not")),
        ];
        for (text, want) in rows {
            let got = otlp_headers(text);
            match (want, got) {
                (Ok(want), Ok(got)) => {
                    let got: Vec<(&str, &str)> =
                        got.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
                    assert_eq!(got, want, "{text}");
                }
                (Err(want), Err(err)) => {
                    assert!(err.starts_with(want), "{text}: {err}");
                    assert!(!err.contains("s3cret"), "{text}: {err}");
                }
                (want, got) => panic!("{text}: want {want:?}, got {got:?}"),
            }
        }
    }

    #[test]
    fn only_http_and_https_urls_are_taken() {
        let (remote_write, otlp) = (PushProtocol::RemoteWrite, PushProtocol::Otlp);
        let rows = [
            (
                remote_write,
                "ftp://prom.example/api/v1/write",
                "only http:// and https://",
            ),
            (
                remote_write,
                "127.0.0.1:9090",
                "expected http://HOST:PORT/PATH",
            ),
            (
                remote_write,
                "not a url",
                "relative URL without a base; expected http://",
            ),
            (remote_write, "http://u:secret@/write", "empty host"),
            (otlp, "grpc://collector:4317", "only http:// and https://"),
            (otlp, "127.0.0.1:4318", "expected http://HOST:PORT, e.g."),
        ];
        for (protocol, url, want) in rows {
            let err = check_url(protocol, url).err().unwrap().to_string();
            let flag = format!("{} ", protocol.flag());
            assert!(err.starts_with(&flag), "{url}: {err}");
            assert!(err.contains(want), "{url}: {err}");
            assert!(!err.contains("secret"), "{url}: {err}");
        }
    }

    #[test]
    fn otlp_appends_the_signals_path_to_the_endpoint() {
        let rows = [
            ("http://127.0.0.1:4318", "http://127.0.0.1:4318/v1/metrics"),
            ("http://127.0.0.1:4318/", "http://127.0.0.1:4318/v1/metrics"),
            ("http://h:4318/otlp/", "http://h:4318/otlp/v1/metrics"),
        ];
        for (endpoint, want) in rows {
            let url = check_url(PushProtocol::Otlp, endpoint).unwrap();
            assert_eq!(url.as_str(), want);
        }
        let as_given = check_url(PushProtocol::RemoteWrite, "http://h:9090/api/v1/write");
        assert_eq!(as_given.unwrap().path(), "/api/v1/write");
    }
}
