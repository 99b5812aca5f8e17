//! [`Coordinator`]: one run over many shards, steered as one. Every
//! [`POLL`](Coordinator::POLL) it asks each shard (through a [`ShardLink`]) for the
//! seconds it settled since the last answer, and merges a second once every shard
//! that is still in step has it: the merged second is judged by the run's stop rules
//! (the shards' own, which they defer while polled) and shown in one [`Snapshot`].
//!
//! A shard that does not answer for [`STEER_SILENCE`](engine::STEER_SILENCE) is *lost*, and one whose seconds
//! trail the leader's by [`BEHIND_SECONDS`](super::BEHIND_SECONDS) is *behind*: either is named at once, and
//! the merge goes on without it (its late seconds are counted, not merged). A rule
//! that fires sends `/stop` to every shard at once; each drains and writes its end
//! block, so its records are complete up to the stop. [`Coordinator::verdict`] says
//! what share of the asked load was not delivered.

use std::collections::BTreeMap;
use std::io::Write;
use std::time::{Duration, Instant};

use record::ErrorKind;
use workload::{Fired, RuleWatch, StopRule, StreamFigures};

use super::buckets::Buckets;
use super::second::{MergedSecond, STREAMS_SINCE_VERSION, ShardReport, ShardSecond};
use super::shard::{Event, Health, Shard, ShardLink};
use super::streams::RunStreams;
use crate::snapshot::{Latency, RuleState, Snapshot, Window};
use crate::started::LoadUnit;

const SECOND_NS: u64 = 1_000_000_000;

/// The steering of one run; see the module docs.
pub struct Coordinator {
    shards: Vec<Shard>,
    started: Instant,
    /// How long a shard may take to answer first (pods scheduling, a process starting).
    startup_grace: Duration,
    watches: Vec<RuleWatch>,
    /// The next second to merge.
    next_second: u64,
    fired: Option<Fired>,
    /// When the stop went out, and when the last shard said it finished.
    stop_sent: Option<Instant>,
    all_stopped: Option<Duration>,
    run: RunTotals,
    /// The stream connections merged (`ws`, `sse` steps, streamed calls).
    streams: RunStreams,
    snapshot: Snapshot,
    /// The run's Prometheus exposition, when asked for ([`Coordinator::keep_metrics`]).
    metrics: Option<crate::Latest<String>>,
    polls: u64,
}

/// The shards' series are fetched every this many polls (2 s): scrapes come every
/// 10-60 s, and each fetch costs every shard a render.
const METRICS_EVERY_POLLS: u64 = 4;

/// The merged run so far.
#[derive(Default)]
struct RunTotals {
    requests: u64,
    successes: u64,
    latency: Buckets,
    latency_max_ns: u64,
    lag: Buckets,
    codes: BTreeMap<u16, u64>,
    errors: BTreeMap<ErrorKind, u64>,
}

impl Coordinator {
    /// How often shards are asked.
    pub const POLL: Duration = Duration::from_millis(500);

    /// Steers the shards behind `links`, judging `rules` on merged seconds (when
    /// empty, the rules the shards report are used); a shard that has not answered
    /// within `startup_grace` is lost.
    pub fn new(
        links: Vec<Box<dyn ShardLink>>,
        rules: &[StopRule],
        startup_grace: Duration,
    ) -> Coordinator {
        Coordinator {
            shards: links.into_iter().map(Shard::new).collect(),
            started: Instant::now(),
            startup_grace,
            watches: rules.iter().cloned().map(RuleWatch::new).collect(),
            next_second: 0,
            fired: None,
            stop_sent: None,
            all_stopped: None,
            run: RunTotals::default(),
            streams: RunStreams::default(),
            snapshot: Snapshot::default(),
            metrics: None,
            polls: 0,
        }
    }

    /// Keeps one Prometheus exposition of the whole run from now on: the shards' own
    /// series added up ([`super::merge_expositions`]), and each shard's health.
    pub fn keep_metrics(&mut self) -> crate::Latest<String> {
        let latest = crate::Latest::default();
        self.keep_metrics_in(latest.clone());
        latest
    }

    /// [`Coordinator::keep_metrics`] into a handle made before.
    pub fn keep_metrics_in(&mut self, latest: crate::Latest<String>) {
        self.metrics = Some(latest);
    }

    fn refresh_metrics(&mut self) {
        let Some(latest) = &self.metrics else {
            return;
        };
        let mut texts: Vec<String> = std::thread::scope(|scope| {
            let calls: Vec<_> = (self.shards.iter_mut())
                .filter(|shard| matches!(shard.health, Health::InStep | Health::Behind { .. }))
                .map(|shard| scope.spawn(move || shard.link.get("/metrics").ok()))
                .collect();
            calls
                .into_iter()
                .filter_map(|call| call.join().ok().flatten())
                .map(|body| String::from_utf8_lossy(&body).into_owned())
                .collect()
        });
        texts.push(self.health_series());
        let mut text = super::merge_expositions(&texts);
        if let Some(streams) = self.streams.so_far() {
            // Worded here from the merged figures: a latency quantile does not add up.
            text += &crate::exposition::streams_text(streams);
        }
        latest.publish(&text);
    }

    /// `loadlab_shards{health=...}` and each shard's settled seconds, as series.
    fn health_series(&self) -> String {
        let mut text = String::from(
            "# HELP loadlab_shards Shards of the steered run, by health\n\
             # TYPE loadlab_shards gauge\n",
        );
        for word in ["waiting", "in_step", "behind", "lost", "finished"] {
            let count = (self.shards.iter())
                .filter(|shard| shard.health.word() == word)
                .count();
            text += &format!("loadlab_shards{{health=\"{word}\"}} {count}\n");
        }
        text += "# HELP loadlab_shard_settled_seconds Seconds of the run each shard has settled\n\
                 # TYPE loadlab_shard_settled_seconds gauge\n";
        for (index, shard) in self.shards.iter().enumerate() {
            text += &format!(
                "loadlab_shard_settled_seconds{{shard=\"{index}\"}} {}\n",
                shard.next_from
            );
        }
        text
    }

    /// Asks every shard once (in parallel), merges what is complete, judges the
    /// rules and stops every shard when one fires. Returns what a person should read.
    pub fn poll(&mut self) -> Vec<Event> {
        std::thread::scope(|scope| {
            for shard in &mut self.shards {
                scope.spawn(move || shard.fetch());
            }
        });
        let mut events = self.check_shards();
        events.extend(self.adopt_rules());
        events.extend(self.merge());
        if self.polls.is_multiple_of(METRICS_EVERY_POLLS) {
            self.refresh_metrics();
        }
        self.polls += 1;
        if self.stop_sent.is_some() && self.all_stopped.is_none() && self.is_over() {
            self.all_stopped = self.stop_sent.map(|sent| sent.elapsed());
        }
        self.refresh_snapshot();
        events
    }

    /// Sends `/stop` to every shard at once, saying why; returns the shards that
    /// could not be told (they stop on their own rules, or at their end).
    pub fn stop_all(&mut self, why: &str) -> Vec<Event> {
        self.stop_sent.get_or_insert_with(Instant::now);
        let path = format!(
            "/stop?why={}",
            url::form_urlencoded::byte_serialize(why.as_bytes()).collect::<String>()
        );
        let mut failed = Vec::new();
        std::thread::scope(|scope| {
            let calls: Vec<_> = (self.shards.iter_mut())
                .filter(|shard| shard.health != Health::Finished)
                .map(|shard| {
                    let path = &path;
                    scope.spawn(move || {
                        shard
                            .link
                            .get(path)
                            .err()
                            .map(|why| format!("{}: cannot stop it: {why}", shard.name()))
                    })
                })
                .collect();
            failed.extend(
                calls
                    .into_iter()
                    .filter_map(|call| call.join().ok().flatten()),
            );
        });
        failed
    }

    /// Polls until every shard finished or was lost, `done` says so, or `deadline`:
    /// each poll's events go to `say` and the merged view to `view`. When
    /// `interrupted` turns true (Ctrl-C at the coordinator), every shard is stopped
    /// once and the polls go on until they finish.
    pub fn drive(
        &mut self,
        view: &crate::LiveHandle,
        deadline: Duration,
        interrupted: &dyn Fn() -> bool,
        done: &dyn Fn() -> bool,
        say: &mut dyn FnMut(&str),
    ) {
        let until = Instant::now() + deadline;
        let mut told_to_stop = false;
        while !self.is_over() && !done() && Instant::now() < until {
            let polled = Instant::now();
            for event in self.poll() {
                say(&event);
            }
            view.publish(&self.snapshot);
            if interrupted() && !told_to_stop {
                told_to_stop = true;
                say("interrupted: stopping every shard");
                for event in self.stop_all("stopped at the coordinator (interrupted)") {
                    say(&event);
                }
            }
            std::thread::sleep(Self::POLL.saturating_sub(polled.elapsed()));
        }
        self.end_records();
        self.snapshot.finished = true;
        view.publish(&self.snapshot);
    }

    /// Pulls every shard's record file as it is written into `sinks` (one per
    /// shard, in order: a live page's feeds, files), from the next poll on.
    pub fn pull_records(&mut self, sinks: Vec<Box<dyn Write + Send>>) {
        for (shard, sink) in self.shards.iter_mut().zip(sinks) {
            shard.records = Some(sink);
        }
    }

    /// Stops pulling records: every sink is dropped (their inputs end).
    pub fn end_records(&mut self) {
        for shard in &mut self.shards {
            shard.records = None;
        }
    }

    /// Every shard finished or lost.
    pub fn is_over(&self) -> bool {
        !self.shards.is_empty()
            && (self.shards.iter()).all(|shard| match shard.health {
                Health::Finished => shard.records.is_none(),
                Health::Lost { .. } => true,
                _ => false,
            })
    }

    /// The rule that fired on merged figures, if one did.
    pub fn fired(&self) -> Option<&Fired> {
        self.fired.as_ref()
    }

    /// The merged view as it stands.
    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }

    /// Each shard's health, in shard order.
    pub fn health(&self) -> Vec<(String, Health)> {
        (self.shards.iter())
            .map(|shard| (shard.name(), shard.health.clone()))
            .collect()
    }

    /// The run's end in a few lines: shards finished, lost or behind, the rule that
    /// fired and how fast every shard stopped, and the share of the asked load that
    /// was not delivered.
    pub fn verdict(&self) -> Vec<String> {
        let mut lines = Vec::new();
        let finished = (self.shards.iter())
            .filter(|shard| shard.health == Health::Finished)
            .count();
        lines.push(format!(
            "{} shards: {finished} finished, {} lost",
            self.shards.len(),
            self.shards.len() - finished
        ));
        for shard in &self.shards {
            if let Health::Lost { why } = &shard.health {
                lines.push(format!(
                    "{} lost after {}s of the run: {why}",
                    shard.name(),
                    shard.next_from
                ));
            }
            lines.extend(shard.clock_line());
            if shard.late_seconds > 0 {
                lines.push(format!(
                    "{}: {} seconds came after the merge had moved on (in its records, not in the live figures)",
                    shard.name(),
                    shard.late_seconds
                ));
            }
        }
        if let Some(fired) = &self.fired {
            let delay = self.all_stopped.map_or_else(
                || "not every shard said it stopped".to_owned(),
                |delay| {
                    let delay = units::GoDuration(units::round_for_report(delay));
                    format!("every shard stopped within {delay} of the stop")
                },
            );
            lines.push(format!(
                "stop rule {} on the merged figures of {} shards; {delay}",
                fired.describe(),
                self.shards.len()
            ));
        }
        lines.extend(self.streams.verdict());
        lines.push(self.delivered_line());
        let bytes: u64 = self.shards.iter().map(|shard| shard.bytes_received).sum();
        let shard_seconds = (self.next_second * self.shards.len() as u64).max(1);
        lines.push(format!(
            "live figures: {} KiB from {} shards over {}s ({} bytes per shard-second)",
            bytes / 1024,
            self.shards.len(),
            self.next_second,
            bytes / shard_seconds
        ));
        let records: u64 = self.shards.iter().map(|shard| shard.records_offset).sum();
        if records > 0 {
            lines.push(format!("records pulled live: {} KiB", records / 1024));
        }
        lines
    }

    /// `74.9% of the asked load was not delivered (37450 of about 50000 requests
    /// sent)`; a flow's in runs started, what its schedule asks for (`... (20 of about
    /// 20 runs started)`). A lost shard's share is estimated from the shards that
    /// finished (each asks 1/N).
    fn delivered_line(&self) -> String {
        let (delivered, words) = match self.started() {
            Some(started) => (started, format!("{} started", self.unit().word())),
            None => (
                self.heads().map(|head| head.sent).sum(),
                "requests sent".to_owned(),
            ),
        };
        let finished: Vec<&ShardReport> = (self.shards.iter())
            .filter(|shard| shard.health == Health::Finished)
            .filter_map(|shard| shard.head.as_ref())
            .collect();
        let count = self.heads().map(|head| head.count).max().unwrap_or(0);
        let asked_finished: Option<u64> = finished.iter().map(|head| head.asked).sum();
        match asked_finished {
            Some(asked) if !finished.is_empty() && asked > 0 => {
                let whole = asked * count / finished.len() as u64;
                let share = 1.0 - delivered as f64 / whole.max(1) as f64;
                format!(
                    "{:.1}% of the asked load was not delivered ({delivered} of about {whole} {words})",
                    (share * 100.0).max(0.0)
                )
            }
            _ => format!("{delivered} {words} by the shards that answered"),
        }
    }

    /// What the run's asked load is counted in, as its shards say (an older shard
    /// says nothing: requests).
    fn unit(&self) -> LoadUnit {
        (self.heads().map(|head| head.unit))
            .find(|unit| *unit != LoadUnit::Requests)
            .unwrap_or_default()
    }

    /// The load the shards started, when it is not requests and every shard that
    /// answered says it (an older one does not: the load is then counted in requests).
    fn started(&self) -> Option<u64> {
        if self.unit() == LoadUnit::Requests {
            return None;
        }
        self.heads().map(|head| head.started).sum()
    }

    fn heads(&self) -> impl Iterator<Item = &ShardReport> {
        self.shards.iter().filter_map(|shard| shard.head.as_ref())
    }

    /// Names shards that turned lost or behind, and refuses to merge other runs'.
    fn check_shards(&mut self) -> Vec<Event> {
        let mut events = Vec::new();
        let leader = (self.shards.iter())
            .filter(|shard| shard.health != Health::Finished)
            .map(|shard| shard.next_from)
            .max()
            .unwrap_or(0);
        let first = self.heads().next().map(|head| head.fingerprint.clone());
        let unit = self.unit();
        let waited = self.started.elapsed() >= self.startup_grace;
        for shard in &mut self.shards {
            let was = shard.health.clone();
            shard.drop_late(self.next_second);
            shard.health = shard.judge_health(leader, waited);
            if let (Some(first), Some(head)) = (&first, &shard.head)
                && head.fingerprint != *first
            {
                shard.health = Health::Lost {
                    why: format!(
                        "a shard of another run (plan fingerprint {} against {first})",
                        head.fingerprint
                    ),
                };
            }
            if shard.health != was {
                events.extend(shard.announce());
            }
            events.extend(shard.announce_older(unit));
            if matches!(shard.health, Health::Lost { .. }) {
                // Its records end where they were cut; the page reads on without it.
                shard.records = None;
            }
        }
        events
    }

    /// Takes the shards' own rules when none were given (they agree: same run).
    fn adopt_rules(&mut self) -> Vec<Event> {
        if !self.watches.is_empty() {
            return Vec::new();
        }
        let Some(head) = self.heads().next() else {
            return Vec::new();
        };
        let mut events = Vec::new();
        let rules = head.rules.clone();
        for text in rules {
            match StopRule::parse(&text) {
                Ok(rule) => self.watches.push(RuleWatch::new(rule)),
                Err(err) => events.push(format!("a shard's stop rule '{text}': {err}")),
            }
        }
        events
    }

    /// Merges every second all in-step shards have settled; judges the rules.
    fn merge(&mut self) -> Vec<Event> {
        let mut events = Vec::new();
        // A sum without an older shard's connections would read as them lost.
        let older = (self.heads()).any(|head| head.feed_version < STREAMS_SINCE_VERSION);
        while self.second_is_complete(self.next_second) {
            let second = self.next_second;
            self.next_second += 1;
            let mut merged = MergedSecond::new(second);
            for shard in &mut self.shards {
                if let Some(mut figures) = shard.pending.remove(&second) {
                    self.run.add(&figures);
                    merged.add(&figures);
                    if let Some(streams) = figures.streams.take()
                        && !older
                    {
                        self.streams.count(&streams);
                        shard.streams = Some(streams);
                    }
                }
            }
            merged.streams = (!older).then(|| self.merged_streams(second)).flatten();
            self.show_second(&merged);
            if self.fired.is_none()
                && let Some(fired) = self.judge(&merged)
            {
                let why = format!(
                    "{} on the merged figures of {} shards",
                    fired.describe(),
                    self.shards.len()
                );
                events.push(format!("stop rule {why}: stopping every shard"));
                self.fired = Some(fired);
                events.extend(self.stop_all(&why));
            }
        }
        events
    }

    /// Every shard's latest stream figures summed as the second `second`; `None`
    /// before a connection opened.
    fn merged_streams(&mut self, second: u64) -> Option<StreamFigures> {
        let start_unix_ns = self.heads().map(|head| head.start_unix_ns).max()?;
        let latest = (self.shards.iter())
            .filter(|shard| !matches!(shard.health, Health::Lost { .. }))
            .filter_map(|shard| shard.streams.as_ref());
        (self.streams).second(start_unix_ns + (second + 1) * SECOND_NS, latest)
    }

    /// Every shard has `second`, is past it, or cannot hold the merge up.
    fn second_is_complete(&self, second: u64) -> bool {
        let mut any = false;
        for shard in &self.shards {
            match shard.health {
                Health::Lost { .. } | Health::Behind { .. } => {}
                Health::Waiting => return false,
                Health::InStep | Health::Finished => {
                    if shard.next_from <= second {
                        return false;
                    }
                    any = true;
                }
            }
        }
        any
    }

    fn judge(&mut self, merged: &MergedSecond) -> Option<Fired> {
        let stats = merged.stats();
        let mut fired = None;
        for watch in &mut self.watches {
            let now = watch.observe(merged.second * SECOND_NS, &stats);
            fired = fired.or(now);
        }
        fired
    }

    fn show_second(&mut self, merged: &MergedSecond) {
        let stats = merged.stats();
        let last = &mut self.snapshot.last_second;
        *last = Window {
            span_ns: SECOND_NS,
            asked: merged.asked_rate_per_sec.map(|rate| rate.round() as u64),
            // A settled second holds completions, not the runs started in it.
            started: None,
            sent: merged.requests,
            completed: merged.requests,
            successes: merged.successes,
            latency: Latency {
                p50_ns: stats.latency.p50_ns,
                p99_ns: stats.latency.p99_ns,
                max_ns: stats.latency.max_ns,
            },
            lag_p99_ns: stats.lag_p99_ns,
        };
        self.snapshot.elapsed_ns = (merged.second + 1) * SECOND_NS;
        self.snapshot.streams = self.streams.so_far().cloned();
        self.snapshot.target_rate_per_sec = merged.asked_rate_per_sec;
        self.snapshot.rules = (self.watches.iter())
            .map(|watch| RuleState {
                rule: watch.rule.to_string(),
                held_ns: watch.held_ns((merged.second + 1) * SECOND_NS),
                for_ns: watch.rule.for_ns(),
                value: watch.rule.format_value(watch.last_value()),
            })
            .collect();
    }

    fn refresh_snapshot(&mut self) {
        let sum = |field: fn(&ShardReport) -> u64| self.heads().map(field).sum::<u64>();
        let (sent, in_flight, behind) = (
            sum(|head| head.sent),
            sum(|head| head.in_flight),
            sum(|head| head.behind),
        );
        let asked: Option<u64> = self.heads().map(|head| head.asked).sum();
        let (unit, started) = (self.unit(), self.started());
        let (shards, finished) = (self.health_lines(), self.is_over());
        let totals = &self.run;
        let snapshot = &mut self.snapshot;
        snapshot.unit = unit;
        snapshot.run = Window {
            span_ns: snapshot.elapsed_ns,
            asked,
            started,
            sent,
            completed: totals.requests,
            successes: totals.successes,
            latency: Latency {
                p50_ns: totals.latency.quantile(0.5).min(totals.latency_max_ns),
                p99_ns: totals.latency.quantile(0.99).min(totals.latency_max_ns),
                max_ns: totals.latency_max_ns,
            },
            lag_p99_ns: totals.lag.quantile(0.99),
        };
        (snapshot.in_flight, snapshot.behind) = (in_flight, behind);
        snapshot.status_codes = totals.codes.iter().map(|(c, n)| (*c, *n)).collect();
        snapshot.errors = totals.errors.iter().map(|(k, n)| (*k, *n)).collect();
        snapshot
            .errors
            .sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        (snapshot.shards, snapshot.finished) = (shards, finished);
    }

    /// `shards 4: 3 in step, 1 lost`, then a line per shard not in step.
    fn health_lines(&self) -> Vec<String> {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        let mut lines = vec![String::new()];
        for shard in &self.shards {
            let line = match &shard.health {
                Health::Behind { at_second } => {
                    Some(format!("{} behind at second {at_second}", shard.name()))
                }
                Health::Lost { why } => Some(format!("{} lost: {why}", shard.name())),
                Health::Waiting | Health::InStep | Health::Finished => None,
            };
            *counts.entry(shard.health.word()).or_default() += 1;
            lines.extend(line);
        }
        let parts: Vec<String> = (counts.iter())
            .map(|(word, n)| format!("{n} {}", word.replace('_', " ")))
            .collect();
        lines[0] = format!("shards {}: {}", self.shards.len(), parts.join(", "));
        lines
    }
}

impl RunTotals {
    fn add(&mut self, second: &ShardSecond) {
        self.requests += second.requests;
        self.successes += second.successes;
        self.latency.merge(&second.latency);
        self.latency_max_ns = self.latency_max_ns.max(second.latency_max_ns);
        self.lag.merge(&second.lag);
        for (code, count) in &second.codes {
            *self.codes.entry(*code).or_default() += count;
        }
        for (kind, count) in &second.errors {
            *self.errors.entry(*kind).or_default() += count;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::steer::{FEED_VERSION, ShardState, ShardStreams};

    /// A shard that has settled `seconds` seconds, each with 10 requests of which
    /// `errors` failed, and whose clock is `clock_offset_ns` off.
    struct FakeShard {
        index: u64,
        seconds: u64,
        errors: u64,
        clock_offset_ns: i64,
        finished: bool,
        stopped: Vec<String>,
        /// Connections it holds, sampled in every second but `unsampled`.
        open: Option<u64>,
        unsampled: u64,
        feed_version: u32,
        /// Its head's load: asked, requests sent, what the load is counted in and
        /// started.
        asked: Option<u64>,
        sent: u64,
        unit: LoadUnit,
        started: Option<u64>,
    }

    impl FakeShard {
        fn new(index: u64, seconds: u64, errors: u64) -> FakeShard {
            FakeShard {
                index,
                seconds,
                errors,
                clock_offset_ns: 0,
                finished: false,
                stopped: Vec::new(),
                open: None,
                unsampled: u64::MAX,
                feed_version: FEED_VERSION,
                asked: None,
                sent: 0,
                unit: LoadUnit::Requests,
                started: None,
            }
        }

        /// Finished, a flow of 3 steps at 5 runs/s for 2 s: 10 runs asked and
        /// started, 30 requests.
        fn flow_done(index: u64) -> FakeShard {
            FakeShard {
                finished: true,
                asked: Some(10),
                sent: 30,
                unit: LoadUnit::Runs,
                started: Some(10),
                ..FakeShard::new(index, 2, 0)
            }
        }

        /// Holding `open` connections, 10 messages in a second each.
        fn holding(index: u64, seconds: u64, open: u64) -> FakeShard {
            FakeShard {
                open: Some(open),
                ..FakeShard::new(index, seconds, 0)
            }
        }

        fn streams(&self, second: u64) -> Option<ShardStreams> {
            let open = self.open.filter(|_| second != self.unsampled)?;
            Some(ShardStreams {
                stats: record::StreamStats {
                    open,
                    opened: if second == 0 { open } else { 0 },
                    messages_in: open * 10,
                    ..record::StreamStats::default()
                },
                span_ns: SECOND_NS,
            })
        }
    }

    impl ShardLink for FakeShard {
        fn get(&mut self, path_and_query: &str) -> Result<Vec<u8>, String> {
            if let Some(why) = path_and_query.strip_prefix("/stop?why=") {
                self.stopped.push(why.to_owned());
                return Ok(Vec::new());
            }
            let from: u64 = (path_and_query.strip_prefix("/seconds?from="))
                .and_then(|from| from.parse().ok())
                .ok_or("a bad path")?;
            let report = ShardReport {
                feed_version: self.feed_version,
                index: self.index,
                count: 2,
                fingerprint: "f".into(),
                rules: vec!["errors > 50% for 2s".into()],
                now_unix_ns: engine::unix_now_ns().saturating_add_signed(self.clock_offset_ns),
                asked: self.asked,
                sent: self.sent,
                unit: self.unit,
                started: self.started,
                state: if self.finished {
                    ShardState::Finished
                } else {
                    ShardState::Running
                },
                seconds: (from..self.seconds)
                    .map(|second| ShardSecond {
                        second,
                        requests: 10,
                        successes: 10 - self.errors,
                        streams: self.streams(second),
                        ..ShardSecond::default()
                    })
                    .collect(),
                ..ShardReport::default()
            };
            Ok(serde_json::to_vec(&report).unwrap_or_default())
        }

        fn address(&self) -> String {
            format!("fake{}", self.index)
        }
    }

    fn coordinator(shards: Vec<FakeShard>) -> Coordinator {
        coordinator_with(shards, &[])
    }

    /// Steering `shards` with the coordinator's own `rules` (none: the shards').
    fn coordinator_with(shards: Vec<FakeShard>, rules: &[&str]) -> Coordinator {
        let links = shards
            .into_iter()
            .map(|shard| Box::new(shard) as Box<dyn ShardLink>)
            .collect();
        let rules: Vec<StopRule> = rules.iter().map(|r| StopRule::parse(r).unwrap()).collect();
        Coordinator::new(links, &rules, Duration::from_secs(10))
    }

    #[test]
    fn one_shard_s_errors_alone_do_not_fire_the_merged_rule() {
        // 80% errors on one shard, none on the other: 40% merged, under the rule's 50%.
        let mut steering = coordinator(vec![FakeShard::new(0, 5, 8), FakeShard::new(1, 5, 0)]);
        let events = steering.poll();
        assert!(steering.fired().is_none(), "{events:?}");
        assert_eq!(steering.snapshot().run.completed, 100);
        assert_eq!(steering.snapshot().shards[0], "shards 2: 2 in step");
    }

    #[test]
    fn a_rule_on_the_merged_figures_stops_every_shard() {
        let mut steering = coordinator(vec![FakeShard::new(0, 5, 8), FakeShard::new(1, 5, 4)]);
        let events = steering.poll();
        let fired = steering.fired().expect("60% merged errors for 2 s");
        assert_eq!(fired.at_ns, 2 * SECOND_NS);
        assert!(
            events
                .iter()
                .any(|event| event.ends_with("stopping every shard")),
            "{events:?}"
        );
        assert_eq!(
            steering.stop_all("again"),
            Vec::<String>::new(),
            "both reachable"
        );
    }

    #[test]
    fn a_shard_behind_is_named_and_the_merge_goes_on() {
        let mut steering = coordinator(vec![FakeShard::new(0, 9, 0), FakeShard::new(1, 2, 0)]);
        let events = steering.poll();
        assert!(
            events
                .iter()
                .any(|event| event.starts_with("shard 1/2 (fake1) behind")),
            "{events:?}"
        );
        assert_eq!(steering.snapshot().run.completed, 90 + 20);
        assert!(steering.snapshot().shards[1].contains("behind at second 2"));
    }

    #[test]
    fn a_shard_clock_far_off_is_measured_and_named() {
        let mut off = FakeShard::new(1, 3, 0);
        off.clock_offset_ns = 2_000_000_000;
        let mut steering = coordinator(vec![FakeShard::new(0, 3, 0), off]);
        steering.poll();
        let verdict = steering.verdict().join("\n");
        assert!(
            verdict.contains("shard 1/2 (fake1): its clock is 2s ahead of the coordinator's"),
            "{verdict}"
        );
        assert!(
            !verdict.contains("shard 0/2 (fake0): its clock"),
            "{verdict}"
        );
    }

    #[test]
    fn finished_shards_end_the_steering() {
        let mut done = FakeShard::new(0, 3, 0);
        done.finished = true;
        let mut steering = coordinator(vec![done]);
        assert!(!steering.is_over(), "nothing heard yet");
        steering.poll();
        assert!(steering.is_over());
        let verdict = steering.verdict();
        assert_eq!(verdict[0], "1 shards: 1 finished, 0 lost", "{verdict:?}");
    }

    #[test]
    fn a_connections_rule_is_judged_on_the_sum_of_the_shards_connections() {
        // 4 and 5 held: neither shard alone holds more than 6, the run holds 9. Shard 1
        // took no sample in second 2: its latest still counts.
        let mut quiet = FakeShard::holding(1, 5, 5);
        quiet.unsampled = 2;
        let rule = "connections_open > 6 for 3s";
        let mut steering = coordinator_with(vec![FakeShard::holding(0, 5, 4), quiet], &[rule]);
        let metrics = steering.keep_metrics();
        let events = steering.poll();
        let fired = steering.fired().expect("9 open for 3 s");
        assert_eq!(fired.at_ns, 3 * SECOND_NS, "{events:?}");
        let streams = steering.snapshot().streams.clone().unwrap();
        assert_eq!(streams.last.open, 9);
        assert_eq!(streams.last.messages_in_per_sec, 90.0);
        // Every second's figures counted once: 9 opened, 10 a second for 5 s each
        // but shard 1's unsampled second.
        assert_eq!((streams.opened, streams.messages_in), (9, 40 * 5 + 50 * 4));
        let verdict = steering.verdict().join("\n");
        assert!(
            verdict.contains("streams: 9 connections opened"),
            "{verdict}"
        );
        let series = metrics.get();
        assert!(
            series.contains("\nloadlab_stream_connections_open 9\n"),
            "{series}"
        );
        let mut alone = coordinator_with(vec![FakeShard::holding(0, 5, 4)], &[rule]);
        alone.poll();
        assert!(alone.fired().is_none(), "4 open alone");
    }

    #[test]
    fn an_older_shard_is_named_and_stream_rules_say_nothing() {
        let mut older = FakeShard::new(1, 5, 0);
        older.feed_version = 0;
        let rule = "connections_open < 100 for 1s";
        let mut steering = coordinator_with(vec![FakeShard::holding(0, 5, 4), older], &[rule]);
        let events = steering.poll();
        assert!(
            events.iter().any(|event| event
                == "shard 1/2 (fake1): an older loadlab, whose feed has no stream figures: the run's connections and messages are not merged, and stream rules say nothing"),
            "{events:?}"
        );
        assert!(steering.fired().is_none(), "a partial sum is not judged");
        assert_eq!(steering.snapshot().streams, None);
        assert_eq!(steering.snapshot().run.completed, 100, "its requests merge");
        assert!(steering.poll().is_empty(), "named once");
    }

    #[test]
    fn a_flow_s_delivered_load_is_its_runs_started() {
        let plain = FakeShard {
            unit: LoadUnit::Requests,
            started: None,
            asked: Some(30),
            ..FakeShard::flow_done(1)
        };
        let mut older = FakeShard::flow_done(1);
        (older.feed_version, older.unit, older.started) = (1, LoadUnit::Requests, None);
        let short = FakeShard {
            started: Some(5),
            ..FakeShard::flow_done(1)
        };
        // (the second shard, the delivered line, the event naming an older one)
        let rows = [
            (
                FakeShard::flow_done(1),
                "0.0% of the asked load was not delivered (20 of about 20 runs started)",
                None,
            ),
            (
                short,
                "25.0% of the asked load was not delivered (15 of about 20 runs started)",
                None,
            ),
            (
                plain,
                "0.0% of the asked load was not delivered (60 of about 60 requests sent)",
                None,
            ),
            (
                older,
                "0.0% of the asked load was not delivered (60 of about 20 requests sent)",
                Some(
                    "shard 1/2 (fake1): an older loadlab, whose feed has no runs started: \
                     the run's delivered load is counted in requests",
                ),
            ),
        ];
        for (second, delivered, event) in rows {
            let mut first = FakeShard::flow_done(0);
            if second.unit == LoadUnit::Requests && second.feed_version == FEED_VERSION {
                (first.unit, first.started, first.asked) = (LoadUnit::Requests, None, Some(30));
            }
            let mut steering = coordinator(vec![first, second]);
            let events = steering.poll();
            let verdict = steering.verdict();
            assert!(verdict.iter().any(|line| line == delivered), "{verdict:?}");
            let older = events.iter().find(|e| e.contains("an older loadlab"));
            assert_eq!(older.map(String::as_str), event, "{events:?}");
        }
    }
}
