//! `attack -steer ADDR`: this process as one steered shard. The run's settled seconds
//! are served at ADDR ([`live::steer::SteerFeed`]) for `loadlab steer` or `kube run`
//! to merge; at the end, a coordinator in contact gets the final answer (the shard
//! finished, and why) before the server goes.

use std::time::{Duration, Instant};

use anyhow::Context;
use engine::{RunConfig, RunObserver, StopHandle};
use live::Server;
use live::steer::SteerFeed;

/// The coordinator polls twice a second: this is time for two polls and a slow one.
const FINAL_ANSWER_WAIT: Duration = Duration::from_secs(3);

/// The served feed of one run.
pub struct SteeredShard {
    server: Server,
    feed: live::steer::FinalAnswer,
    stop: StopHandle,
}

/// Starts serving the feed of `config`'s run at `address`; the feed joins `observers`.
pub fn serve(
    address: &str,
    config: &RunConfig,
    output: Option<&std::path::Path>,
    stop: &StopHandle,
    observers: &mut Vec<Box<dyn RunObserver>>,
) -> anyhow::Result<SteeredShard> {
    // The coordinator adds the shards' series up into one exposition for the run.
    let metrics = live::PrometheusStats::new(config);
    let mut feed = SteerFeed::new(config, stop).with_metrics(metrics.handle());
    if let Some(output) = output {
        feed = feed.with_records(output.to_owned());
    }
    observers.push(Box::new(metrics));
    let address = live::listen_address(address);
    let server = Server::start("-steer", &address, feed.handler()).context("-steer")?;
    eprintln!(
        "loadlab attack: steered: settled seconds on http://{}/seconds",
        server.address()
    );
    let final_answer = feed.final_answer();
    observers.push(Box::new(feed));
    Ok(SteeredShard {
        server,
        feed: final_answer,
        stop: stop.clone(),
    })
}

impl SteeredShard {
    /// The record file is complete: waits (a few seconds at most) for a coordinator
    /// in contact to read that the run finished (and the rest of the records, if it
    /// pulls them), then stops serving.
    pub fn finish(self) {
        self.feed.records_written();
        let until = Instant::now() + FINAL_ANSWER_WAIT;
        while self.stop.is_steered() && !self.feed.was_read() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(50));
        }
        self.server.stop();
    }
}
