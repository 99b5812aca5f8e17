//! `kube run`'s live steering: a thread that polls every shard's feed through the API
//! server's pod proxy (`kube shard` passes it through from its attack), merges the
//! seconds, judges the run's stop rules on the merged figures and stops every shard
//! when one fires (`live::steer`). It has its own runtime and client, so the follow
//! loop on the main thread never waits for it, nor it for the follow loop.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::Context;
use cluster::{ShardJob, ShardProxy};
use live::steer::{Coordinator, ShardLink};
use live::{LiveHandle, View, ViewMode};
use workload::Fired;

use crate::dashboard::{Output, RunPage};

/// Pods scheduling and starting take this long beyond `-start-delay` at most, before
/// a shard that never answered is named lost.
const STARTUP_MARGIN: Duration = Duration::from_secs(30);

/// One shard, reached through the pod proxy.
struct PodLink {
    proxy: Arc<ShardProxy>,
    runtime: Arc<tokio::runtime::Runtime>,
    index: u32,
    shards: u32,
}

impl ShardLink for PodLink {
    fn get(&mut self, path_and_query: &str) -> Result<Vec<u8>, String> {
        let call = self.proxy.get(self.index, path_and_query);
        (self.runtime.block_on(call)).map_err(|err| err.to_string())
    }

    fn address(&self) -> String {
        format!("pod {}/{}", self.index, self.shards)
    }
}

/// What the steering thread ends with.
pub struct Steered {
    /// The rule that fired on the merged figures.
    pub fired: Option<Fired>,
    /// The coordinator's verdict lines.
    pub verdict: Vec<String>,
}

/// The running steering thread; [`Steering::finish`] once the follow loop is done.
pub struct Steering {
    done: Arc<AtomicBool>,
    thread: JoinHandle<anyhow::Result<Steered>>,
}

/// Starts steering `job` (its pods are found by run label and index as they come).
pub fn start(
    job: &ShardJob,
    start_delay: Duration,
    deadline: Duration,
    prometheus_addr: Option<&str>,
    page: Option<(Vec<Output>, RunPage)>,
    interrupted: Arc<dyn Fn() -> bool + Send + Sync>,
) -> anyhow::Result<Steering> {
    let metrics = live::Latest::default();
    let server = prometheus_addr
        .map(|address| crate::steer::serve_metrics(address, metrics.clone(), "kube"))
        .transpose()?;
    let done = Arc::new(AtomicBool::new(false));
    let thread_done = Arc::clone(&done);
    let (namespace, name, shards, host_network) = (
        job.namespace.clone(),
        job.name.clone(),
        job.shards,
        job.host_network,
    );
    let thread = std::thread::Builder::new()
        .name("loadlab-kube-steer".to_owned())
        .spawn(move || {
            let runtime = Arc::new(
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .enable_all()
                    .build()
                    .context("starting the steering client")?,
            );
            let cluster = runtime.block_on(cluster::connect())?;
            let proxy = Arc::new(ShardProxy::new(
                cluster.client,
                &namespace,
                &name,
                host_network,
            ));
            let links: Vec<Box<dyn ShardLink>> = (0..shards)
                .map(|index| {
                    Box::new(PodLink {
                        proxy: Arc::clone(&proxy),
                        runtime: Arc::clone(&runtime),
                        index,
                        shards,
                    }) as Box<dyn ShardLink>
                })
                .collect();
            let mut coordinator = Coordinator::new(links, &[], start_delay + STARTUP_MARGIN);
            if server.is_some() {
                coordinator.keep_metrics_in(metrics);
            }
            let page = page.map(|(feeds, page)| {
                coordinator.pull_records(feeds);
                page
            });
            let steered = drive(
                coordinator,
                deadline,
                page.as_ref(),
                &*interrupted,
                &thread_done,
            );
            if let Some(page) = page {
                page.finish();
            }
            if let Some(server) = server {
                server.stop();
            }
            Ok(steered)
        })
        .context("starting the steering thread")?;
    Ok(Steering { done, thread })
}

fn drive(
    mut coordinator: Coordinator,
    deadline: Duration,
    page: Option<&RunPage>,
    interrupted: &dyn Fn() -> bool,
    done: &AtomicBool,
) -> Steered {
    let handle = LiveHandle::default();
    let notes = page.map(|page| crate::steer::follow_notes(page, &handle));
    let view = View::start(
        handle.clone(),
        ViewMode::Lines {
            every: Duration::from_secs(5),
            out: Box::new(std::io::stderr()),
            prefix: "loadlab kube: ".to_owned(),
        },
    )
    .ok();
    coordinator.drive(
        &handle,
        deadline,
        interrupted,
        &|| done.load(Ordering::Relaxed),
        &mut |event| {
            eprintln!("loadlab kube: {event}");
        },
    );
    if let Some(view) = view {
        view.finish(true);
    }
    if let Some(notes) = notes {
        let _ = notes.join();
    }
    Steered {
        fired: coordinator.fired().cloned(),
        verdict: coordinator.verdict(),
    }
}

impl Steering {
    /// Tells the thread the records are in (it stops polling) and waits for it.
    pub fn finish(self) -> anyhow::Result<Steered> {
        self.done.store(true, Ordering::Relaxed);
        match self.thread.join() {
            Ok(result) => result,
            Err(_) => anyhow::bail!("the steering thread panicked"),
        }
    }
}
