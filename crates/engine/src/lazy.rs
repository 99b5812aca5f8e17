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
use crate::shared::{PreparedTarget, TraceHeaders};
use crate::target_registry::{TargetRegistry, target_info};
use crate::{EngineError, StopHandle};

/// Targets a feeder may be ahead of each worker: 200 ms at 20k requests/s, so a
/// feeder at low priority that a busy core leaves waiting a while never runs a
/// replay's queue dry (a worker that finds it empty looks again a millisecond later).
const LAZY_QUEUE: usize = 4096;

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
    /// A replay's request: when it is due (ns from time zero); 0 otherwise.
    pub due_ns: u64,
}

/// What the feeder leaves behind: the error that stopped it, if any.
pub(crate) type FeederResult = Arc<Mutex<Option<EngineError>>>;

pub(crate) struct FeederSetup {
    pub stream: TargetStream,
    pub keepalive: bool,
    /// What the run sends beside each `traceparent` (`-trace`); `None`: none.
    pub trace: Option<TraceHeaders>,
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
    let (result, stop) = (Arc::clone(&setup.result), setup.stop.clone());
    spawn_feeder(workers, result, stop, move |queues| feed(&setup, queues))
}

/// Runs `feed` on a thread of its own with one bounded queue per worker; the error that
/// stops it is kept in `result` and drains the run.
pub(crate) fn spawn_feeder(
    workers: usize,
    result: FeederResult,
    stop: StopHandle,
    feed: impl FnOnce(&[SyncSender<LazyTarget>]) -> Result<(), EngineError> + Send + 'static,
) -> std::io::Result<Vec<Receiver<LazyTarget>>> {
    let (senders, receivers): (Vec<_>, Vec<_>) = (0..workers)
        .map(|_| sync_channel::<LazyTarget>(LAZY_QUEUE))
        .unzip();
    std::thread::Builder::new()
        .name("loadlab-targets".to_owned())
        .spawn(move || {
            // Like the collector: on a shared core the feeder, a queue ahead of the
            // workers, must use their idle time, not preempt one that is due to send.
            let _ = rustix::process::setpriority_process(Some(rustix::thread::gettid()), 19);
            if let Err(err) = feed(&senders) {
                *result.lock().unwrap_or_else(PoisonError::into_inner) = Some(err);
                stop.drain();
            }
        })?;
    Ok(receivers)
}

fn feed(setup: &FeederSetup, queues: &[SyncSender<LazyTarget>]) -> Result<(), EngineError> {
    let Some(targets) = setup.stream.take() else {
        return Ok(());
    };
    let mut dealer = Dealer::new(
        queues,
        (setup.keepalive, setup.trace.clone()),
        setup.unix_socket.clone(),
    );
    let mut count = 0u64;
    // A shard takes the stream's targets whose run-wide index is its own: its k-th
    // request then sends the target one machine's request I + k·N would have.
    for target in targets {
        let target = target.map_err(EngineError::Targets)?;
        count += 1;
        if !setup.shard.owns(count - 1) {
            continue;
        }
        let id = intern(&mut dealer.ids, &setup.registry, target_info(&target));
        if !dealer.deal(target, id, 0, &setup.stop)? {
            return Ok(());
        }
    }
    if count == 0 {
        return Err(EngineError::Config("no targets".to_owned()));
    }
    Ok(())
}

/// Deals targets out to the workers' queues in turn, telling each worker about a host
/// the first time it gets one.
pub(crate) struct Dealer<'a> {
    queues: &'a [SyncSender<LazyTarget>],
    keepalive: bool,
    trace: Option<TraceHeaders>,
    unix_socket: Option<std::path::PathBuf>,
    hosts: HostTable,
    known_hosts: Vec<Vec<bool>>,
    /// Record ids of the targets dealt so far.
    pub ids: HashMap<TargetInfo, u32>,
    dealt: usize,
}

impl<'a> Dealer<'a> {
    /// `(keepalive, trace)`: the attack's keep-alive, and what the run sends beside
    /// each `traceparent` (`None`: no `-trace`).
    pub(crate) fn new(
        queues: &'a [SyncSender<LazyTarget>],
        (keepalive, trace): (bool, Option<TraceHeaders>),
        unix_socket: Option<std::path::PathBuf>,
    ) -> Dealer<'a> {
        Dealer {
            queues,
            keepalive,
            trace,
            unix_socket,
            hosts: HostTable::default(),
            known_hosts: vec![Vec::new(); queues.len()],
            ids: HashMap::new(),
            dealt: 0,
        }
    }

    /// Hands `target` (record id `id`, due at `due_ns` for a replay) to the next
    /// worker; false once the workers are gone or the run is stopping.
    pub(crate) fn deal(
        &mut self,
        target: Target,
        id: u32,
        due_ns: u64,
        stop: &StopHandle,
    ) -> Result<bool, EngineError> {
        let host = self
            .hosts
            .resolve_target(&target, self.unix_socket.as_ref())?;
        let worker = self.dealt % self.queues.len();
        self.dealt += 1;
        let seen = &mut self.known_hosts[worker];
        seen.resize(self.hosts.hosts.len(), false);
        let new_host =
            (!std::mem::replace(&mut seen[host], true)).then(|| self.hosts.hosts[host].clone());
        let lazy = LazyTarget {
            id,
            prepared: PreparedTarget::new(target, self.keepalive, host, self.trace.as_ref(), true)?,
            new_host,
            due_ns,
        };
        Ok(send(&self.queues[worker], lazy, stop))
    }
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

/// The record id of `info`, registered the first time it is seen.
pub(crate) fn intern(
    ids: &mut HashMap<TargetInfo, u32>,
    registry: &TargetRegistry,
    info: TargetInfo,
) -> u32 {
    *ids.entry(info)
        .or_insert_with_key(|info| registry.push(info.clone()))
}
