//! `-prometheus-addr`, `-prometheus-remote-write` and `-otlp-endpoint` (`attack` and
//! `run`): the run's metrics for Prometheus, scraped from a loopback `/metrics` page or
//! pushed with remote write, and the same series as OTLP metrics to a Collector (with
//! `-trace-spans`, the traced requests' client spans too). The server starts once and
//! serves the newest run's (each step of a plan in turn: its counters start again, as
//! a restarted exporter's do).
//! Either one failing (a taken port, a receiver that is down) is a warning on stderr:
//! the run and its records go on.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::Context;
use engine::{RunConfig, RunObserver};
use live::{PrometheusStats, Push, PushOptions, PushProtocol, Server};

/// The Prometheus flags of `attack`.
#[derive(clap::Args, Debug)]
pub struct PrometheusArgs {
    /// Serve the run's metrics at http://ADDR/metrics for Prometheus to scrape
    /// (vegeta's request_seconds, request_bytes_in, request_bytes_out,
    /// request_fail_count and loadlab_* series), e.g. 127.0.0.1:8880; port 0 picks a
    /// free port, printed on stderr; :PORT means 127.0.0.1:PORT. Served until attack
    /// exits. A taken port is a
    /// warning: the run goes on without it
    #[arg(help_heading = "Live view", long, value_name = "ADDR")]
    prometheus_addr: Option<String>,
    /// Push the same series to a Prometheus remote-write receiver every
    /// -prometheus-remote-write-every and once more at the end, e.g.
    /// http://127.0.0.1:9090/api/v1/write (Prometheus started with
    /// --web.enable-remote-write-receiver). Failed pushes are warnings: the run goes on
    #[arg(help_heading = "Live view", long, value_name = "URL")]
    prometheus_remote_write: Option<String>,
    /// How often -prometheus-remote-write pushes; one push may take as long at most
    #[arg(
        help_heading = "Live view",
        long,
        default_value = "5s",
        value_name = "DURATION"
    )]
    prometheus_remote_write_every: String,
    /// Push the same series as OTLP metrics (HTTP/protobuf) to an OpenTelemetry
    /// Collector at URL/v1/metrics every -prometheus-remote-write-every and once more
    /// at the end, e.g. http://127.0.0.1:4318; the standard OTEL_EXPORTER_OTLP_ENDPOINT
    /// when the flag is not given. Failed pushes are warnings: the run goes on
    #[arg(
        help_heading = "Live view",
        long,
        value_name = "URL",
        env = "OTEL_EXPORTER_OTLP_ENDPOINT"
    )]
    otlp_endpoint: Option<String>,
    /// Headers sent on every OTLP push (metrics and -trace-spans), written as the
    /// standard OTEL_EXPORTER_OTLP_HEADERS (read when the flag is not given):
    /// comma-separated key=value pairs, percent-encoded, e.g.
    /// 'api-key=abc,Authorization=Bearer%20xyz'. Their values are never printed
    #[arg(
        help_heading = "Live view",
        long,
        value_name = "LIST",
        env = "OTEL_EXPORTER_OTLP_HEADERS",
        hide_env_values = true
    )]
    otlp_headers: Option<String>,
    /// With -trace: also send a client span per traced request to -otlp-endpoint's
    /// /v1/traces (a Collector, or Jaeger's OTLP port), its span id the traceparent's
    /// parent id, so each trace starts at loadlab
    #[arg(help_heading = "Live view", long, default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL")]
    trace_spans: bool,
    /// The run_id label of pushed series [default: the start time, e.g. 2026-01-02T15:04:05Z]
    #[arg(help_heading = "Live view", long, value_name = "ID")]
    run_id: Option<String>,
}

/// The flags, checked before any target is read.
pub struct PrometheusSetup {
    addr: Option<String>,
    pushes: Vec<PushOptions>,
    /// Where `-trace-spans` sends the client spans (the OTLP push's options).
    spans: Option<PushOptions>,
}

/// What serves the newest run's metrics (from the first run to exit) and pushes each
/// run's; [`Prometheus::watch`] for each run.
pub struct Prometheus {
    /// Kept until exit: dropping it stops serving.
    _server: Option<Server>,
    /// The newest run's metrics, which `/metrics` serves.
    current: Arc<Mutex<Option<live::PrometheusHandle>>>,
    pushes: Vec<PushOptions>,
    spans: Option<PushOptions>,
}

/// One run's pushes; [`PrometheusRun::finish`] after it.
pub struct PrometheusRun {
    /// Each push with its flag and URL, for the summary.
    pushes: Vec<(Push, &'static str, String)>,
    /// The client spans' queue, for the count of those dropped.
    spans: Option<live::SpanQueue>,
}

/// The job label of pushed series.
const JOB: &str = "loadlab";
/// A push may take this long at most, however long the interval.
const MAX_PUSH_TIMEOUT: Duration = Duration::from_secs(10);

impl PrometheusSetup {
    pub fn check(args: &PrometheusArgs) -> anyhow::Result<PrometheusSetup> {
        let every = units::parse_duration(&args.prometheus_remote_write_every)
            .with_context(|| "-prometheus-remote-write-every")?;
        if every.is_zero() {
            anyhow::bail!("-prometheus-remote-write-every: must be more than 0");
        }
        let run_id = args.run_id.clone().unwrap_or_else(|| {
            let now_ns = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |since| since.as_secs() * 1_000_000_000);
            record::format_timestamp(now_ns)
        });
        let asked = [
            (PushProtocol::RemoteWrite, &args.prometheus_remote_write),
            (PushProtocol::Otlp, &args.otlp_endpoint),
        ];
        let headers = (args.otlp_headers.as_deref())
            .map(live::otlp_headers)
            .transpose()
            .map_err(|why| anyhow::anyhow!("-otlp-headers: {why}"))?
            .unwrap_or_default();
        let mut pushes = Vec::new();
        for (protocol, url) in asked {
            let Some(url) = url.clone().filter(|url| !url.is_empty()) else {
                continue;
            };
            Push::check_url(protocol, &url)?;
            let tls = crate::report::https_config(&url)?;
            pushes.push(PushOptions {
                protocol,
                url,
                every,
                timeout: every.min(MAX_PUSH_TIMEOUT),
                run_id: run_id.clone(),
                job: JOB.to_owned(),
                headers: headers.clone(),
                tls,
            });
        }
        let otlp = pushes.iter().find(|p| p.protocol == PushProtocol::Otlp);
        let spans = match (args.trace_spans, otlp) {
            (false, _) => None,
            (true, Some(otlp)) => Some(otlp.clone()),
            (true, None) => anyhow::bail!(
                "-trace-spans: needs -otlp-endpoint (or OTEL_EXPORTER_OTLP_ENDPOINT), where the spans go"
            ),
        };
        Ok(PrometheusSetup {
            addr: args.prometheus_addr.clone(),
            pushes,
            spans,
        })
    }

    /// Starts the server, if one is asked for; nothing when neither flag is given.
    pub fn start(self) -> Option<Prometheus> {
        // -trace-spans needs an OTLP push, so it starts nothing by itself.
        if self.addr.is_none() && self.pushes.is_empty() {
            return None;
        }
        let current = Arc::default();
        Some(Prometheus {
            _server: self
                .addr
                .and_then(|addr| serve(&addr, Arc::clone(&current))),
            current,
            pushes: self.pushes,
            spans: self.spans,
        })
    }
}

impl Prometheus {
    /// The observer of one run (added to `observers`), served from now on and pushed
    /// by a thread of its own.
    pub fn watch(
        &self,
        config: &RunConfig,
        observers: &mut Vec<Box<dyn RunObserver>>,
    ) -> PrometheusRun {
        let stats = PrometheusStats::new(config);
        if stats.folded_targets() > 0 {
            eprintln!(
                "loadlab: prometheus: more than {} distinct targets; {} of them are counted under url=\"other\"",
                live::MAX_URL_SERIES,
                stats.folded_targets()
            );
        }
        let handle = stats.handle();
        observers.push(Box::new(stats));
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) = Some(handle.clone());
        let mut pushes: Vec<(Push, &'static str, String)> = (self.pushes.iter())
            .filter_map(|options| {
                start_push(options, |o, warn| Push::start(o, handle.clone(), warn))
            })
            .collect();
        let spans = self.spans.as_ref().and_then(|options| {
            if config.settings.trace.is_none() {
                eprintln!("loadlab: -trace-spans: this run does not -trace, so it sends no span");
                return None;
            }
            let spans = live::ClientSpans::new(config);
            let queue = spans.queue();
            observers.push(Box::new(spans));
            let options = PushOptions {
                protocol: PushProtocol::OtlpSpans,
                ..options.clone()
            };
            let start = |o, warn| Push::start_spans(o, queue.clone(), warn);
            pushes.extend(start_push(&options, start));
            Some(queue)
        });
        PrometheusRun { pushes, spans }
    }
}

/// Starts one push thread with `start`; a failure to start is a warning.
fn start_push(
    options: &PushOptions,
    start: impl FnOnce(PushOptions, live::Warn) -> Result<Push, live::LiveError>,
) -> Option<(Push, &'static str, String)> {
    let (flag, shown) = (options.protocol.flag(), units::redact_url(&options.url));
    let warn = Box::new(|line: &str| eprintln!("loadlab: {line}"));
    match start(options.clone(), warn) {
        Ok(push) => Some((push, flag, shown)),
        Err(err) => {
            warn_going_on(&err);
            None
        }
    }
}

fn serve(addr: &str, current: Arc<Mutex<Option<live::PrometheusHandle>>>) -> Option<Server> {
    let handler: live::Handler = Arc::new(move |request: &live::Request| {
        let handle = current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        match (request.path.as_str(), handle) {
            ("/metrics", Some(handle)) => {
                let (content_type, body) = handle.render_for(request.accept.as_deref());
                live::Response::ok(content_type, body)
            }
            // Up, with nothing to say yet (a plan before its first step).
            ("/metrics", None) => live::Response::ok(live::PROMETHEUS_CONTENT_TYPE, String::new()),
            (path, _) => live::Response::not_found(path),
        }
    });
    match Server::start("-prometheus-addr", addr, handler) {
        Ok(server) => {
            eprintln!(
                "loadlab: prometheus metrics on http://{}/metrics",
                server.address()
            );
            Some(server)
        }
        Err(err) => {
            warn_going_on(&err);
            None
        }
    }
}

fn warn_going_on(err: &dyn std::error::Error) {
    eprintln!(
        "loadlab: {}; the run goes on without it",
        units::error_chain(err)
    );
}

impl PrometheusRun {
    /// After the run: the final push, and how the pushes went if any failed.
    pub fn finish(self) {
        let dropped = self.spans.map_or(0, |queue| queue.dropped());
        if dropped > 0 {
            eprintln!(
                "loadlab: -trace-spans: {dropped} client spans were dropped (more than {} waited for a push)",
                live::MAX_QUEUED_SPANS
            );
        }
        for (push, flag, url) in self.pushes {
            let summary = push.finish();
            if summary.failed > 0 {
                eprintln!(
                    "loadlab: {flag} {url}: {} of {} pushes failed (last: {})",
                    summary.failed,
                    summary.pushes,
                    summary.last_error.unwrap_or_default()
                );
            }
        }
    }
}
