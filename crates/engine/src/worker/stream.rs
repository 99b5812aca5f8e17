//! Flow steps that hold a connection open (`ws`, `sse`) in the worker: the step is
//! rendered for its user as a request step is (variables, data row, cookies; the same
//! refusal of outside values a header cannot carry), handed to the worker's session
//! loop (`crate::session`), and when the session ends its outcomes become records, its
//! matched messages' extractions the user's variables, and the user goes on.
//!
//! An open session counts as a request in flight (caps, the end of the run) and holds
//! the worker's watermark at its intended time, so its records, written when it ends,
//! are never behind what the collector has already released.

use std::collections::BTreeMap;
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, channel};

use record::{ErrorKind, Record};
use rustix::event::{EventfdFlags, eventfd};
use workload::{ActionKind, RenderContext, Stream};

use super::Worker;
use crate::session::{Outcome, Reply, Runner, SEND_TIME_DIGITS, Send, SessionDone, SessionJob};
use crate::shared::PreparedRequest;

/// The poller's token of the sessions' eventfd.
pub(super) const SESSION_TOKEN: u64 = u64::MAX - 1;

/// The worker's side of its sessions.
pub(super) struct Sessions {
    runner: Runner,
    waker: Arc<OwnedFd>,
    done: Receiver<SessionDone>,
    /// The intended times of the sessions still open (their records are to come),
    /// each with how many: tens of thousands may be open at once.
    open: BTreeMap<u64, u32>,
}

impl Sessions {
    /// The earliest intended time of an open session.
    pub(super) fn oldest_ns(&self) -> Option<u64> {
        self.open.keys().next().copied()
    }

    /// The session loop's wake-ups so far.
    pub(super) fn wakes(&self) -> u64 {
        self.runner.wakes()
    }

    fn opened(&mut self, intended_ns: u64) {
        *self.open.entry(intended_ns).or_default() += 1;
    }

    fn closed(&mut self, intended_ns: u64) {
        if let Some(count) = self.open.get_mut(&intended_ns) {
            *count -= 1;
            if *count == 0 {
                self.open.remove(&intended_ns);
            }
        }
    }
}

impl Worker {
    /// Whether step `step` of `attack` holds its connection open.
    pub(super) fn is_stream_step(&self, attack: usize, step: usize) -> bool {
        self.shared.attacks[attack]
            .flow
            .as_ref()
            .is_some_and(|flow| flow.steps[step].stream.is_some())
    }

    /// Starts user `user`'s stream step on the session loop.
    pub(super) fn start_stream(&mut self, attack: usize, user: u32, intended_ns: u64, now: u64) {
        let Some(users) = self.attacks[attack].flow.as_mut() else {
            return;
        };
        let step = users.user(user).step;
        // The upgrade's record's, known before it is rendered: its trace ids, under
        // -trace, are those of (attack, seq), as the exemplars find them.
        let seq = users.next_seq(user);
        let job = match self.step_refused(attack, user, step) {
            Some(id) => Err(id),
            None => self.session_job(attack, user, seq, intended_ns, now),
        };
        let job = job.and_then(|job| {
            self.sessions()
                .map_err(|e| self.io_error("session loop", &e))?;
            let sessions = self.sessions.as_ref().ok_or(0u32)?;
            let submitted = sessions.runner.submit(job);
            submitted.map_err(|e| self.io_error("session loop", &e))
        });
        let state = &mut self.attacks[attack];
        state.sent += 1;
        self.counters.sent += 1;
        let step = step as u32;
        match job {
            Ok(()) => {
                state.in_flight_count += 1;
                if let Some(sessions) = self.sessions.as_mut() {
                    sessions.opened(intended_ns);
                }
            }
            Err(id) => {
                // Not sent: its record, and the user goes on as after a transport error
                // (a stream step's checks judge events, and none came).
                let outcome = Outcome {
                    target_index: step,
                    intended_ns,
                    started_ns: now,
                    end_ns: now,
                    ..Outcome::default()
                };
                self.push_outcome(attack, seq, &outcome, id);
                self.next_step(attack, user, now);
            }
        }
    }

    fn io_error(&mut self, operation: &'static str, e: &std::io::Error) -> u32 {
        self.errors
            .cause(crate::errors::Cause::io(ErrorKind::Io, operation, e))
    }

    /// The session loop, its channel back and its eventfd, made at the first session.
    fn sessions(&mut self) -> std::io::Result<()> {
        if self.sessions.is_some() {
            return Ok(());
        }
        let waker: Arc<OwnedFd> =
            Arc::new(eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)?);
        self.poller.add_level_read(waker.as_ref(), SESSION_TOKEN)?;
        let (sender, done) = channel();
        let reply = Reply {
            done: sender,
            waker: Arc::clone(&waker),
        };
        let runner = Runner::spawn(reply, self.clock, self.stop.clone(), self.precision_ns)?;
        self.sessions = Some(Sessions {
            runner,
            waker,
            done,
            open: BTreeMap::new(),
        });
        Ok(())
    }

    /// The step rendered for its user: the request (with its cookies and, for a
    /// WebSocket, a fresh key), and each `send` action's message.
    fn session_job(
        &mut self,
        attack: usize,
        user: u32,
        seq: u64,
        intended_ns: u64,
        now: u64,
    ) -> Result<SessionJob, u32> {
        let shared = Arc::clone(&self.shared);
        let options = &shared.attacks[attack];
        let users = self.attacks[attack].flow.as_ref().ok_or(0u32)?;
        let flow = Arc::clone(&users.flow);
        let state = users.user(user);
        let step = state.step;
        let target = &options.targets[step];
        let host = &self.hosts.hosts[target.host];
        let address = host.address.clone();
        let tls = match (&host.tls_name, &shared.tls) {
            (Some(name), Some(config)) => Some((Arc::clone(config), name.clone())),
            _ => None,
        };
        let context = RenderContext {
            seed: shared.seed ^ attack as u64,
            seq,
            data: options.data.as_deref(),
            row: state.number,
            variables: &state.variables,
            user: state.number,
        };
        let mut extra = Vec::new();
        if flow.options.cookies {
            state.jar.write_header(
                flow.steps[step].cookie_url(),
                self.clock.unix_s(now),
                &mut extra,
            );
        }
        let key = match &flow.steps[step].stream {
            Some(Stream::WebSocket(_)) => tungstenite::handshake::client::generate_key(),
            _ => String::new(),
        };
        if !key.is_empty() {
            extra.extend_from_slice(format!("Sec-WebSocket-Key: {key}\r\n").as_bytes());
        }
        let mut request = Vec::new();
        if let PreparedRequest::Templated(template) = &target.request {
            // Under -trace the upgrade (or stream request) carries its traceparent.
            let trace = (shared.trace.as_ref()).and_then(|t| t.ids(attack as u16, seq));
            template.render(&context, &mut request, &mut Vec::new(), &extra, trace);
        }
        let sends = match &flow.steps[step].stream {
            Some(Stream::WebSocket(session)) => (session.actions.iter())
                .filter_map(|a| match &a.kind {
                    ActionKind::Send(before, after) => {
                        let mut out = Vec::new();
                        before.render(&context, &mut out);
                        // The send time's place, of a fixed width: the session writes
                        // it as each message goes.
                        let stamp = after.as_ref().map(|after| {
                            let at = out.len();
                            out.extend_from_slice(&[b'0'; SEND_TIME_DIGITS]);
                            after.render(&context, &mut out);
                            at
                        });
                        Some(Send { bytes: out, stamp })
                    }
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        Ok(SessionJob {
            attack: attack as u16,
            user,
            seq,
            step,
            flow,
            request,
            key,
            sends,
            address,
            local_ip: shared.local_ip,
            tls,
            timeout_ns: options.timeout_ns,
            intended_ns,
            clock: self.clock,
            stop: self.stop.clone(),
            tally: Arc::clone(&self.tally),
        })
    }

    /// Takes every ended session's records (the sessions' eventfd fired).
    pub(super) fn finish_sessions(&mut self) {
        let Some(sessions) = self.sessions.as_mut() else {
            return;
        };
        let mut counter = [0u8; 8];
        let _ = rustix::io::read(sessions.waker.as_ref(), &mut counter);
        while let Some(sessions) = self.sessions.as_mut()
            && let Ok(done) = sessions.done.try_recv()
        {
            sessions.closed(done.intended_ns);
            self.session_ended(done);
        }
    }

    fn session_ended(&mut self, mut done: SessionDone) {
        let attack = usize::from(done.attack);
        let now = self.clock.now_ns();
        self.attacks[attack].in_flight_count -= 1;
        self.extract_matched(attack, done.user, &mut done.outcomes);
        for (index, outcome) in done.outcomes.iter().enumerate() {
            let seq = if index == 0 {
                // Counted as sent, and numbered, when it started.
                done.seq
            } else {
                self.attacks[attack].sent += 1;
                self.counters.sent += 1;
                let users = self.attacks[attack].flow.as_mut();
                users.map_or(0, |users| users.next_seq(done.user))
            };
            let error = outcome
                .failure
                .as_ref()
                .map_or(0, |(kind, text)| self.errors.text(*kind, text));
            self.push_outcome(attack, seq, outcome, error);
        }
        if let (Some(held), Some(first)) = (done.held, done.outcomes.first()) {
            let target = self.shared.attacks[attack].target_offset + first.target_index;
            self.connections.push(record::Connection {
                attack: done.attack,
                target,
                seq: done.seq,
                opened_unix_ns: self.clock.unix_ns(held.opened_ns),
                closed_unix_ns: self.clock.unix_ns(held.closed_ns),
                ..held.figures
            });
        }
        self.next_step(attack, done.user, now);
    }

    /// The record of `outcome`, request `seq` of its user, with error id `error`.
    fn push_outcome(&mut self, attack: usize, seq: u64, outcome: &Outcome, error: u32) {
        let mut checks_failed = outcome.checks_failed;
        if outcome.failure.is_some() && outcome.status != 0 {
            checks_failed |= Record::FAILED_BY_FLOW;
        }
        let target = self.shared.attacks[attack].target_offset + outcome.target_index;
        self.batch.push(Record {
            attack: attack as u16,
            target,
            seq,
            intended_unix_ns: self.clock.unix_ns(outcome.intended_ns),
            send_lag_ns: outcome.started_ns.saturating_sub(outcome.intended_ns),
            latency_ns: outcome.end_ns.saturating_sub(outcome.intended_ns),
            ttfb_ns: if outcome.first_byte_ns == 0 {
                0
            } else {
                outcome.first_byte_ns.saturating_sub(outcome.started_ns)
            },
            status: outcome.status,
            error,
            bytes_in: outcome.bytes_in,
            bytes_out: outcome.bytes_out,
            protocol: record::Protocol::Http1,
            checks_failed,
            grpc_status: None,
        });
        self.counters.completed += 1;
        self.attacks[attack].completed += 1;
    }

    /// The matched messages' extractions into the user's variables; one that finds
    /// nothing fails its action's record, as an `extract` error naming the step.
    fn extract_matched(&mut self, attack: usize, user: u32, outcomes: &mut [Outcome]) {
        let Some(users) = self.attacks[attack].flow.as_mut() else {
            return;
        };
        let (state, scratch, flow) = users.user_and_scratch(user);
        let step = &flow.steps[state.step];
        for outcome in outcomes {
            let Some((action, message)) = &outcome.matched else {
                continue;
            };
            // A WebSocket's `expect` action's, or an event stream's step's.
            let extractions = match &step.stream {
                Some(Stream::WebSocket(session)) => &session.actions[*action].extractions,
                _ => &step.extractions,
            };
            if let Some(text) =
                flow.extract_message(state, extractions, message, &step.name, scratch)
            {
                outcome.failure = Some((ErrorKind::Extract, text));
            }
        }
    }
}
