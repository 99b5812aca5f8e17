//! `loadlab steer`: one run over a group of shards started any way (a loop, ssh,
//! pdsh, Nomad), steered as one: the merged live view, the stop rules judged on the
//! merged figures, a stop that reaches every shard, shards that fall behind or go
//! silent named at once (`live::steer`).

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use engine::StopHandle;
use live::steer::{Coordinator, HttpLink, ShardLink};
use live::{LiveHandle, View, ViewMode};
use workload::StopRule;

use crate::dashboard::{Dashboard, Output, RunPage};
use crate::signals;

/// Steer a group of shards as one run
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
// Verbatim: the examples keep their indentation (help.rs prints them unwrapped).
#[command(verbatim_doc_comment)]
pub struct SteerArgs {
    /// The shards' -steer addresses (HOST:PORT, :PORT for loopback, http://HOST:PORT)
    #[arg(required = true, value_name = "ADDR")]
    shards: Vec<String>,
    /// Stop rules judged on the merged figures [default: the shards' own -stop-when]
    #[arg(long = "stop-when", value_name = "RULE")]
    stop_when: Vec<String>,
    /// How long a shard may take to answer first (before it is named lost)
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = crate::flags::duration_flag)]
    wait: Duration,
    /// Give up steering after this long (the shards go on by themselves)
    #[arg(long, value_name = "DURATION", default_value = "24h", value_parser = crate::flags::duration_flag)]
    deadline: Duration,
    /// No live view; the events and the verdict are still written
    #[arg(long)]
    quiet: bool,
    /// Serve the whole run's Prometheus series at ADDR/metrics: the shards' own
    /// (those of attack -prometheus-addr) added up, the stream connections'
    /// (loadlab_stream_*) from the merged figures, plus loadlab_shards{health} and
    /// loadlab_shard_settled_seconds{shard}
    #[arg(long, value_name = "ADDR")]
    prometheus_addr: Option<String>,
    /// Serve the whole run's page (the one `loadlab plot` draws over the shards'
    /// files) live at ADDR, with the shards' health under its header; the record
    /// files are pulled from the shards as they are written, into -records
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = crate::dashboard::DEFAULT_ADDRESS)]
    dashboard: Option<String>,
    /// Keep the dashboard's final page this long after the run (Ctrl-C ends it sooner)
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = crate::flags::duration_flag)]
    dashboard_linger: Duration,
    /// Pull every shard's record file into DIR/shard-I.llr as it is written (the
    /// shards need -output FILE) [default with -dashboard: steer-UNIX-SECONDS]
    #[arg(long, value_name = "DIR")]
    records: Option<std::path::PathBuf>,
}

/// Copies the shards' health lines onto the page once a second until the run is over.
pub fn follow_notes(page: &RunPage, handle: &LiveHandle) -> std::thread::JoinHandle<()> {
    let (page, handle) = (page.clone(), handle.clone());
    std::thread::spawn(move || {
        loop {
            let snapshot = handle.snapshot();
            page.set_notes(snapshot.shards.clone());
            if snapshot.finished {
                return;
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    })
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
    let (dashboard, page) = pull_records(args, &mut coordinator)?;
    let code = steer(
        coordinator,
        args.deadline,
        args.quiet,
        page.as_ref(),
        &|| stop.is_stopping(),
    );
    if let Some(page) = page {
        page.finish();
    }
    if let Some(dashboard) = dashboard {
        dashboard.finish(args.dashboard_linger, &stop);
    }
    if let Some(server) = server {
        server.stop();
    }
    Ok(code)
}

/// With -records or -dashboard: every shard's record file pulled into
/// DIR/shard-I.llr as it is written, through the page when there is one.
fn pull_records(
    args: &SteerArgs,
    coordinator: &mut Coordinator,
) -> anyhow::Result<(Option<Dashboard>, Option<RunPage>)> {
    if args.records.is_none() && args.dashboard.is_none() {
        return Ok((None, None));
    }
    let dir = args.records.clone().unwrap_or_else(|| {
        std::path::PathBuf::from(format!("steer-{}", jiff::Timestamp::now().as_second()))
    });
    let outs = record_copies(&dir, args.shards.len(), "-records")?;
    eprintln!(
        "loadlab steer: the shards' records go to {}/shard-*.llr as they are written",
        dir.display()
    );
    let dashboard = args.dashboard.as_deref().and_then(crate::dashboard::start);
    let Some(board) = &dashboard else {
        coordinator.pull_records(outs.into_iter().map(|(out, _)| out).collect());
        return Ok((None, None));
    };
    let (feeds, page) = board.watch_many(outs, "loadlab steer")?;
    coordinator.pull_records(feeds);
    Ok((dashboard, Some(page)))
}

/// `dir`/shard-I.llr for `count` shards, made, each with its name, for the
/// coordinator to pull the shards' records into (`flag` names `dir` in errors).
pub fn record_copies(
    dir: &std::path::Path,
    count: usize,
    flag: &str,
) -> anyhow::Result<Vec<(Output, String)>> {
    std::fs::create_dir_all(dir).with_context(|| format!("{flag} {}", dir.display()))?;
    (0..count)
        .map(|index| {
            let path = dir.join(format!("shard-{index}.llr"));
            let file = std::fs::File::create(&path)
                .with_context(|| format!("{flag} {}", path.display()))?;
            Ok((Box::new(file) as Output, path.display().to_string()))
        })
        .collect()
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
    page: Option<&RunPage>,
    interrupted: &dyn Fn() -> bool,
) -> ExitCode {
    let handle = LiveHandle::default();
    let notes = page.map(|page| follow_notes(page, &handle));
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
    if let Some(notes) = notes {
        let _ = notes.join();
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
