//! [`RemoteWrite`]: the thread behind `-prometheus-remote-write`. Every few seconds
//! (and once more at the end) it reads the published [`Metrics`] copy and POSTs the
//! same series `/metrics` shows as a Prometheus remote-write 1.0 request: a protobuf
//! `WriteRequest`, snappy-compressed (the raw block format), with the run's
//! `run_id` and `job` labels; histograms go as classic `_bucket`/`_sum`/`_count`
//! series.
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
use crate::sink::{Kind, Sink};

/// After the first failed push, failures are summed up at most this often.
pub const WARN_EVERY: Duration = Duration::from_secs(30);
/// A receiver's error answer is read up to this size (its first line is shown).
const MAX_ANSWER_BYTES: usize = 64 << 10;

/// Where and how to push.
#[derive(Debug, Clone)]
pub struct RemoteWriteOptions {
    /// The receiver, e.g. `http://127.0.0.1:9090/api/v1/write`.
    pub url: String,
    /// How often to push.
    pub every: Duration,
    /// How long one push may take (connect, send, answer).
    pub timeout: Duration,
    /// The `run_id` label of every series.
    pub run_id: String,
    /// The `job` label of every series.
    pub job: String,
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

/// The push thread; [`RemoteWrite::finish`] makes the final push and stops it.
pub struct RemoteWrite {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<PushSummary>>,
}

impl RemoteWrite {
    /// Checks the URL and starts pushing what `handle` publishes.
    pub fn start(
        options: RemoteWriteOptions,
        handle: PrometheusHandle,
        warn: Warn,
    ) -> Result<RemoteWrite, LiveError> {
        let url = check_url(&options.url)?;
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let mut pusher = Pusher {
            shown_url: units::redact_url(&options.url),
            url,
            options,
            handle,
            warn,
            summary: PushSummary::default(),
            last_timestamp_ms: 0,
            last_warning: None,
        };
        let thread = {
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name("loadlab-remote-write".to_owned())
                .spawn(move || pusher.run(&stop))?
        };
        Ok(RemoteWrite {
            stop,
            thread: Some(thread),
        })
    }

    /// Checks a receiver URL the way [`RemoteWrite::start`] does, so a bad one is
    /// refused before the run reads its targets.
    pub fn check_url(url: &str) -> Result<(), LiveError> {
        check_url(url).map(drop)
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

fn check_url(text: &str) -> Result<url::Url, LiveError> {
    let bad = |reason: &str| LiveError::RemoteWriteUrl {
        url: units::redact_url(text),
        reason: reason.to_owned(),
    };
    let url = url::Url::parse(text).map_err(|err| {
        bad(&format!(
            "{err}; expected http://HOST:PORT/PATH, e.g. http://127.0.0.1:9090/api/v1/write"
        ))
    })?;
    if url.scheme() != "http" {
        return Err(bad(
            "only http:// is supported (put a local receiver or proxy in front of an https one)",
        ));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(bad("the URL has no host"));
    }
    Ok(url)
}

struct Pusher {
    url: url::Url,
    /// The URL as warnings show it (passwords redacted).
    shown_url: String,
    options: RemoteWriteOptions,
    handle: PrometheusHandle,
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
        self.summary.pushes += 1;
        let Err(reason) = self.push() else {
            return;
        };
        self.summary.failed += 1;
        let now = Instant::now();
        let message = match self.last_warning {
            None => format!(
                "-prometheus-remote-write {}: push failed: {reason}; the run goes on \
                 (further failures are summed up every {}s and at the end)",
                self.shown_url,
                WARN_EVERY.as_secs()
            ),
            Some(at) if now.duration_since(at) >= WARN_EVERY => format!(
                "-prometheus-remote-write {}: {} of {} pushes failed so far (last: {reason})",
                self.shown_url, self.summary.failed, self.summary.pushes
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
        let extra = [
            ("job", self.options.job.clone()),
            ("run_id", self.options.run_id.clone()),
        ];
        let request = write_request(&self.handle.metrics(), &extra, timestamp_ms);
        let body = snap::raw::Encoder::new()
            .compress_vec(&request.encode_to_vec())
            .map_err(|err| format!("snappy: {err}"))?;
        let request = wire::client::Request {
            method: "POST",
            url: &self.url,
            headers: &[
                ("Content-Encoding", "snappy"),
                ("Content-Type", "application/x-protobuf"),
                ("User-Agent", concat!("loadlab/", env!("CARGO_PKG_VERSION"))),
                ("X-Prometheus-Remote-Write-Version", "0.1.0"),
            ],
            body: &body,
            max_body_bytes: MAX_ANSWER_BYTES,
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
            return Ok(());
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

    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;

    /// How a fake receiver answers.
    #[derive(Clone, Copy)]
    enum Receiver {
        Accepts,
        Fails,
        Hangs,
    }

    /// A receiver on loopback: keeps the bodies it was sent (decoded) and the last
    /// request head; stops with the returned flag.
    struct Fake {
        url: String,
        bodies: Arc<Mutex<Vec<proto::WriteRequest>>>,
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
        bodies: &Mutex<Vec<proto::WriteRequest>>,
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
                let raw = snap::raw::Decoder::new()
                    .decompress_vec(&got[head_len..])
                    .unwrap();
                bodies
                    .lock()
                    .unwrap()
                    .push(proto::WriteRequest::decode(raw.as_slice()).unwrap());
                let _ = stream.write_all(b"HTTP/1.1 204 No Content\r\n\r\n");
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

    fn metrics_with_requests() -> PrometheusHandle {
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

    fn push_for(receiver: &Fake, run: Duration) -> (PushSummary, Vec<String>) {
        let warnings: Warnings = Arc::default();
        let sink = Arc::clone(&warnings);
        let options = RemoteWriteOptions {
            url: receiver.url.clone(),
            every: Duration::from_millis(50),
            timeout: Duration::from_millis(300),
            run_id: "run-1".to_owned(),
            job: "loadlab".to_owned(),
        };
        let pusher = RemoteWrite::start(
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
        let (summary, warnings) = push_for(&receiver, Duration::from_millis(300));
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
        let bodies = receiver.bodies.lock().unwrap();
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
        let rows = [
            (fake(Receiver::Fails), "HTTP 500: disk is full"),
            (fake(Receiver::Hangs), "timed out after 300ms"),
            (gone, "connect: "),
        ];
        for (receiver, reason) in rows {
            let (summary, warnings) = push_for(&receiver, Duration::from_millis(400));
            assert_eq!(summary.failed, summary.pushes, "{reason}: {summary:?}");
            assert!(summary.pushes >= 2, "{reason}: {summary:?}");
            assert!(
                summary.last_error.as_deref().unwrap().starts_with(reason),
                "{reason}: {summary:?}"
            );
            assert_eq!(warnings.len(), 1, "{reason}: rate-limited: {warnings:?}");
            assert!(
                warnings[0].starts_with("-prometheus-remote-write http://127.0.0.1:"),
                "{warnings:?}"
            );
            assert!(warnings[0].contains(reason), "{warnings:?}");
        }
    }

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

    #[test]
    fn only_plain_http_urls_are_taken() {
        let rows = [
            ("https://prom.example/api/v1/write", "only http://"),
            ("127.0.0.1:9090", "expected http://HOST:PORT/PATH"),
            ("not a url", "relative URL without a base; expected http://"),
            ("http://u:secret@/write", "empty host"),
        ];
        for (url, want) in rows {
            let err = check_url(url).err().unwrap().to_string();
            assert!(err.starts_with("-prometheus-remote-write "), "{url}: {err}");
            assert!(err.contains(want), "{url}: {err}");
            assert!(!err.contains("secret"), "{url}: {err}");
        }
    }
}
