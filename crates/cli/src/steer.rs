//! `loadlab steer`: one run over a group of shards started any way (a loop, ssh,
//! pdsh, Nomad), steered as one: the merged live view, the stop rules judged on the
//! merged figures, a stop that reaches every shard, shards that fall behind or go
//! silent named at once (`live::steer`).

use std::process::ExitCode;
use std::time::Duration;

use engine::StopHandle;
use live::steer::{Coordinator, HttpLink, ShardLink};
use live::{LiveHandle, View, ViewMode};
use workload::StopRule;

use crate::signals;

/// Steer a group of shards as one run.
///
/// Start each shard as `loadlab attack ... -shard I/N -start-at T -steer ADDR`, any
/// way you like, and give their ADDRs here. The coordinator asks every shard twice a
/// second for the seconds it settled, merges them, and shows the whole run in one
/// live view with a health line per shard. The stop rules (-stop-when here, else the
/// shards' own) are judged on the merged figures: when one fires, every shard is
/// stopped within a second and writes its records up to the stop. A shard that does
/// not answer for 3 s, or trails the others by 3 s, is named at once; it keeps its
/// records and judges its own rules. At the end: which shards finished, the rule
/// that fired, and the share of the asked load that was not delivered.
///
/// Examples:
///
///   AT=$(date -u -d '+5 sec' +%Y-%m-%dT%H:%M:%SZ); for i in 0 1 2 3; do loadlab attack -targets t.txt -rate 8000 -duration 1m -stop-when 'p99 > 200ms for 3s' -shard $i/4 -start-at $AT -steer :910$i -quiet -output s$i.llr & done; loadlab steer :9100 :9101 :9102 :9103; wait; loadlab report s*.llr
///
///   loadlab steer gen1:9100 gen2:9100 gen3:9100 -stop-when 'errors > 5% for 5s'
#[derive(clap::Args, Debug)]
pub struct SteerArgs {
    /// The shards' -steer addresses (HOST:PORT, :PORT for loopback, http://HOST:PORT)
    #[arg(required = true, value_name = "ADDR")]
    shards: Vec<String>,
    /// Stop rules judged on the merged figures [default: the shards' own -stop-when]
    #[arg(long = "stop-when", value_name = "RULE")]
    stop_when: Vec<String>,
    /// How long a shard may take to answer first (before it is named lost)
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = duration_flag)]
    wait: Duration,
    /// Give up steering after this long (the shards go on by themselves)
    #[arg(long, value_name = "DURATION", default_value = "24h", value_parser = duration_flag)]
    deadline: Duration,
    /// No live view; the events and the verdict are still written
    #[arg(long)]
    quiet: bool,
    /// Serve the whole run's Prometheus series at ADDR/metrics: the shards' own
    /// (those of attack -prometheus-addr) added up, plus loadlab_shards{health} and
    /// loadlab_shard_settled_seconds{shard}
    #[arg(long, value_name = "ADDR")]
    prometheus_addr: Option<String>,
}

fn duration_flag(text: &str) -> Result<Duration, String> {
    units::parse_duration(text).map_err(|err| err.to_string())
}

pub fn run(args: &SteerArgs) -> anyhow::Result<ExitCode> {
    let rules = (args.stop_when.iter())
        .map(|text| {
            StopRule::parse(text).map_err(|err| anyhow::anyhow!("-stop-when '{text}': {err}"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut links: Vec<Box<dyn ShardLink>> = Vec::new();
    for given in &args.shards {
        let address = live::listen_address(given);
        let link = HttpLink::new(&address).map_err(|why| anyhow::anyhow!("shard {why}"))?;
        links.push(Box::new(link));
    }
    let stop = StopHandle::new();
    signals::stop_on_signals(&stop, "stopping every shard")?;
    let mut coordinator = Coordinator::new(links, &rules, args.wait);
    let server = match &args.prometheus_addr {
        Some(address) => Some(serve_metrics(address, coordinator.keep_metrics(), "steer")?),
        None => None,
    };
    let code = steer(coordinator, args.deadline, args.quiet, &|| {
        stop.is_stopping()
    });
    if let Some(server) = server {
        server.stop();
    }
    Ok(code)
}

/// Serves the run's merged series on `address`/metrics.
pub fn serve_metrics(
    address: &str,
    metrics: live::Latest<String>,
    command: &str,
) -> anyhow::Result<live::Server> {
    let handler: live::Handler =
        std::sync::Arc::new(move |request: &live::Request| match request.path.as_str() {
            "/metrics" => live::Response::ok(live::PROMETHEUS_CONTENT_TYPE, metrics.get()),
            path => live::Response::not_found(path),
        });
    let address = live::listen_address(address);
    let server = live::Server::start("-prometheus-addr", &address, handler)?;
    eprintln!(
        "loadlab {command}: the run's prometheus metrics on http://{}/metrics",
        server.address()
    );
    Ok(server)
}

/// Drives `coordinator` with a live view (unless `quiet`) and says the verdict; the
/// exit code is the fired rule's, or 1 when a shard was lost.
pub fn steer(
    mut coordinator: Coordinator,
    deadline: Duration,
    quiet: bool,
    interrupted: &dyn Fn() -> bool,
) -> ExitCode {
    let handle = LiveHandle::default();
    let view = (!quiet)
        .then(|| {
            View::start(
                handle.clone(),
                ViewMode::Lines {
                    every: Duration::from_secs(2),
                    out: Box::new(std::io::stderr()),
                    prefix: "loadlab steer: ".to_owned(),
                },
            )
            .ok()
        })
        .flatten();
    coordinator.drive(&handle, deadline, interrupted, &|| false, &mut |event| {
        eprintln!("loadlab steer: {event}");
    });
    if let Some(view) = view {
        view.finish(true);
    }
    for line in coordinator.verdict() {
        eprintln!("loadlab steer: {line}");
    }
    let lost = (coordinator.health().iter())
        .any(|(_, health)| matches!(health, live::steer::Health::Lost { .. }));
    match coordinator.fired() {
        Some(fired) => ExitCode::from(fired.rule.kind().exit_code()),
        None if lost => ExitCode::FAILURE,
        None => ExitCode::SUCCESS,
    }
}
