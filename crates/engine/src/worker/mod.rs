//! [`Worker`]: one event loop on one thread. It owns its connections, its share of
//! every attack's schedule and its record batch, and talks to the rest of the run only
//! by sending batches: nothing is locked or allocated per request (a templated request
//! is formatted into a reused buffer).
//!
//! - `dispatch.rs`: when requests are due (per attack, open or closed model), which
//!   target and connection they take, and sending them off.
//! - `exchange.rs`: what happens on a connection, whatever it speaks: connect,
//!   write, read, complete, fail, retry, follow a redirect, close.
//! - `protocol.rs`: the seam: each event that depends on the protocol is one
//!   exhaustive `match` there, handing it to the protocol's module:
//! - `h1.rs`: HTTP/1.1 connections, one request at a time, and their idle pool;
//! - `h2.rs`: HTTP/2 connections carrying streams, each stream a slot of its own.
//! - this file: the loop, readiness events, timeouts, watermarks and batches.

mod dispatch;
mod exchange;
mod flow;
mod h1;
mod h2;
mod protocol;
mod stream;

use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender};

use record::{AttackStats, Record};
use rustix::event::epoll::{Event, EventFlags};

use crate::attack::AttackState;
use crate::clock::Clock;
use crate::conn::{Conn, Phase};
use crate::errors::{Cause, ErrorCache};
use crate::hosts::HostTable;
use crate::lazy::LazyTarget;
use crate::poller::Poller;
use crate::shared::Shared;
use crate::split::Split;
use crate::stop_handle::StopHandle;
use crate::stream_tally::StreamTally;
use crate::worker_report::{Counters, WorkerReport};

const STOP_TOKEN: u64 = u64::MAX;
const READ_BUFFER_BYTES: usize = 64 * 1024;
const SHIP_INTERVAL_NS: u64 = 100_000_000;
const SHIP_RECORDS: usize = 4096;

/// Per host: idle connections (most recently used last), how many are open, and
/// for HTTP/2 the connections carrying streams.
#[derive(Default)]
struct Pool {
    idle: Vec<u32>,
    open: usize,
    /// Decided on first use ([`Worker::proto`]).
    proto: Option<protocol::Proto>,
    carriers: Vec<u32>,
}

/// One attack's limits and queue in a worker.
pub(crate) struct AttackSetup {
    pub max_in_flight: usize,
    pub lazy: Option<Receiver<LazyTarget>>,
    pub flow: Option<Arc<workload::Flow>>,
    /// A replay: each lazy target brings its own due time.
    pub replay: bool,
}

/// Everything a worker starts with.
pub(crate) struct WorkerSetup {
    pub index: usize,
    pub workers: usize,
    pub clock: Clock,
    pub shared: Arc<Shared>,
    pub attacks: Vec<AttackSetup>,
    pub max_per_host: usize,
    pub reports: SyncSender<WorkerReport>,
    pub recycled: Receiver<Vec<Record>>,
    pub stop: StopHandle,
    pub errors: ErrorCache,
    pub precision_ns: u64,
    /// The per-second figures of this worker's streams (its sessions and calls).
    pub tally: Arc<StreamTally>,
}

/// How often a worker sends, measured over each shipping interval.
#[derive(Debug, Clone, Copy)]
struct SendPace {
    from_ns: u64,
    sent_before: u64,
    /// The mean time between two requests sent, over the last interval measured
    /// (`u64::MAX` when none was sent).
    interval_ns: u64,
}

impl Default for SendPace {
    fn default() -> SendPace {
        SendPace {
            from_ns: 0,
            sent_before: 0,
            interval_ns: u64::MAX,
        }
    }
}

impl SendPace {
    fn update(&mut self, now_ns: u64, sent: u64) {
        let elapsed_ns = now_ns.saturating_sub(self.from_ns);
        self.interval_ns = elapsed_ns
            .checked_div(sent.saturating_sub(self.sent_before))
            .unwrap_or(u64::MAX);
        self.from_ns = now_ns;
        self.sent_before = sent;
    }
}

pub(crate) struct Worker {
    index: usize,
    workers: usize,
    clock: Clock,
    shared: Arc<Shared>,
    max_per_host: usize,
    reports: SyncSender<WorkerReport>,
    recycled: Receiver<Vec<Record>>,
    stop: StopHandle,
    errors: ErrorCache,
    poller: Poller,
    /// Readable once a stop is asked; read when it fires, or the level-triggered
    /// registration would wake every wait at once for the rest of the drain.
    stop_fd: Arc<OwnedFd>,
    conns: Vec<Conn>,
    free: Vec<u32>,
    /// The shared hosts plus any that redirects or lazy targets lead to.
    hosts: HostTable,
    pools: Vec<Pool>,
    attacks: Vec<AttackState>,
    /// The lazy feeders' host ids -> this worker's.
    lazy_hosts: Vec<usize>,
    batch: Vec<Record>,
    /// Figures of the stream steps' connections that closed, shipped with the batch.
    connections: Vec<record::Connection>,
    /// Stream slots of gRPC calls whose messages go at a pace (`every`) and are not
    /// all out (`h2.rs`, [`Worker::send_paced`]); when the next is due.
    paced: Vec<u32>,
    paced_wake_ns: u64,
    last_ship_ns: u64,
    counters: Counters,
    read_buf: Box<[u8]>,
    /// Where templated request bodies are rendered before their length is known.
    body_scratch: Vec<u8>,
    events: Vec<Event>,
    /// How late the loop may wake ([`Worker::pause`]).
    precision_ns: u64,
    /// How often this worker has been sending ([`Worker::pause`]).
    pace: SendPace,
    /// How long ago the bytes being handled reached this host (`arrival.rs`); 0
    /// outside a read or without a stamp.
    arrival_age_ns: u64,
    /// HTTP/2 connections with frames queued ([`Worker::flush_queued`]).
    flushes: Vec<u32>,
    /// HTTP/2 connections (slot, generation) whose PING ACKs wait for their next
    /// write, and since when the first of them waits ([`Worker::release_ping_acks`]).
    acks_waiting: Vec<(u32, u32)>,
    acks_waiting_since_ns: u64,
    /// A flow user's `Cookie` header line, rendered per request.
    cookie_scratch: Vec<u8>,
    /// The answer of the flow request being recorded.
    answer: flow::KeptAnswer,
    /// Flow steps that hold a connection open, on threads of their own.
    sessions: Option<stream::Sessions>,
    /// Shared with its session loop and read by the collector.
    tally: Arc<StreamTally>,
}

impl Worker {
    pub(crate) fn new(setup: WorkerSetup) -> std::io::Result<Worker> {
        let poller = Poller::new()?;
        let stop_fd = setup.stop.waker()?;
        poller.add_level_read(stop_fd.as_ref(), STOP_TOKEN)?;
        let hosts = setup.shared.hosts.clone();
        let attacks = setup
            .attacks
            .into_iter()
            .zip(&setup.shared.attacks)
            .map(|(a, options)| {
                let split = Split::taking_part(&options.plan, setup.index, setup.workers);
                let mut state = AttackState::new(split, a.max_in_flight, a.lazy, a.flow);
                state.replay = a.replay;
                state
            })
            .collect();
        Ok(Worker {
            index: setup.index,
            workers: setup.workers,
            clock: setup.clock,
            shared: setup.shared,
            max_per_host: setup.max_per_host,
            reports: setup.reports,
            recycled: setup.recycled,
            stop: setup.stop,
            errors: setup.errors,
            poller,
            stop_fd,
            conns: Vec::new(),
            free: Vec::new(),
            pools: (0..hosts.hosts.len()).map(|_| Pool::default()).collect(),
            hosts,
            attacks,
            lazy_hosts: Vec::new(),
            batch: Vec::with_capacity(SHIP_RECORDS * 2),
            connections: Vec::new(),
            paced: Vec::new(),
            paced_wake_ns: u64::MAX,
            last_ship_ns: 0,
            counters: Counters::default(),
            read_buf: vec![0u8; READ_BUFFER_BYTES].into_boxed_slice(),
            body_scratch: Vec::new(),
            events: Vec::with_capacity(1024),
            precision_ns: setup.precision_ns,
            pace: SendPace::default(),
            arrival_age_ns: 0,
            flushes: Vec::new(),
            acks_waiting: Vec::new(),
            acks_waiting_since_ns: 0,
            cookie_scratch: Vec::new(),
            answer: flow::KeptAnswer::default(),
            sessions: None,
            tally: setup.tally,
        })
    }

    /// Replaces the provisional clock with the run's (set after prewarming).
    pub(crate) fn set_clock(&mut self, clock: Clock) {
        self.clock = clock;
    }

    /// Runs until every attack is done and nothing is in flight, or until stopped.
    pub(crate) fn run(mut self) -> std::io::Result<()> {
        // Sub-microsecond timer slack, so a 20 µs sleep is not stretched to 70 µs.
        let _ = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1));
        loop {
            if self.stop.is_aborting() {
                break;
            }
            if self.stop.is_stopping() {
                self.attacks.iter_mut().for_each(|a| a.exhausted = true);
            }
            self.dispatch_due();
            let now = self.clock.now_ns();
            self.send_paced(now);
            self.expire(now);
            self.flush_queued();
            if self
                .attacks
                .iter()
                .all(|a| a.exhausted && a.in_flight_count == 0)
            {
                break;
            }
            self.ship(now, false);
            let (wait_ns, behind) = self.wait_ns(now);
            self.release_ping_acks(now, wait_ns);
            self.pause(wait_ns, behind)?;
            self.counters.wakeups += 1;
        }
        self.release_ping_acks(0, u64::MAX);
        self.ship(self.clock.now_ns(), true);
        Ok(())
    }

    /// Waits until the next thing to do. When that is sooner than `precision_ns`
    /// (requests are due faster than that), the worker lets it wait one budget: it
    /// sleeps without being woken by readiness until `precision_ns` after it is due,
    /// then sends every request due by then and takes every ready event at once. One
    /// wake-up serves all the requests due and all the answers arrived in between,
    /// instead of one wake-up each, and no schedule with fewer wake-ups keeps every
    /// request within the budget. A request then leaves at most one budget late (its
    /// send lag says by how much) and an answer is read at most a budget plus a
    /// request interval late, timed by its arrival all the same (`arrival.rs`).
    /// While requests go out faster than one a budget but none is due that soon (a
    /// flow's next steps wait for the answers in flight), answers are read on the same
    /// terms: a budget plus a request interval after the last look at most, not one
    /// wake-up each (a flow at 10k req/s: a fifth fewer wake-ups, an eighth less CPU).
    /// A user's next step goes from the read, so its think time may grow by that much.
    /// Slower runs wake on readiness, exactly. All of this holds only while the worker
    /// keeps up: one that is `behind` (a request due has not left: a pass sent its
    /// batch, or every connection it may use is busy) never sleeps; it takes what is
    /// ready, an answer freeing a connection, and goes on. The budget bounds how late
    /// a wake-up may be, never how much a behind worker does or how often it looks
    /// (asked 150k req/s at a 1 ms budget, ticks held it to 62k).
    fn pause(&mut self, wait_ns: u64, behind: bool) -> std::io::Result<()> {
        let tick_ns = if behind {
            None
        } else if wait_ns < self.precision_ns {
            Some(wait_ns + self.precision_ns)
        } else if self.precision_ns > 0 && self.answers_coming_fast() {
            let answers_due_ns = self.precision_ns.saturating_add(self.pace.interval_ns);
            Some(
                wait_ns
                    .saturating_add(self.precision_ns)
                    .min(answers_due_ns),
            )
        } else {
            None
        };
        let Some(tick_ns) = tick_ns else {
            return self.poll(Some(wait_ns)).map(|_| ());
        };
        std::thread::sleep(std::time::Duration::from_nanos(tick_ns));
        // Send, then read: a write carries the ACK for the answers that arrived in the
        // tick, so reading them sends no bare ACK of its own (HTTP/2 over TLS at 20k
        // req/s: a quarter fewer segments, a tenth less CPU).
        if !self.stop.is_stopping() {
            self.dispatch_due();
        }
        self.flush_queued();
        self.poll(Some(0)).map(|_| ())
    }

    /// Requests in flight, and going out faster than one per budget: their answers
    /// come faster than that too.
    fn answers_coming_fast(&self) -> bool {
        self.pace.interval_ns <= self.precision_ns
            && self.attacks.iter().any(|a| a.in_flight_count > 0)
    }

    /// Waits for readiness (at most `timeout_ns`) and handles what is ready.
    fn poll(&mut self, timeout_ns: Option<u64>) -> std::io::Result<bool> {
        if self.events.capacity() == 0 {
            // Inside a poll (a resend or redirect looking for a connection while its
            // events are handled): the events are out, and the outer poll still holds
            // what was ready. Waiting on no room would fail (a debug assertion).
            return Ok(false);
        }
        let mut events = std::mem::take(&mut self.events);
        let result = self.poller.wait(&mut events, timeout_ns);
        for event in &events {
            self.on_event(event.data.u64(), event.flags);
        }
        self.flush_queued();
        let ready = !events.is_empty();
        self.events = events;
        result.map(|()| ready)
    }

    /// Opens up to `count` connections before time zero and waits (at most two
    /// seconds) until they are up, so the first requests do not all pay for a connect.
    pub(crate) fn prewarm(&mut self, count: usize) -> std::io::Result<()> {
        let shared = Arc::clone(&self.shared);
        // Lazy targets are not known before the run, but a replay's first one is at hand.
        let mut hosts: Vec<usize> = shared.fixed_targets().map(|t| t.host).collect();
        hosts.extend(self.first_replay_hosts());
        for host in hosts
            .iter()
            .cycle()
            .take(count.min(hosts.len() * self.max_per_host))
        {
            if self.pools[*host].open < self.prewarm_cap(*host) {
                let _ = self.open_connection(*host);
            }
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        while self.conns.iter().any(|c| c.phase == Phase::Connecting)
            && std::time::Instant::now() < deadline
        {
            self.poll(Some(10_000_000))?;
        }
        Ok(())
    }

    fn on_event(&mut self, token: u64, flags: EventFlags) {
        if token == STOP_TOKEN {
            // Reset the eventfd's counter: a later `abort` writes (and wakes) again.
            let mut counter = [0u8; 8];
            let _ = rustix::io::read(self.stop_fd.as_ref(), &mut counter);
            self.attacks.iter_mut().for_each(|a| a.exhausted = true);
            return;
        }
        if token == stream::SESSION_TOKEN {
            self.finish_sessions();
            return;
        }
        let slot = token as u32 as usize;
        let generation = (token >> 32) as u32;
        let Some(conn) = self.conns.get(slot) else {
            return;
        };
        if conn.generation != generation || conn.phase == Phase::Free {
            return;
        }
        let connect_done = flags.intersects(EventFlags::OUT | EventFlags::ERR | EventFlags::HUP);
        if conn.phase == Phase::Connecting && (!connect_done || !self.finish_connect(slot)) {
            return;
        }
        if flags.intersects(EventFlags::IN | EventFlags::RDHUP | EventFlags::HUP | EventFlags::ERR)
        {
            // New data came with this event: a drained TLS socket may hold some again.
            self.conns[slot].tls_drained = false;
            // With the peer gone, the end of stream must be read too: no new edge comes.
            self.read(
                slot,
                flags.intersects(EventFlags::RDHUP | EventFlags::HUP | EventFlags::ERR),
            );
            if self.conns[slot].generation != generation {
                // Closed while reading; the slot may carry something else by now.
                return;
            }
            // A TLS handshake may end without data: ALPN has said what to speak.
            if !self.negotiated(slot) {
                return;
            }
        }
        // (Edge-triggered: a read's event says OUT too, and held ACKs must not go.)
        if flags.contains(EventFlags::OUT)
            && self.conns[slot].phase == Phase::Open
            && self.conns[slot].has_unwritten()
            && !self.holds_ping_acks(slot)
        {
            self.write(slot);
        }
    }

    /// Fails requests whose timeout has passed (oldest first, attack by attack: each
    /// attack's list is in dispatch order and shares one timeout).
    fn expire(&mut self, now: u64) {
        for attack in 0..self.attacks.len() {
            let timeout_ns = self.shared.attacks[attack].timeout_ns;
            while let Some(slot) = self.attacks[attack].in_flight.front() {
                let Some(request) = self.conns[slot].request.as_ref() else {
                    break;
                };
                if request.dispatched_ns.saturating_add(timeout_ns) > now {
                    break;
                }
                let cause = if self.connecting(slot) {
                    Cause::new(record::ErrorKind::ConnectTimeout, "connect timeout")
                } else {
                    Cause::new(record::ErrorKind::Timeout, "timeout awaiting response")
                };
                self.fail(slot, cause);
            }
        }
    }

    /// How long to wait: until a request is due, the oldest times out, a user schedule
    /// may have changed, or the next batch ships; and whether the worker is behind (a
    /// request is due and has not left: a pass of the loop sends at most a batch, or
    /// every connection it may use is busy). A request due at a cap waits for
    /// readiness (an answer frees its connection), not for the clock.
    fn wait_ns(&mut self, now: u64) -> (u64, bool) {
        let mut wake = (self.last_ship_ns + SHIP_INTERVAL_NS).min(self.paced_wake_ns);
        let mut behind = false;
        self.peek_replays();
        let shared = &self.shared;
        for (attack, state) in self.attacks.iter_mut().enumerate() {
            let plan = &shared.attacks[attack].plan;
            let next_due = if let Some(users) = &state.flow {
                (!state.exhausted)
                    .then(|| users.next_due(plan, state.next_k, now, state.split))
                    .flatten()
                    .map(|(due, _)| (due, crate::attack::Source::Schedule))
            } else {
                state.next_due(plan, now, state.split)
            };
            behind |= !state.lazy_waiting && next_due.is_some_and(|(due, _)| due <= now);
            if !state.capped
                && let Some((due, _)) = next_due
            {
                // Waiting for the lazy feeder: look again in a millisecond.
                wake = wake.min(if state.lazy_waiting {
                    due.max(now + 1_000_000)
                } else {
                    due
                });
            }
            if let Some(recheck) = state.recheck_ns(plan, now) {
                wake = wake.min(recheck);
            }
            if let Some(slot) = state.in_flight.front()
                && let Some(request) = &self.conns[slot].request
            {
                wake = wake.min(
                    request
                        .dispatched_ns
                        .saturating_add(shared.attacks[attack].timeout_ns),
                );
            }
        }
        (wake.saturating_sub(now), behind)
    }

    /// Sends the batch to the collector when it is big or old enough (or at the end).
    fn ship(&mut self, now: u64, done: bool) {
        if !done && self.batch.len() < SHIP_RECORDS && now < self.last_ship_ns + SHIP_INTERVAL_NS {
            return;
        }
        self.pace.update(now, self.counters.sent);
        self.last_ship_ns = now;
        let report = self.report(now, done);
        if self.reports.send(report).is_err() {
            // The collector is gone (its output failed); stop quietly.
            self.stop.abort();
        }
    }

    fn report(&mut self, now: u64, done: bool) -> WorkerReport {
        let watermark_ns = self
            .attacks
            .iter()
            .filter_map(|a| a.in_flight.front())
            .filter_map(|slot| self.conns[slot].request.as_ref())
            .map(|r| r.dispatched_ns)
            .chain(self.sessions.as_ref().and_then(stream::Sessions::oldest_ns))
            .fold(now, u64::min);
        self.counters.in_flight = self.attacks.iter().map(|a| a.in_flight_count as u64).sum();
        (self.counters.behind, self.counters.behind_at_cap) = (0..self.attacks.len())
            .map(|a| (self.behind(a, now), self.attacks[a].capped))
            .fold((0, 0), |(all, at_cap), (behind, capped)| {
                (all + behind, at_cap + if capped { behind } else { 0 })
            });
        let attacks: Vec<AttackStats> = self
            .attacks
            .iter()
            .map(|a| AttackStats {
                sent: a.sent,
                completed: a.completed,
                in_flight: a.in_flight_count as u64,
                users: a.users() as u64,
                starts: a.flow.as_ref().map_or(0, |users| users.starts),
            })
            .collect();
        self.counters.starts = attacks.iter().map(|a| a.starts).sum();
        let fresh = self
            .recycled
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(SHIP_RECORDS * 2));
        let records = std::mem::replace(&mut self.batch, fresh);
        WorkerReport {
            worker: self.index,
            records,
            connections: std::mem::take(&mut self.connections),
            watermark_ns,
            counters: Counters {
                wakeups: self.counters.wakeups
                    + self.sessions.as_ref().map_or(0, stream::Sessions::wakes),
                ..self.counters
            },
            attacks,
            done,
        }
    }

    /// Requests of this worker's share of an open-model attack that are due but have
    /// not left.
    fn behind(&self, attack: usize, now: u64) -> u64 {
        let state = &self.attacks[attack];
        if state.exhausted {
            return 0;
        }
        let Some(due_all) = self.shared.attacks[attack].plan.asked_by(now) else {
            return 0;
        };
        let (stride, index) = (self.workers as u64, self.index as u64);
        let mine = (due_all + stride - 1 - index) / stride;
        let sent = (state.next_k - index) / stride;
        mine.saturating_sub(sent)
    }
}

#[cfg(test)]
mod tests {
    use super::SendPace;

    #[test]
    fn the_send_pace_is_the_mean_interval_of_the_last_stretch() {
        // (at ns, sent so far) -> interval ns
        let steps = [
            (100_000_000, 1_000, 100_000),
            (200_000_000, 1_000, u64::MAX),
            (300_000_000, 11_000, 10_000),
            (300_000_000, 11_000, u64::MAX),
        ];
        let mut pace = SendPace::default();
        assert_eq!(pace.interval_ns, u64::MAX, "nothing sent yet");
        for (now_ns, sent, want) in steps {
            pace.update(now_ns, sent);
            assert_eq!(pace.interval_ns, want, "at {now_ns} ns, {sent} sent");
        }
    }
}
