//! Sending requests off: which are due (each attack's own pacing), which target and
//! connection each takes, and rendering templated requests into a reused buffer.

use std::sync::Arc;

use record::ErrorKind;
use workload::RenderContext;

use super::protocol::record_protocol;
use super::{Pool, Worker};
use crate::conn::{Conn, InFlight, Phase, RequestBytes, start_connect};
use crate::errors::Cause;
use crate::shared::{PreparedRequest, PreparedTarget};

/// Requests one attack may send per pass of the loop. When the generator is behind,
/// every next request is already due: without a bound the loop would only send, never
/// read answers, ship records or expire timeouts, and connections would pile up.
pub(super) const DISPATCH_BATCH: usize = 64;

/// The next request's target, or why there is none yet.
enum Pick {
    Ready {
        target: u32,
        target_index: u32,
        host: usize,
    },
    /// The lazy feeder has not caught up; try again shortly.
    Wait,
    /// The lazy stream has ended.
    Done,
}

impl Worker {
    /// Sends every request that is due and has a connection to go on.
    pub(super) fn dispatch_due(&mut self) {
        for attack in 0..self.attacks.len() {
            if self.attacks[attack].flow.is_some() {
                self.dispatch_flow(attack);
            } else {
                self.dispatch_attack(attack);
            }
        }
    }

    fn dispatch_attack(&mut self, attack: usize) {
        let split = self.attacks[attack].split;
        let state = &mut self.attacks[attack];
        state.capped = false;
        state.lazy_waiting = false;
        for _ in 0..DISPATCH_BATCH {
            let now = self.clock.now_ns();
            // A replay's next request says when it is due: take it off the queue first.
            if self.attacks[attack].replay && !self.ready_replay(attack) {
                break;
            }
            let state = &mut self.attacks[attack];
            let Some((intended_ns, source)) =
                state.next_due(&self.shared.attacks[attack].plan, now, split)
            else {
                break;
            };
            if intended_ns > now {
                break;
            }
            if state.in_flight_count >= state.max_in_flight {
                state.capped = true;
                self.counters.cap_waits += 1;
                break;
            }
            let (target, target_index, host) = match self.pick_target(attack) {
                Pick::Ready {
                    target,
                    target_index,
                    host,
                } => (target, target_index, host),
                Pick::Wait => {
                    self.attacks[attack].lazy_waiting = true;
                    break;
                }
                Pick::Done => {
                    self.attacks[attack].exhausted = true;
                    break;
                }
            };
            let mut request = self.new_request(attack, target, target_index, intended_ns, now);
            request.protocol = self.asked_protocol(host);
            if let Some(id) = self.refused(&request) {
                self.attacks[attack].took(source);
                self.attacks[attack].lazy_next = None;
                self.counters.sent += 1;
                self.push_record(&request, now, 0, id);
                continue;
            }
            let keepalive = self.shared.attacks[attack].keepalive;
            let acquired = match self.acquire(host, keepalive) {
                Ok(Some(slot)) => Ok(slot),
                // At the host cap: wait for a completion.
                Ok(None) => {
                    self.attacks[attack].capped = true;
                    self.counters.cap_waits += 1;
                    break;
                }
                Err(cause) => Err(cause),
            };
            self.attacks[attack].took(source);
            self.counters.sent += 1;
            let lazy = self.attacks[attack].lazy_next.take();
            match acquired {
                Ok(slot) => {
                    let (bytes, head_only) =
                        self.request_bytes(slot, &request, lazy.as_ref().map(|l| &l.prepared));
                    request.lazy = lazy.map(|l| Box::new(l.prepared.target));
                    self.begin(slot, request, bytes, head_only);
                }
                Err(cause) => {
                    let id = self.errors.cause(cause);
                    self.push_record(&request, now, 0, id);
                }
            }
        }
    }

    /// The error id of a request that must not be sent: its streamed target refused as
    /// written, or a value from outside its place cannot carry (docs/FLOWS.md, "Values
    /// from outside a request"). Judged before a connection is taken.
    fn refused(&mut self, request: &InFlight) -> Option<u32> {
        let attack = &self.shared.attacks[request.attack as usize];
        let prepared = match &self.attacks[request.attack as usize].lazy_next {
            Some(lazy) => &lazy.prepared,
            None => &attack.targets[request.target_index as usize],
        };
        match &prepared.request {
            PreparedRequest::Static(_) => None,
            PreparedRequest::Refused(text) => Some(self.errors.refused(text)),
            PreparedRequest::Templated(template) => {
                let context = RenderContext::plain(
                    self.shared.seed ^ u64::from(request.attack),
                    request.seq,
                    attack.data.as_deref(),
                );
                let refusal = template.refusal(&context)?;
                Some(
                    self.errors
                        .refusal(request.attack, request.target, refusal, || {
                            let target = &prepared.target;
                            let why = template.refusal_text(refusal, &[]);
                            format!("{} {}: {why}", target.method, target.display_url())
                        }),
                )
            }
        }
    }

    pub(super) fn new_request(
        &self,
        attack: usize,
        target: u32,
        target_index: u32,
        intended_ns: u64,
        now: u64,
    ) -> InFlight {
        InFlight {
            attack: attack as u16,
            // The run-wide index: shards record (and render) what one machine would.
            seq: self.shared.attacks[attack]
                .plan
                .global_index(self.attacks[attack].next_k),
            target,
            target_index,
            intended_ns,
            dispatched_ns: now,
            first_byte_ns: 0,
            bytes_in: 0,
            bytes_out: 0,
            redirects_left: self.shared.attacks[attack].redirects,
            hop: None,
            lazy: None,
            retried: false,
            protocol: record::Protocol::Http1,
            user: crate::conn::NO_USER,
            call_tally: crate::conn::CallTally::default(),
        }
    }

    /// Round-robin over the attack's fixed targets, or the next from its lazy queue.
    fn pick_target(&mut self, attack: usize) -> Pick {
        let shared = &self.shared.attacks[attack];
        let state = &mut self.attacks[attack];
        if state.lazy.is_none() {
            // Turns count run-wide indices, so a shard takes the target one machine would.
            let global = shared.plan.global_index(state.next_k);
            let index = (global % shared.targets.len() as u64) as u32;
            return Pick::Ready {
                target: shared.target_offset + index,
                target_index: index,
                host: shared.targets[index as usize].host,
            };
        }
        self.next_lazy(attack)
    }

    /// Every replay's next request taken off its queue, so that its due time is known
    /// when the worker decides how long to sleep.
    pub(super) fn peek_replays(&mut self) {
        for attack in 0..self.attacks.len() {
            if self.attacks[attack].replay && !self.attacks[attack].exhausted {
                self.ready_replay(attack);
            }
        }
    }

    /// Before time zero: the host of each replay's first request (waiting up to two
    /// seconds for the feeder), so its connections are warmed like fixed targets'.
    pub(super) fn first_replay_hosts(&mut self) -> Vec<usize> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        let replays: Vec<usize> = (0..self.attacks.len())
            .filter(|&attack| self.attacks[attack].replay)
            .collect();
        let mut hosts = Vec::new();
        for attack in replays {
            loop {
                match self.next_lazy(attack) {
                    Pick::Ready { host, .. } => hosts.push(host),
                    Pick::Wait if std::time::Instant::now() < deadline => {
                        std::thread::sleep(std::time::Duration::from_millis(1));
                        continue;
                    }
                    Pick::Wait | Pick::Done => {}
                }
                break;
            }
        }
        hosts
    }

    /// Whether the replay's next request is at hand; notes a wait or the end.
    fn ready_replay(&mut self, attack: usize) -> bool {
        match self.next_lazy(attack) {
            Pick::Ready { .. } => true,
            Pick::Wait => {
                self.attacks[attack].lazy_waiting = true;
                false
            }
            Pick::Done => {
                self.attacks[attack].exhausted = true;
                false
            }
        }
    }

    /// The next target from the attack's lazy queue, kept in `lazy_next` until sent.
    fn next_lazy(&mut self, attack: usize) -> Pick {
        let state = &mut self.attacks[attack];
        let Some(queue) = &state.lazy else {
            return Pick::Done;
        };
        if state.lazy_next.is_none() {
            match queue.try_recv() {
                Ok(mut lazy) => {
                    if let Some(host) = lazy.new_host.take() {
                        let local = self.hosts.insert(host);
                        self.lazy_hosts.resize(
                            self.lazy_hosts.len().max(lazy.prepared.host + 1),
                            usize::MAX,
                        );
                        self.lazy_hosts[lazy.prepared.host] = local;
                        self.pools
                            .resize_with(self.hosts.hosts.len(), Pool::default);
                    }
                    state.lazy_next = Some(lazy);
                }
                Err(std::sync::mpsc::TryRecvError::Empty) => return Pick::Wait,
                Err(std::sync::mpsc::TryRecvError::Disconnected) => return Pick::Done,
            }
        }
        match &state.lazy_next {
            Some(lazy) => Pick::Ready {
                target: lazy.id,
                target_index: u32::MAX,
                host: self.lazy_hosts[lazy.prepared.host],
            },
            None => Pick::Wait,
        }
    }

    /// The bytes of `request` on connection `slot`: shared static bytes, or the
    /// template rendered into the connection's spare buffer.
    fn request_bytes(
        &mut self,
        slot: usize,
        request: &InFlight,
        lazy: Option<&PreparedTarget>,
    ) -> (RequestBytes, bool) {
        let shared = &self.shared;
        let attack = &shared.attacks[request.attack as usize];
        let prepared = lazy.unwrap_or_else(|| &attack.targets[request.target_index as usize]);
        let trace = (shared.trace.as_ref()).and_then(|t| t.ids(request.attack, request.seq));
        let template = match &prepared.request {
            PreparedRequest::Static(bytes) => {
                let Some(traced) = &prepared.traced else {
                    return (RequestBytes::Shared(Arc::clone(bytes)), prepared.head_only);
                };
                // Under -trace a static request goes from the connection's own buffer,
                // so that sampled and unsampled ones alike reuse it (no allocation).
                let mut buffer = self.conns[slot].spare_buffer();
                match trace {
                    Some(ids) => {
                        buffer.extend_from_slice(&traced.bytes);
                        ids.write_hex(&mut buffer[traced.ids_at..]);
                    }
                    None => buffer.extend_from_slice(bytes),
                }
                return (RequestBytes::Owned(buffer), prepared.head_only);
            }
            PreparedRequest::Templated(template) => template,
            // `refused` kept it from a connection.
            PreparedRequest::Refused(_) => return (RequestBytes::Shared(Arc::from([])), false),
        };
        let context = RenderContext::plain(
            shared.seed ^ u64::from(request.attack),
            request.seq,
            attack.data.as_deref(),
        );
        let mut buffer = self.conns[slot].spare_buffer();
        template.render(&context, &mut buffer, &mut self.body_scratch, &[], trace);
        (RequestBytes::Owned(buffer), prepared.head_only)
    }

    pub(super) fn open_connection(&mut self, host: usize) -> Result<usize, Cause> {
        let socket = start_connect(&self.hosts.hosts[host].address, self.shared.local_ip)
            .map_err(|err| Cause::io(connect_error_kind(&err), "connect", &err))?;
        let slot = self.new_slot();
        let conn = &mut self.conns[slot];
        let token = (u64::from(conn.generation) << 32) | slot as u64;
        if let Err(err) = self.poller.add(&socket, token) {
            self.free.push(slot as u32);
            return Err(Cause::io(ErrorKind::Io, "epoll", &err));
        }
        conn.arrival.enable(&socket);
        conn.socket = Some(socket);
        conn.phase = Phase::Connecting;
        conn.host = host;
        self.pools[host].open += 1;
        self.counters.connections_open += 1;
        self.attach_protocol(host, slot);
        Ok(slot)
    }

    /// A free slot (a new one if none is free).
    pub(super) fn new_slot(&mut self) -> usize {
        self.free.pop().map_or_else(
            || {
                self.conns.push(Conn::new());
                self.conns.len() - 1
            },
            |slot| slot as usize,
        )
    }

    /// Attaches a request to a connection and writes it if the connection is up.
    pub(super) fn begin(
        &mut self,
        slot: usize,
        mut request: InFlight,
        bytes: RequestBytes,
        head_only: bool,
    ) {
        request.protocol = record_protocol(&self.conns[slot]);
        let attack = request.attack as usize;
        let shared = &self.shared.attacks[attack];
        let conn = &mut self.conns[slot];
        let dispatched_ns = request.dispatched_ns;
        conn.set_request_bytes(bytes);
        conn.parser
            .start(head_only, shared.redirects >= 0, shared.body_limit);
        if let Some(kept) = self.kept_body_bytes(&request) {
            self.conns[slot].parser.keep(kept);
        }
        let stream = self.grpc_stream(&request);
        // A streamed call is open in the per-second figures from its start (once,
        // however often it is sent again).
        if stream.is_some() && !request.call_tally.open {
            self.tally.opened();
            request.call_tally.open = true;
        }
        self.conns[slot]
            .parser
            .messages
            .start(stream, dispatched_ns);
        let conn = &mut self.conns[slot];
        conn.request = Some(request);
        let state = &mut self.attacks[attack];
        state.in_flight.insert(&mut self.conns, slot, dispatched_ns);
        state.in_flight_count += 1;
        self.send(slot);
    }

    /// What `request` streams when it is a gRPC call that streams either way: its
    /// messages are counted (`grpc_messages.rs`) and go in a connections entry.
    fn grpc_stream(&self, request: &InFlight) -> Option<workload::GrpcStream> {
        let options = &self.shared.attacks[request.attack as usize];
        let index = request.target_index as usize;
        let target = match (&request.lazy, options.flow.as_deref()) {
            (Some(lazy), _) => Some(&**lazy),
            (None, Some(flow)) if request.is_flow() => flow.steps.get(index).map(|s| &s.target),
            (None, _) => options.targets.get(index).map(|t| &t.target),
        };
        target.and_then(|t| t.grpc_stream)
    }
}

pub(super) fn connect_error_kind(err: &std::io::Error) -> ErrorKind {
    match err.kind() {
        std::io::ErrorKind::TimedOut => ErrorKind::ConnectTimeout,
        std::io::ErrorKind::ConnectionReset => ErrorKind::Reset,
        _ => ErrorKind::Connect,
    }
}
