//! The replay's feeder: reads the logs again during the run and deals each request
//! to the workers with its due time (its logged offset over `-speed`, plus a pass's
//! period under `-loop`), and leaves what the log said about it ([`record::Logged`])
//! in [`ReplayOutput`] for the collector to write beside the records.
//!
//! A replayed request's record names its *path group* (`GET /users/{n}`), not its
//! whole URL: a log of ten million distinct URLs then makes a dictionary of a few
//! hundred entries, and `report -by=target` is a report per path group.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::{Arc, Mutex, PoisonError};

use record::{Logged, TargetInfo};
use url::Position;
use workload::{Shard, Target};

use crate::lazy::{self, Dealer, FeederResult, LazyTarget};
use crate::replay::{MAX_GROUPS, PassCounts, Replay};
use crate::shared::TraceHeaders;
use crate::target_registry::TargetRegistry;
use crate::{EngineError, StopHandle};

/// Logged entries are handed over in batches: one lock per batch, not per request.
const LOGGED_BATCH: usize = 256;

/// What the replay feeders leave for the collector and the end block.
#[derive(Default)]
pub(crate) struct ReplayOutput {
    /// What the logs said about requests dealt out; `intended_unix_ns` holds the
    /// offset from time zero until the collector writes it.
    pub logged: Mutex<Vec<Logged>>,
    /// Per attack: passes over the logs begun again (`-loop`).
    pub loops: Vec<AtomicU64>,
    /// Per attack: what its first pass over the logs dealt out.
    pub first_pass: Mutex<Vec<PassCounts>>,
}

impl ReplayOutput {
    pub(crate) fn new(attacks: usize) -> ReplayOutput {
        ReplayOutput {
            logged: Mutex::default(),
            loops: (0..attacks).map(|_| AtomicU64::new(0)).collect(),
            first_pass: Mutex::new(vec![PassCounts::default(); attacks]),
        }
    }

    /// What attack `attack`'s first pass dealt out.
    pub(crate) fn first_pass(&self, attack: usize) -> PassCounts {
        let passes = self
            .first_pass
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        passes.get(attack).copied().unwrap_or_default()
    }

    /// Takes every entry handed over so far.
    pub(crate) fn take_logged(&self, into: &mut Vec<Logged>) {
        into.append(&mut self.logged.lock().unwrap_or_else(PoisonError::into_inner));
    }
}

/// One replay attack's feeder.
pub(crate) struct ReplayFeeder {
    pub replay: Arc<Replay>,
    pub attack: u16,
    pub shard: Shard,
    /// When the plan ends (`-duration`), ns from time zero.
    pub end_ns: Option<u64>,
    /// What the run sends beside each `traceparent` (`-trace`); `None`: none.
    pub trace: Option<TraceHeaders>,
    pub unix_socket: Option<std::path::PathBuf>,
    pub registry: Arc<TargetRegistry>,
    pub output: Arc<ReplayOutput>,
    pub stop: StopHandle,
    pub result: FeederResult,
}

/// Starts the feeder; returns one queue per worker.
pub(crate) fn start(
    feeder: ReplayFeeder,
    workers: usize,
) -> std::io::Result<Vec<Receiver<LazyTarget>>> {
    let (result, stop) = (Arc::clone(&feeder.result), feeder.stop.clone());
    lazy::spawn_feeder(workers, result, stop, move |queues| feeder.feed(queues))
}

impl ReplayFeeder {
    fn feed(&self, queues: &[SyncSender<LazyTarget>]) -> Result<(), EngineError> {
        let mut pass = Pass {
            dealer: Dealer::new(
                queues,
                (self.replay.keepalive, self.trace.clone()),
                self.unix_socket.clone(),
            ),
            index: 0,
            logged: Vec::with_capacity(LOGGED_BATCH),
            first: true,
            counts: PassCounts::default(),
        };
        let period_ns = self.replay.period_ns().max(1);
        let mut result = Ok(());
        for loop_index in 0u64.. {
            let base_ns = loop_index * period_ns;
            if self.end_ns.is_some_and(|end| base_ns >= end) {
                break;
            }
            if loop_index > 0 {
                self.output.loops[usize::from(self.attack)].fetch_add(1, Ordering::Relaxed);
            }
            let outcome = self.pass(&mut pass, base_ns);
            pass.first = false;
            match outcome {
                Ok(true) if self.replay.repeat => {}
                Ok(_) => break,
                Err(err) => {
                    result = Err(err);
                    break;
                }
            }
        }
        self.hand_over(&mut pass.logged);
        let mut passes = self
            .output
            .first_pass
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(slot) = passes.get_mut(usize::from(self.attack)) {
            *slot = pass.counts;
        }
        result
    }

    /// Deals one pass over the logs; false once the run needs no more.
    fn pass(&self, pass: &mut Pass<'_>, base_ns: u64) -> Result<bool, EngineError> {
        let replay = &self.replay;
        let (mut stream, _) = replay.open().map_err(EngineError::Targets)?;
        let mut first = None;
        while let Some(request) = stream.next() {
            let request = request.map_err(EngineError::Targets)?;
            let first_unix_ns = *first.get_or_insert(request.time_unix_ns);
            if replay.filter.past_end(&request, first_unix_ns) {
                break;
            }
            if !replay.filter.keeps(&request, first_unix_ns) {
                continue;
            }
            let index = pass.index;
            pass.index += 1;
            if !self.shard.owns(index) {
                pass.counts.other_shards += u64::from(pass.first);
                continue;
            }
            let due_ns = base_ns + replay.offset_ns(request.time_unix_ns);
            if self.end_ns.is_some_and(|end| due_ns >= end) {
                return Ok(false);
            }
            let target = replay.target_of(&request).map_err(|reason| {
                let file = stream.last_file_name();
                EngineError::Config(format!("replay: {file}:{}: {reason}", request.line))
            })?;
            let id = self.group_id(&mut pass.dealer.ids, &target);
            pass.logged.push(Logged {
                attack: self.attack,
                target: id,
                seq: index,
                intended_unix_ns: due_ns,
                status: request.status.unwrap_or(0),
                latency_ns: request.latency_ns,
                bytes: request.bytes,
            });
            if pass.logged.len() >= LOGGED_BATCH {
                self.hand_over(&mut pass.logged);
            }
            if !pass.dealer.deal(target, id, due_ns, &self.stop)? {
                return Ok(false);
            }
            if pass.first {
                pass.counts.dealt += 1;
                if request.put_back_ns > 0 {
                    pass.counts.reordered += 1;
                    pass.counts.max_reorder_ns =
                        pass.counts.max_reorder_ns.max(request.put_back_ns);
                }
            }
        }
        Ok(true)
    }

    /// The record id of the target's path group (`GET http://host/users/{n}`); past
    /// [`MAX_GROUPS`] groups, new ones share `/{other}`.
    fn group_id(&self, ids: &mut HashMap<TargetInfo, u32>, target: &Target) -> u32 {
        let origin = &target.url[..Position::BeforePath];
        let mut info = TargetInfo {
            step: None,
            checks: Vec::new(),
            method: target.method.clone(),
            url: format!("{origin}{}", workload::path_group(target.url.as_str())),
        };
        if ids.len() >= MAX_GROUPS && !ids.contains_key(&info) {
            info.url = format!("{origin}/{{other}}");
        }
        lazy::intern(ids, &self.registry, info)
    }

    fn hand_over(&self, logged: &mut Vec<Logged>) {
        if logged.is_empty() {
            return;
        }
        let mut shared = self
            .output
            .logged
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        shared.append(logged);
    }
}

/// A feeder's state across passes.
struct Pass<'a> {
    dealer: Dealer<'a>,
    /// The run-wide index of the next request kept: its record's `seq`.
    index: u64,
    logged: Vec<Logged>,
    /// The first pass is under way: what it deals is counted.
    first: bool,
    counts: PassCounts,
}
