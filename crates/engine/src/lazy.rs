//! vegeta's `-lazy`: targets are read as they are needed. A feeder thread parses,
//! renders and resolves them and deals them out round-robin to the workers' queues
//! (worker w sends requests w, w + T, ... so it gets targets w, w + T, ...); the
//! bounded queues are the backpressure, so an endless target stream is never held.

use std::collections::HashMap;
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex, PoisonError};

use record::TargetInfo;
use workload::{Target, WorkloadError};

use crate::hosts::{Host, HostTable};
use crate::shared::PreparedTarget;
use crate::target_registry::{TargetRegistry, target_info};
use crate::{EngineError, StopHandle};

/// A boxed target iterator the engine reads from (once).
pub type TargetIter = Box<dyn Iterator<Item = Result<Target, WorkloadError>> + Send>;

/// Targets read on demand. Cloning shares the one underlying stream.
#[derive(Clone)]
pub struct TargetStream(Arc<Mutex<Option<TargetIter>>>);

impl TargetStream {
    /// A stream over `targets`, read by the run's feeder thread.
    pub fn new(targets: TargetIter) -> TargetStream {
        TargetStream(Arc::new(Mutex::new(Some(targets))))
    }

    fn take(&self) -> Option<TargetIter> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

impl std::fmt::Debug for TargetStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TargetStream")
    }
}

/// One target on its way to a worker.
pub(crate) struct LazyTarget {
    /// Record id (run-wide target table).
    pub id: u32,
    /// Prepared with the feeder's host id (`prepared.host`).
    pub prepared: PreparedTarget,
    /// The host itself, the first time this worker sees it.
    pub new_host: Option<Host>,
}

/// What the feeder leaves behind: the error that stopped it, if any.
pub(crate) type FeederResult = Arc<Mutex<Option<EngineError>>>;

pub(crate) struct FeederSetup {
    pub stream: TargetStream,
    pub keepalive: bool,
    pub unix_socket: Option<std::path::PathBuf>,
    pub registry: Arc<TargetRegistry>,
    pub stop: StopHandle,
    pub result: FeederResult,
    /// Which of the stream's targets this process sends.
    pub shard: workload::Shard,
}

/// Starts the feeder; returns one queue per worker.
pub(crate) fn start_feeder(
    setup: FeederSetup,
    workers: usize,
) -> std::io::Result<Vec<Receiver<LazyTarget>>> {
    let (senders, receivers): (Vec<_>, Vec<_>) = (0..workers)
        .map(|_| sync_channel::<LazyTarget>(1024))
        .unzip();
    std::thread::Builder::new()
        .name("loadlab-targets".to_owned())
        .spawn(move || {
            if let Err(err) = feed(&setup, &senders) {
                *setup.result.lock().unwrap_or_else(PoisonError::into_inner) = Some(err);
                setup.stop.drain();
            }
        })?;
    Ok(receivers)
}

fn feed(setup: &FeederSetup, queues: &[SyncSender<LazyTarget>]) -> Result<(), EngineError> {
    let Some(targets) = setup.stream.take() else {
        return Ok(());
    };
    let mut hosts = HostTable::default();
    let mut known_hosts: Vec<Vec<bool>> = vec![Vec::new(); queues.len()];
    let mut ids: HashMap<TargetInfo, u32> = HashMap::new();
    let (mut count, mut owned) = (0usize, 0usize);
    // A shard takes the stream's targets whose run-wide index is its own: its k-th
    // request then sends the target one machine's request I + k·N would have.
    for target in targets {
        let target = target.map_err(EngineError::Targets)?;
        count += 1;
        if !setup.shard.owns(count as u64 - 1) {
            continue;
        }
        let host = hosts.resolve(&target.url, setup.unix_socket.as_ref())?;
        let worker = owned % queues.len();
        owned += 1;
        let seen = &mut known_hosts[worker];
        seen.resize(hosts.hosts.len(), false);
        let new_host =
            (!std::mem::replace(&mut seen[host], true)).then(|| hosts.hosts[host].clone());
        let lazy = LazyTarget {
            id: intern(&mut ids, &setup.registry, &target),
            prepared: PreparedTarget::new(target, setup.keepalive, host)?,
            new_host,
        };
        if !send(&queues[worker], lazy, &setup.stop) {
            return Ok(());
        }
    }
    if count == 0 {
        return Err(EngineError::Config("no targets".to_owned()));
    }
    Ok(())
}

/// Blocks while the worker's queue is full; false once the worker is gone or the
/// run is stopping.
fn send(queue: &SyncSender<LazyTarget>, mut item: LazyTarget, stop: &StopHandle) -> bool {
    loop {
        match queue.try_send(item) {
            Ok(()) => return true,
            Err(TrySendError::Disconnected(_)) => return false,
            Err(TrySendError::Full(back)) => {
                if stop.is_stopping() {
                    return false;
                }
                item = back;
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
        }
    }
}

fn intern(ids: &mut HashMap<TargetInfo, u32>, registry: &TargetRegistry, target: &Target) -> u32 {
    *ids.entry(target_info(target))
        .or_insert_with_key(|info| registry.push(info.clone()))
}
