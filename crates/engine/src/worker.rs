//! [`Worker`]: one event loop on one thread. It owns its connections, its share of the
//! schedule (request indices `index, index + stride, ...`) and its record batch, and
//! talks to the rest of the run only by sending batches: nothing is locked, formatted
//! or allocated per request.

use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender};

use record::{ErrorKind, Record};
use rustix::event::epoll::{Event, EventFlags};
use workload::{Pacing, Plan};

use crate::clock::Clock;
use crate::conn::{
    Conn, Hop, InFlight, Phase, ReadOutcome, RequestBytes, WriteOutcome, start_connect,
};
use crate::errors::{Cause, ErrorCache};
use crate::hosts::HostTable;
use crate::inflight::InFlightList;
use crate::lazy::LazyTarget;
use crate::poller::Poller;
use crate::redirect::{self, Next};
use crate::shared::Shared;
use crate::stop::StopHandle;

const STOP_TOKEN: u64 = u64::MAX;
const READ_BUFFER_BYTES: usize = 64 * 1024;
const SHIP_INTERVAL_NS: u64 = 100_000_000;
const SHIP_RECORDS: usize = 4096;

/// What a worker tells the collector, every ~100 ms and at the end.
pub(crate) struct WorkerReport {
    pub worker: usize,
    pub records: Vec<Record>,
    /// Every request this worker dispatched before this offset is in this or an
    /// earlier report.
    pub watermark_ns: u64,
    pub counters: Counters,
    pub done: bool,
}

/// Running totals of one worker (snapshots, not deltas).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Counters {
    pub sent: u64,
    pub completed: u64,
    pub in_flight: u64,
    pub connections_open: u64,
    /// Requests due by now that have not left (the generator is behind).
    pub behind: u64,
}

/// Per host: idle connections (most recently used last) and how many are open.
#[derive(Default)]
struct Pool {
    idle: Vec<u32>,
    open: usize,
}

/// Everything a worker starts with.
pub(crate) struct WorkerSetup {
    pub index: usize,
    pub stride: u64,
    pub clock: Clock,
    pub plan: Arc<Plan>,
    pub shared: Arc<Shared>,
    pub max_in_flight: usize,
    pub max_per_host: usize,
    pub reports: SyncSender<WorkerReport>,
    pub recycled: Receiver<Vec<Record>>,
    pub stop: StopHandle,
    pub errors: ErrorCache,
    /// This worker's queue of lazily read targets (`-lazy`); `None` for a fixed list.
    pub lazy: Option<Receiver<LazyTarget>>,
}

/// The next request's target, or why there is none yet.
enum Pick {
    Ready {
        target: u32,
        host: usize,
    },
    /// The lazy feeder has not caught up; try again shortly.
    Wait,
    /// The lazy stream has ended.
    Done,
}

pub(crate) struct Worker {
    setup: WorkerSetup,
    poller: Poller,
    _stop_fd: Arc<OwnedFd>,
    conns: Vec<Conn>,
    free: Vec<u32>,
    /// The shared hosts plus any that redirects lead to.
    hosts: HostTable,
    pools: Vec<Pool>,
    in_flight: InFlightList,
    in_flight_count: usize,
    next_k: u64,
    /// No more requests will be dispatched (schedule over, or stopping).
    exhausted: bool,
    /// Dispatch stopped at a connection cap; wait for a completion, not the clock.
    capped: bool,
    batch: Vec<Record>,
    last_ship_ns: u64,
    counters: Counters,
    read_buf: Box<[u8]>,
    events: Vec<Event>,
    /// The next lazy target, taken off the queue but not yet sent.
    lazy_next: Option<LazyTarget>,
    /// The feeder's host ids -> this worker's.
    lazy_hosts: Vec<usize>,
    lazy_waiting: bool,
}

impl Worker {
    pub(crate) fn new(setup: WorkerSetup) -> std::io::Result<Worker> {
        let poller = Poller::new()?;
        let stop_fd = setup.stop.waker()?;
        poller.add_level_read(stop_fd.as_ref(), STOP_TOKEN)?;
        let hosts = setup.shared.hosts.clone();
        Ok(Worker {
            next_k: setup.index as u64,
            poller,
            _stop_fd: stop_fd,
            conns: Vec::new(),
            free: Vec::new(),
            pools: (0..hosts.hosts.len()).map(|_| Pool::default()).collect(),
            hosts,
            in_flight: InFlightList::default(),
            in_flight_count: 0,
            exhausted: false,
            capped: false,
            batch: Vec::with_capacity(SHIP_RECORDS * 2),
            last_ship_ns: 0,
            counters: Counters::default(),
            read_buf: vec![0u8; READ_BUFFER_BYTES].into_boxed_slice(),
            events: Vec::with_capacity(1024),
            lazy_next: None,
            lazy_hosts: Vec::new(),
            lazy_waiting: false,
            setup,
        })
    }

    /// Replaces the provisional clock with the run's (set after prewarming).
    pub(crate) fn set_clock(&mut self, clock: Clock) {
        self.setup.clock = clock;
    }

    /// Runs until the schedule is done and nothing is in flight, or until stopped.
    pub(crate) fn run(mut self) -> std::io::Result<()> {
        // Sub-microsecond timer slack, so a 20 µs sleep is not stretched to 70 µs.
        let _ = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1));
        loop {
            if self.setup.stop.is_aborting() {
                break;
            }
            if self.setup.stop.is_stopping() {
                self.exhausted = true;
            }
            self.dispatch_due();
            let now = self.setup.clock.now_ns();
            self.expire(now);
            if self.exhausted && self.in_flight_count == 0 {
                break;
            }
            self.ship(now, false);
            let mut events = std::mem::take(&mut self.events);
            self.poller.wait(&mut events, self.wait_ns(now))?;
            for event in &events {
                self.on_event(event.data.u64(), event.flags);
            }
            self.events = events;
        }
        self.ship(self.setup.clock.now_ns(), true);
        Ok(())
    }

    /// Opens up to `count` connections before time zero and waits (at most the
    /// timeout) until they are up, so the first requests do not all pay for a connect.
    pub(crate) fn prewarm(&mut self, count: usize) -> std::io::Result<()> {
        let targets = self.setup.shared.targets.len();
        // Lazy targets are not known before the run; there is nothing to warm.
        for i in 0..count.min(self.setup.max_in_flight) * usize::from(targets > 0) {
            let host = self.setup.shared.targets[i % targets].host;
            if self.pools[host].open < self.setup.max_per_host {
                let _ = self.open_connection(host);
            }
        }
        let deadline = std::time::Instant::now()
            + std::time::Duration::from_nanos(self.setup.shared.timeout_ns.min(2_000_000_000));
        while self.conns.iter().any(|c| c.phase == Phase::Connecting)
            && std::time::Instant::now() < deadline
        {
            let mut events = std::mem::take(&mut self.events);
            self.poller.wait(&mut events, Some(10_000_000))?;
            for event in &events {
                self.on_event(event.data.u64(), event.flags);
            }
            self.events = events;
        }
        Ok(())
    }

    fn next_intended(&self, now: u64) -> Option<u64> {
        // Past the duration nothing more leaves, even if the schedule's backlog does
        // not: those requests are counted as unsent, not sent late.
        if self.setup.plan.duration_ns.is_some_and(|d| now >= d) {
            return None;
        }
        match &self.setup.plan.pacing {
            Pacing::Open(_) => self.setup.plan.intended_ns(self.next_k),
            Pacing::Closed { .. } => self.setup.plan.allows(self.next_k, now).then_some(now),
        }
    }

    /// Sends every request that is due and has a connection to go on.
    fn dispatch_due(&mut self) {
        self.capped = false;
        self.lazy_waiting = false;
        while !self.exhausted {
            let now = self.setup.clock.now_ns();
            let Some(intended_ns) = self.next_intended(now) else {
                self.exhausted = true;
                break;
            };
            if intended_ns > now {
                break;
            }
            if self.in_flight_count >= self.setup.max_in_flight {
                self.capped = true;
                break;
            }
            let (target, host) = match self.pick_target() {
                Pick::Ready { target, host } => (target, host),
                Pick::Wait => {
                    self.lazy_waiting = true;
                    break;
                }
                Pick::Done => {
                    self.exhausted = true;
                    break;
                }
            };
            let slot = match self.acquire(host) {
                Ok(Some(slot)) => slot,
                Ok(None) => {
                    self.capped = true;
                    break;
                }
                Err(cause) => {
                    self.lazy_next = None;
                    self.record_unsent_failure(target, intended_ns, now, cause);
                    continue;
                }
            };
            let mut request = self.new_request(target, intended_ns, now);
            self.next_k += self.setup.stride;
            self.counters.sent += 1;
            let (bytes, head_only) = match self.lazy_next.take() {
                Some(lazy) => {
                    request.lazy = Some(Box::new(lazy.target));
                    (RequestBytes::Shared(lazy.bytes), lazy.head_only)
                }
                None => {
                    let prepared = &self.setup.shared.targets[target as usize];
                    (
                        RequestBytes::Shared(Arc::clone(&prepared.bytes)),
                        prepared.head_only,
                    )
                }
            };
            self.begin(slot, request, bytes, head_only);
        }
    }

    /// Round-robin over the fixed targets, or the next one from the lazy queue.
    fn pick_target(&mut self) -> Pick {
        let Some(queue) = &self.setup.lazy else {
            let target = (self.next_k % self.setup.shared.targets.len() as u64) as u32;
            return Pick::Ready {
                target,
                host: self.setup.shared.targets[target as usize].host,
            };
        };
        if self.lazy_next.is_none() {
            match queue.try_recv() {
                Ok(mut lazy) => {
                    if let Some(host) = lazy.new_host.take() {
                        self.lazy_hosts
                            .resize(self.lazy_hosts.len().max(lazy.host + 1), usize::MAX);
                        self.lazy_hosts[lazy.host] = self.hosts.insert(host);
                        self.pools
                            .resize_with(self.hosts.hosts.len(), Pool::default);
                    }
                    self.lazy_next = Some(lazy);
                }
                Err(std::sync::mpsc::TryRecvError::Empty) => return Pick::Wait,
                Err(std::sync::mpsc::TryRecvError::Disconnected) => return Pick::Done,
            }
        }
        match &self.lazy_next {
            Some(lazy) => Pick::Ready {
                target: lazy.id,
                host: self.lazy_hosts[lazy.host],
            },
            None => Pick::Wait,
        }
    }

    fn new_request(&self, target: u32, intended_ns: u64, now: u64) -> InFlight {
        InFlight {
            seq: self.next_k,
            target,
            intended_ns,
            dispatched_ns: now,
            first_byte_ns: 0,
            bytes_in: 0,
            bytes_out: 0,
            redirects_left: self.setup.shared.redirects,
            hop: None,
            lazy: None,
            retried: false,
        }
    }

    /// A connection for `host`: an idle one, a new one, or `None` at the host cap.
    fn acquire(&mut self, host: usize) -> Result<Option<usize>, Cause> {
        if let Some(slot) = self.pop_idle(host) {
            return Ok(Some(slot));
        }
        // Responses may be waiting unread: reading them is far cheaper than a new
        // connection, and without this a short stall makes every connection look busy
        // and the worker opens connections it never needed.
        if self.in_flight_count > 0
            && self.harvest()
            && let Some(slot) = self.pop_idle(host)
        {
            return Ok(Some(slot));
        }
        if self.pools[host].open >= self.setup.max_per_host {
            return Ok(None);
        }
        self.open_connection(host).map(Some)
    }

    fn pop_idle(&mut self, host: usize) -> Option<usize> {
        while let Some(slot) = self.pools[host].idle.pop() {
            if self.conns[slot as usize].is_idle() {
                return Some(slot as usize);
            }
        }
        None
    }

    /// Handles whatever events are ready, without waiting; true if there were any.
    fn harvest(&mut self) -> bool {
        let mut events = std::mem::take(&mut self.events);
        let ready = self.poller.wait(&mut events, Some(0)).is_ok() && !events.is_empty();
        for event in &events {
            self.on_event(event.data.u64(), event.flags);
        }
        self.events = events;
        ready
    }

    fn open_connection(&mut self, host: usize) -> Result<usize, Cause> {
        let shared = Arc::clone(&self.setup.shared);
        let socket = start_connect(&self.hosts.hosts[host].address, shared.local_ip)
            .map_err(|err| Cause::io(connect_error_kind(&err), "connect", &err))?;
        let slot = self.free.pop().map_or_else(
            || {
                self.conns.push(Conn::new());
                self.conns.len() - 1
            },
            |slot| slot as usize,
        );
        let conn = &mut self.conns[slot];
        let token = (u64::from(conn.generation) << 32) | slot as u64;
        if let Err(err) = self.poller.add(&socket, token) {
            self.free.push(slot as u32);
            return Err(Cause::io(ErrorKind::Io, "epoll", &err));
        }
        conn.socket = Some(socket);
        conn.phase = Phase::Connecting;
        conn.host = host;
        self.pools[host].open += 1;
        self.counters.connections_open += 1;
        Ok(slot)
    }

    /// Attaches a request to a connection and writes it if the connection is up.
    fn begin(&mut self, slot: usize, request: InFlight, bytes: RequestBytes, head_only: bool) {
        let shared = &self.setup.shared;
        let conn = &mut self.conns[slot];
        let dispatched_ns = request.dispatched_ns;
        conn.set_request_bytes(bytes);
        conn.parser
            .start(head_only, shared.redirects >= 0, shared.body_limit);
        conn.request = Some(request);
        self.in_flight.insert(&mut self.conns, slot, dispatched_ns);
        self.in_flight_count += 1;
        if self.conns[slot].phase == Phase::Open {
            self.write(slot);
        }
    }

    fn on_event(&mut self, token: u64, flags: EventFlags) {
        if token == STOP_TOKEN {
            self.exhausted = true;
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
            // With the peer gone, the end of stream must be read too: no new edge comes.
            self.read(
                slot,
                flags.intersects(EventFlags::RDHUP | EventFlags::HUP | EventFlags::ERR),
            );
        }
        if flags.contains(EventFlags::OUT)
            && self.conns[slot].phase == Phase::Open
            && self.conns[slot].has_unwritten()
        {
            self.write(slot);
        }
    }

    /// The connect finished; true if the connection is now open.
    fn finish_connect(&mut self, slot: usize) -> bool {
        let conn = &mut self.conns[slot];
        let failure = match conn.socket.as_ref().map(socket2::Socket::take_error) {
            Some(Ok(None)) => None,
            Some(Ok(Some(err)) | Err(err)) => {
                Some(Cause::io(connect_error_kind(&err), "connect", &err))
            }
            None => Some(Cause::new(ErrorKind::Io, "connect: no socket")),
        };
        if let Some(cause) = failure {
            self.fail(slot, cause);
            return false;
        }
        let shared = &self.setup.shared;
        let tls_config = if self.hosts.hosts[conn.host].tls_name.is_some() && shared.tls.is_none() {
            // A redirect from http to https in a run that had no https target.
            crate::tls::client_config(&crate::TlsOptions::default()).ok()
        } else {
            shared.tls.clone()
        };
        if let (Some(config), Some(name)) = (&tls_config, &self.hosts.hosts[conn.host].tls_name) {
            match rustls::ClientConnection::new(Arc::clone(config), name.clone()) {
                Ok(tls) => conn.tls = Some(Box::new(tls)),
                Err(err) => {
                    let id = self
                        .setup
                        .errors
                        .text(ErrorKind::Tls, format!("tls: {err}"));
                    self.fail_with_id(slot, id);
                    return false;
                }
            }
        }
        conn.phase = Phase::Open;
        if conn.request.is_some() {
            self.write(slot);
        } else {
            self.make_idle(slot);
        }
        self.conns[slot].phase == Phase::Open
    }

    fn write(&mut self, slot: usize) {
        match self.conns[slot].write_some() {
            WriteOutcome::Done | WriteOutcome::WouldBlock => {}
            WriteOutcome::Failed(err) => {
                let cause = Cause::io(transport_error_kind(&err), "write", &err);
                self.fail_or_retry(slot, cause);
            }
        }
    }

    /// Reads until the socket is drained. Edge-triggered epoll reports new data once,
    /// so a short read means "drained" unless the peer also closed (`to_end`).
    fn read(&mut self, slot: usize, to_end: bool) {
        loop {
            let drained_on_short_read = self.conns[slot].tls.is_none() && !to_end;
            match self.conns[slot].read_some(&mut self.read_buf) {
                ReadOutcome::Data(n) => {
                    let more = self.on_data(slot, n);
                    if (!more && !to_end) || (n < self.read_buf.len() && drained_on_short_read) {
                        return;
                    }
                    if self.conns[slot].phase == Phase::Free {
                        return;
                    }
                }
                ReadOutcome::WouldBlock => return,
                ReadOutcome::Eof => return self.on_eof(slot),
                ReadOutcome::Failed(err) => {
                    let cause = Cause::io(transport_error_kind(&err), "read", &err);
                    return self.fail_or_retry(slot, cause);
                }
                ReadOutcome::Tls(err) => {
                    let id = self
                        .setup
                        .errors
                        .text(ErrorKind::Tls, format!("tls: {err}"));
                    return self.fail_with_id(slot, id);
                }
            }
        }
    }

    /// Feeds `n` bytes of `read_buf`; false when the connection needs no more reading.
    fn on_data(&mut self, slot: usize, n: usize) -> bool {
        let now = self.setup.clock.now_ns();
        let conn = &mut self.conns[slot];
        let Some(request) = conn.request.as_mut() else {
            // Bytes nobody asked for: the connection cannot be trusted any more.
            self.close(slot);
            return false;
        };
        if request.first_byte_ns == 0 {
            request.first_byte_ns = now;
        }
        match conn.parser.feed(&self.read_buf[..n]) {
            Ok(crate::response::Feed::More) => {
                request.bytes_in += n as u64;
                true
            }
            Ok(crate::response::Feed::Done { used }) => {
                request.bytes_in += used as u64;
                // Extra bytes, or a full buffer that may hide more: do not reuse.
                if used < n || n == self.read_buf.len() {
                    conn.parser.close = true;
                }
                self.complete(slot, now);
                false
            }
            Err(err) => {
                self.fail(slot, Cause::new(ErrorKind::Protocol, err.0));
                false
            }
        }
    }

    fn on_eof(&mut self, slot: usize) {
        let conn = &mut self.conns[slot];
        if conn.request.is_none() {
            return self.close(slot);
        }
        match conn.parser.eof() {
            Ok(()) => self.complete(slot, self.setup.clock.now_ns()),
            Err(err) => self.fail_or_retry(slot, Cause::new(ErrorKind::Closed, err.0)),
        }
    }

    /// The response is complete: record it (or follow it) and free the connection.
    fn complete(&mut self, slot: usize, now: u64) {
        let conn = &mut self.conns[slot];
        let status = conn.parser.status;
        let follow = redirect::is_redirect(status)
            && self.setup.shared.redirects >= 0
            && !conn.parser.location.is_empty();
        let location = if follow {
            std::mem::take(&mut conn.parser.location)
        } else {
            Vec::new()
        };
        let error = if (200..400).contains(&status) {
            0
        } else {
            self.setup.errors.status(status, conn.parser.reason())
        };
        let reusable = !conn.parser.close && self.setup.shared.keepalive;
        let Some(request) = self.take_request(slot) else {
            return;
        };
        if reusable {
            self.conns[slot].reused = true;
            self.make_idle(slot);
        } else {
            self.close(slot);
        }
        if follow {
            self.follow_redirect(request, status, &location, now);
        } else {
            self.push_record(&request, now, status, error);
        }
    }

    /// Sends the request on to its `Location`, or records why it cannot go.
    fn follow_redirect(&mut self, mut request: InFlight, status: u16, location: &[u8], now: u64) {
        let shared = Arc::clone(&self.setup.shared);
        if request.redirects_left <= 0 {
            let id = self.setup.errors.redirect_limit(shared.redirects);
            return self.push_record(&request, now, 0, id);
        }
        request.redirects_left -= 1;
        let base = match request.lazy.as_deref() {
            Some(target) => target,
            None => &shared.targets[request.target as usize].target,
        };
        let (url, method) = request
            .hop
            .as_ref()
            .map_or((&base.url, base.method.as_str()), |hop| {
                (&hop.url, hop.method.as_str())
            });
        let (url, method, bytes) =
            match redirect::next_hop(base, url, method, status, location, shared.keepalive) {
                Next::Follow { url, method, bytes } => (url, method, bytes),
                Next::Refuse(why) => {
                    let id = self
                        .setup
                        .errors
                        .cause(Cause::new(ErrorKind::Redirect, why));
                    return self.push_record(&request, now, 0, id);
                }
            };
        let Ok(host) = self.hosts.resolve(&url, shared.unix_socket.as_ref()) else {
            let id = self.setup.errors.cause(Cause::new(
                ErrorKind::Redirect,
                "redirect: cannot resolve the Location host",
            ));
            return self.push_record(&request, now, 0, id);
        };
        self.pools
            .resize_with(self.hosts.hosts.len(), Pool::default);
        let head_only = method == "HEAD";
        request.hop = Some(Box::new(Hop { url, method }));
        match self.acquire(host) {
            Ok(Some(slot)) => self.begin(slot, request, RequestBytes::Owned(bytes), head_only),
            Ok(None) => {
                let id = self.setup.errors.cause(Cause::new(
                    ErrorKind::Redirect,
                    "redirect: connection limit reached",
                ));
                self.push_record(&request, now, 0, id);
            }
            Err(cause) => {
                let id = self.setup.errors.cause(cause);
                self.push_record(&request, now, 0, id);
            }
        }
    }

    /// A failure after the request went out on a kept-alive connection, before any
    /// response byte, usually means the server closed the idle connection first:
    /// send it once more on a new connection, keeping its times (like Go's client).
    fn fail_or_retry(&mut self, slot: usize, cause: Cause) {
        let conn = &self.conns[slot];
        let retryable = conn.reused
            && matches!(
                cause.kind,
                ErrorKind::Reset | ErrorKind::Closed | ErrorKind::Io
            )
            && conn
                .request
                .as_ref()
                .is_some_and(|r| !r.retried && r.first_byte_ns == 0);
        if !retryable {
            return self.fail(slot, cause);
        }
        let (host, head_only) = (conn.host, conn.parser.head_only());
        let Some(mut request) = self.take_request(slot) else {
            return;
        };
        let bytes = self.conns[slot].take_request_bytes();
        self.close(slot);
        request.retried = true;
        match self.acquire(host) {
            Ok(Some(new_slot)) => self.begin(new_slot, request, bytes, head_only),
            Ok(None) => {
                let id = self.setup.errors.cause(cause);
                self.push_record(&request, self.setup.clock.now_ns(), 0, id);
            }
            Err(connect) => {
                let id = self.setup.errors.cause(connect);
                self.push_record(&request, self.setup.clock.now_ns(), 0, id);
            }
        }
    }

    fn fail(&mut self, slot: usize, cause: Cause) {
        let id = self.setup.errors.cause(cause);
        self.fail_with_id(slot, id);
    }

    fn fail_with_id(&mut self, slot: usize, error: u32) {
        if let Some(request) = self.take_request(slot) {
            self.push_record(&request, self.setup.clock.now_ns(), 0, error);
        }
        self.close(slot);
    }

    /// A request that never got a connection (the connect failed at once).
    fn record_unsent_failure(&mut self, target: u32, intended_ns: u64, now: u64, cause: Cause) {
        let request = self.new_request(target, intended_ns, now);
        self.next_k += self.setup.stride;
        self.counters.sent += 1;
        let id = self.setup.errors.cause(cause);
        self.push_record(&request, now, 0, id);
    }

    fn take_request(&mut self, slot: usize) -> Option<InFlight> {
        let mut request = self.conns[slot].request.take()?;
        self.in_flight.remove(&mut self.conns, slot);
        self.in_flight_count -= 1;
        request.bytes_out += self.conns[slot].request_len();
        Some(request)
    }

    fn push_record(&mut self, request: &InFlight, now: u64, status: u16, error: u32) {
        let clock = &self.setup.clock;
        self.batch.push(Record {
            attack: self.setup.shared.attack_id,
            target: request.target,
            seq: request.seq,
            intended_unix_ns: clock.unix_ns(request.intended_ns),
            send_lag_ns: request.dispatched_ns.saturating_sub(request.intended_ns),
            latency_ns: now.saturating_sub(request.intended_ns),
            ttfb_ns: if request.first_byte_ns == 0 {
                0
            } else {
                request.first_byte_ns.saturating_sub(request.dispatched_ns)
            },
            status,
            error,
            bytes_in: request.bytes_in,
            bytes_out: request.bytes_out,
        });
        self.counters.completed += 1;
    }

    fn make_idle(&mut self, slot: usize) {
        let host = self.conns[slot].host;
        self.pools[host].idle.push(slot as u32);
    }

    fn close(&mut self, slot: usize) {
        let conn = &mut self.conns[slot];
        if conn.phase == Phase::Free {
            return;
        }
        self.pools[conn.host].open -= 1;
        self.counters.connections_open -= 1;
        conn.reset();
        self.free.push(slot as u32);
    }

    /// Fails requests whose timeout has passed (oldest first).
    fn expire(&mut self, now: u64) {
        let timeout_ns = self.setup.shared.timeout_ns;
        while let Some(slot) = self.in_flight.front() {
            let Some(request) = self.conns[slot].request.as_ref() else {
                break;
            };
            if request.dispatched_ns.saturating_add(timeout_ns) > now {
                break;
            }
            let cause = if self.conns[slot].phase == Phase::Connecting {
                Cause::new(ErrorKind::ConnectTimeout, "connect timeout")
            } else {
                Cause::new(ErrorKind::Timeout, "timeout awaiting response")
            };
            self.fail(slot, cause);
        }
    }

    /// How long to sleep: until the next request is due, the oldest times out, or
    /// the next batch ships.
    fn wait_ns(&self, now: u64) -> Option<u64> {
        let mut wake = self.last_ship_ns + SHIP_INTERVAL_NS;
        if !self.exhausted
            && !self.capped
            && let Some(due) = self.next_intended(now)
        {
            // Waiting for the lazy feeder: look again in a millisecond.
            wake = wake.min(if self.lazy_waiting {
                due.max(now + 1_000_000)
            } else {
                due
            });
        }
        if let Some(slot) = self.in_flight.front()
            && let Some(request) = &self.conns[slot].request
        {
            wake = wake.min(
                request
                    .dispatched_ns
                    .saturating_add(self.setup.shared.timeout_ns),
            );
        }
        Some(wake.saturating_sub(now))
    }

    /// Sends the batch to the collector when it is big or old enough (or at the end).
    fn ship(&mut self, now: u64, done: bool) {
        if !done && self.batch.len() < SHIP_RECORDS && now < self.last_ship_ns + SHIP_INTERVAL_NS {
            return;
        }
        self.last_ship_ns = now;
        let watermark_ns = self
            .in_flight
            .front()
            .and_then(|slot| self.conns[slot].request.as_ref())
            .map_or(now, |r| r.dispatched_ns.min(now));
        self.counters.in_flight = self.in_flight_count as u64;
        self.counters.behind = self.behind(now);
        let fresh = self
            .setup
            .recycled
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(SHIP_RECORDS * 2));
        let records = std::mem::replace(&mut self.batch, fresh);
        let report = WorkerReport {
            worker: self.setup.index,
            records,
            watermark_ns,
            counters: self.counters,
            done,
        };
        if self.setup.reports.send(report).is_err() {
            // The collector is gone (its output failed); stop quietly.
            self.setup.stop.abort();
        }
    }

    /// Requests of this worker's share that are due but have not left.
    fn behind(&self, now: u64) -> u64 {
        if self.exhausted {
            return 0;
        }
        let Some(due_all) = self.setup.plan.asked_by(now) else {
            return 0;
        };
        let stride = self.setup.stride;
        let mine = (due_all + stride - 1 - self.setup.index as u64) / stride;
        let sent = (self.next_k - self.setup.index as u64) / stride;
        mine.saturating_sub(sent)
    }
}

fn connect_error_kind(err: &std::io::Error) -> ErrorKind {
    match err.kind() {
        std::io::ErrorKind::TimedOut => ErrorKind::ConnectTimeout,
        std::io::ErrorKind::ConnectionReset => ErrorKind::Reset,
        _ => ErrorKind::Connect,
    }
}

fn transport_error_kind(err: &std::io::Error) -> ErrorKind {
    match err.kind() {
        std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::ConnectionAborted => {
            ErrorKind::Reset
        }
        std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::UnexpectedEof => ErrorKind::Closed,
        std::io::ErrorKind::TimedOut => ErrorKind::Timeout,
        _ => ErrorKind::Io,
    }
}
