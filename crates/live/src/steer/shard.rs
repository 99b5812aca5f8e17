//! [`Shard`]: what the [`Coordinator`](super::Coordinator) knows of one shard, and how it
//! asks: [`ShardLink`] (plain HTTP, or the API server's pod proxy), one `/seconds`
//! call per poll, the records pulled after it when a page reads them, the shard's
//! [`Health`] judged from its answers and their timing, and its clock's offset
//! measured NTP-style from the call with the shortest round trip.

use std::collections::BTreeMap;
use std::io::Write;
use std::time::{Duration, Instant};

use engine::STEER_SILENCE;

use super::second::{
    STARTED_SINCE_VERSION, STREAMS_SINCE_VERSION, ShardReport, ShardSecond, ShardState,
};
use super::streams::ShardStreams;
use crate::started::LoadUnit;

/// A shard whose settled seconds trail the leader's by this many is behind.
pub const BEHIND_SECONDS: u64 = 3;
/// A shard's clock further off the coordinator's than this is named (its time zero,
/// and so its requests, are that far off the others').
pub const CLOCK_WARNING_NS: u64 = 50_000_000;

/// What happened that a person should read at once (a shard lost, a rule fired).
pub type Event = String;

/// How the coordinator reaches one shard.
pub trait ShardLink: Send {
    /// GETs `path_and_query` on the shard: the body of a 200, or why not.
    fn get(&mut self, path_and_query: &str) -> Result<Vec<u8>, String>;
    /// The shard's address as messages name it.
    fn address(&self) -> String;
}

/// How a shard is doing, as far as the coordinator knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    /// Not answered yet.
    Waiting,
    /// Answering and in step.
    InStep,
    /// Answering, but its seconds trail the leader's.
    Behind {
        /// Its next second to settle.
        at_second: u64,
    },
    /// Silent for longer than [`STEER_SILENCE`].
    Lost {
        /// Why the last call failed.
        why: String,
    },
    /// Its run is over.
    Finished,
}

impl Health {
    /// One word for counts and series labels.
    pub fn word(&self) -> &'static str {
        match self {
            Health::Waiting => "waiting",
            Health::InStep => "in_step",
            Health::Behind { .. } => "behind",
            Health::Lost { .. } => "lost",
            Health::Finished => "finished",
        }
    }
}

/// One shard, as the coordinator knows it.
pub(super) struct Shard {
    pub(super) link: Box<dyn ShardLink>,
    /// The last answer, without its seconds.
    pub(super) head: Option<ShardReport>,
    /// Seconds fetched and not merged yet.
    pub(super) pending: BTreeMap<u64, ShardSecond>,
    pub(super) next_from: u64,
    pub(super) last_answer: Option<Instant>,
    pub(super) last_error: String,
    pub(super) health: Health,
    /// Seconds that came after the merge had moved on without them.
    pub(super) late_seconds: u64,
    /// Bytes of answers received.
    pub(super) bytes_received: u64,
    /// The shard's clock minus the coordinator's, from the answer with the shortest
    /// round trip so far: (offset, round trip), ns.
    pub(super) clock: Option<(i64, u64)>,
    /// Where its records go as they are pulled ([`Coordinator::pull_records`]);
    /// dropped at their end, or when the shard is lost.
    pub(super) records: Option<Box<dyn Write + Send>>,
    pub(super) records_offset: u64,
    /// Its latest stream figures merged (a second may have none of its own).
    pub(super) streams: Option<ShardStreams>,
    /// It was named as an older shard, whose feed has no stream figures.
    older_named: bool,
}

impl Shard {
    pub(super) fn new(link: Box<dyn ShardLink>) -> Shard {
        Shard {
            link,
            head: None,
            pending: BTreeMap::new(),
            next_from: 0,
            last_answer: None,
            last_error: String::new(),
            health: Health::Waiting,
            late_seconds: 0,
            bytes_received: 0,
            clock: None,
            records: None,
            records_offset: 0,
            streams: None,
            older_named: false,
        }
    }

    /// `shard 2/4 (127.0.0.1:9002)`, or the address alone before it answered.
    pub(super) fn name(&self) -> String {
        match &self.head {
            Some(head) => format!(
                "shard {}/{} ({})",
                head.index,
                head.count,
                self.link.address()
            ),
            None => self.link.address(),
        }
    }

    /// One `/seconds` call, then the records written since, if they are pulled;
    /// keeps the answer or why there was none.
    pub(super) fn fetch(&mut self) {
        if self.health == Health::Finished {
            self.pull_records();
            return;
        }
        let asked_unix_ns = engine::unix_now_ns();
        let answer = self
            .link
            .get(&format!("/seconds?from={}", self.next_from))
            .and_then(|body| {
                self.bytes_received += body.len() as u64;
                serde_json::from_slice::<ShardReport>(&body)
                    .map_err(|err| format!("its answer is not a shard report: {err}"))
            });
        match answer {
            Ok(mut report) => {
                self.time_clock(asked_unix_ns, report.now_unix_ns);
                for second in std::mem::take(&mut report.seconds) {
                    self.next_from = self.next_from.max(second.second + 1);
                    let streams_well_formed =
                        (second.streams.as_ref()).is_none_or(ShardStreams::is_well_formed);
                    if second.latency.is_well_formed() && streams_well_formed {
                        self.pending.insert(second.second, second);
                    }
                }
                self.head = Some(report);
                self.last_answer = Some(Instant::now());
                self.last_error.clear();
                self.pull_records();
            }
            Err(why) => self.last_error = why,
        }
    }

    /// Pulls the record bytes written since the last call into the sink; drops the
    /// sink (the page's input ends) once the file is complete and read.
    pub(super) fn pull_records(&mut self) {
        let Some(sink) = self.records.as_mut() else {
            return;
        };
        let complete = self.head.as_ref().is_some_and(|head| head.records_complete);
        loop {
            let path = format!("/records?from={}", self.records_offset);
            let Ok(bytes) = self.link.get(&path) else {
                if self.health == Health::Finished {
                    // Its feed is gone: nothing more will come.
                    self.records = None;
                }
                return;
            };
            if bytes.is_empty() {
                if complete {
                    self.records = None;
                }
                return;
            }
            if sink.write_all(&bytes).is_err() {
                self.records = None;
                return;
            }
            self.records_offset += bytes.len() as u64;
            if bytes.len() < super::RECORDS_CHUNK {
                return;
            }
        }
    }

    /// Keeps the clock offset measured with the shortest round trip (the answer's
    /// time against the middle of the call, as NTP does).
    fn time_clock(&mut self, asked_unix_ns: u64, shard_unix_ns: u64) {
        let answered_unix_ns = engine::unix_now_ns();
        let round_trip_ns = answered_unix_ns.saturating_sub(asked_unix_ns);
        let middle = i128::from(asked_unix_ns) + i128::from(round_trip_ns / 2);
        let offset_ns = i64::try_from(i128::from(shard_unix_ns) - middle).unwrap_or(i64::MAX);
        if shard_unix_ns > 0 && self.clock.is_none_or(|(_, best)| round_trip_ns < best) {
            self.clock = Some((offset_ns, round_trip_ns));
        }
    }

    /// `shard 2/4 (...): its clock is 1.2s ahead of the coordinator's (±3ms)`, when
    /// the offset is larger than [`CLOCK_WARNING_NS`] beyond the measuring error.
    pub(super) fn clock_line(&self) -> Option<String> {
        let (offset_ns, round_trip_ns) = self.clock?;
        if offset_ns.unsigned_abs() <= CLOCK_WARNING_NS + round_trip_ns / 2 {
            return None;
        }
        let way = if offset_ns > 0 { "ahead of" } else { "behind" };
        let show = |ns: u64| units::GoDuration(units::round_for_report(Duration::from_nanos(ns)));
        Some(format!(
            "{}: its clock is {} {way} the coordinator's (±{}): its requests sit that far off the others' on the run's time axis",
            self.name(),
            show(offset_ns.unsigned_abs()),
            show(round_trip_ns / 2)
        ))
    }

    /// `waited`: the coordinator has waited long enough for a first answer.
    pub(super) fn judge_health(&self, leader: u64, waited: bool) -> Health {
        let finished = |head: &ShardReport| head.state == ShardState::Finished;
        if self.head.as_ref().is_some_and(finished) {
            return Health::Finished;
        }
        let silent = match self.last_answer {
            Some(at) => at.elapsed() >= STEER_SILENCE,
            None => waited,
        };
        if silent {
            let why = if self.last_error.is_empty() {
                "it never answered".to_owned()
            } else {
                self.last_error.clone()
            };
            return Health::Lost { why };
        }
        match &self.head {
            None => Health::Waiting,
            Some(_) if self.next_from + BEHIND_SECONDS <= leader => Health::Behind {
                at_second: self.next_from,
            },
            Some(_) => Health::InStep,
        }
    }

    /// Drops seconds the merge moved on without (counted: they are in the records).
    pub(super) fn drop_late(&mut self, next_second: u64) {
        let kept = self.pending.split_off(&next_second);
        self.late_seconds += std::mem::replace(&mut self.pending, kept).len() as u64;
    }

    /// Names it once if its feed lacks what the run's figures need: stream figures,
    /// or (in a run of flows, `unit`) the runs it started.
    pub(super) fn announce_older(&mut self, unit: LoadUnit) -> Option<Event> {
        let version = self.head.as_ref()?.feed_version;
        let lacks = if version < STREAMS_SINCE_VERSION {
            "stream figures: the run's connections and messages are not merged, and stream rules say nothing"
        } else if version < STARTED_SINCE_VERSION && unit != LoadUnit::Requests {
            "runs started: the run's delivered load is counted in requests"
        } else {
            return None;
        };
        if self.older_named {
            return None;
        }
        self.older_named = true;
        Some(format!(
            "{}: an older loadlab, whose feed has no {lacks}",
            self.name()
        ))
    }

    pub(super) fn announce(&self) -> Option<Event> {
        match &self.health {
            Health::Lost { why } => Some(format!(
                "{} lost: no answer for {}s ({why}); it keeps its records and stops on its own rules",
                self.name(),
                STEER_SILENCE.as_secs()
            )),
            Health::Behind { at_second } => Some(format!(
                "{} behind: its last settled second is {}, the others' are {BEHIND_SECONDS}s or more ahead",
                self.name(),
                at_second.saturating_sub(1)
            )),
            Health::Finished => (self.head.as_ref())
                .filter(|head| !head.stop_detail.is_empty())
                .map(|head| format!("{} stopped: {}", self.name(), head.stop_detail)),
            Health::Waiting | Health::InStep => None,
        }
    }
}
