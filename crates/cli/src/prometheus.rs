//! `attack -prometheus-addr` and `-prometheus-remote-write`: the run's metrics for
//! Prometheus, scraped from a loopback `/metrics` page or pushed with remote write.
//! Either one failing (a taken port, a receiver that is down) is a warning on stderr:
//! the run and its records go on.

use std::time::Duration;

use anyhow::Context;
use engine::{RunConfig, RunObserver};
use live::{PrometheusStats, RemoteWrite, RemoteWriteOptions, Server};

/// The Prometheus flags of `attack`.
#[derive(clap::Args, Debug)]
pub struct PrometheusArgs {
    /// Serve the run's metrics at http://ADDR/metrics for Prometheus to scrape
    /// (vegeta's request_seconds, request_bytes_in, request_bytes_out,
    /// request_fail_count and loadlab_* series), e.g. 127.0.0.1:8880; port 0 picks a
    /// free port, printed on stderr; :PORT means 127.0.0.1:PORT. Served until attack
    /// exits. A taken port is a
    /// warning: the run goes on without it
    #[arg(long, value_name = "ADDR")]
    prometheus_addr: Option<String>,
    /// Push the same series to a Prometheus remote-write receiver every
    /// -prometheus-remote-write-every and once more at the end, e.g.
    /// http://127.0.0.1:9090/api/v1/write (Prometheus started with
    /// --web.enable-remote-write-receiver). Failed pushes are warnings: the run goes on
    #[arg(long, value_name = "URL")]
    prometheus_remote_write: Option<String>,
    /// How often -prometheus-remote-write pushes; one push may take as long at most
    #[arg(long, default_value = "5s", value_name = "DURATION")]
    prometheus_remote_write_every: String,
    /// The run_id label of pushed series [default: the start time, e.g. 2026-01-02T15:04:05Z]
    #[arg(long, value_name = "ID")]
    run_id: Option<String>,
}

/// The flags, checked before any target is read.
pub struct PrometheusSetup {
    addr: Option<String>,
    push: Option<RemoteWriteOptions>,
}

/// What serves and pushes during the run; [`Prometheus::finish`] after it.
pub struct Prometheus {
    /// Kept until attack exits: dropping it stops serving.
    _server: Option<Server>,
    push: Option<(RemoteWrite, String)>,
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
        if let Some(url) = &args.prometheus_remote_write {
            RemoteWrite::check_url(url)?;
        }
        let run_id = args.run_id.clone().unwrap_or_else(|| {
            let now_ns = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |since| since.as_secs() * 1_000_000_000);
            record::format_timestamp(now_ns)
        });
        Ok(PrometheusSetup {
            addr: args.prometheus_addr.clone(),
            push: args
                .prometheus_remote_write
                .clone()
                .map(|url| RemoteWriteOptions {
                    url,
                    every,
                    timeout: every.min(MAX_PUSH_TIMEOUT),
                    run_id,
                    job: JOB.to_owned(),
                }),
        })
    }

    /// Starts the observer (added to `observers`), the server and the push thread.
    pub fn start(
        self,
        config: &RunConfig,
        observers: &mut Vec<Box<dyn RunObserver>>,
    ) -> Option<Prometheus> {
        if self.addr.is_none() && self.push.is_none() {
            return None;
        }
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
        let server = self.addr.and_then(|addr| serve(&addr, handle.clone()));
        let push = self.push.and_then(|options| {
            let shown = units::redact_url(&options.url);
            let warn = Box::new(|line: &str| eprintln!("loadlab: {line}"));
            match RemoteWrite::start(options, handle, warn) {
                Ok(push) => Some((push, shown)),
                Err(err) => {
                    warn_going_on(&err);
                    None
                }
            }
        });
        Some(Prometheus {
            _server: server,
            push,
        })
    }
}

fn serve(addr: &str, handle: live::PrometheusHandle) -> Option<Server> {
    let handler: live::Handler =
        std::sync::Arc::new(move |request: &live::Request| match request.path.as_str() {
            "/metrics" => live::Response::ok(live::PROMETHEUS_CONTENT_TYPE, handle.render_text()),
            path => live::Response::not_found(path),
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

impl Prometheus {
    /// After the run: the final push, and how the pushes went if any failed.
    pub fn finish(self) {
        if let Some((push, url)) = self.push {
            let summary = push.finish();
            if summary.failed > 0 {
                eprintln!(
                    "loadlab: -prometheus-remote-write {url}: {} of {} pushes failed (last: {})",
                    summary.failed,
                    summary.pushes,
                    summary.last_error.unwrap_or_default()
                );
            }
        }
    }
}
