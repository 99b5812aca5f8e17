//! Flow attacks in the worker: which user sends which step when (`flow_users.rs`
//! decides what is due), rendering the step for its user (variables, data row,
//! cookies) into the connection's reused buffer, and judging each answer on the bytes
//! the parser kept, which decides the user's next step.

use std::sync::Arc;

use record::Record;
use workload::{Answer, CookieUrl, Flow, FlowFailure, Next, Pacing, RenderContext};

use super::Worker;
use super::dispatch::DISPATCH_BATCH;
use crate::conn::{InFlight, RequestBytes};
use crate::shared::PreparedRequest;

impl Worker {
    /// Sends every step that is due (users starting their flow, users done thinking)
    /// and has a connection to go on.
    pub(super) fn dispatch_flow(&mut self, attack: usize) {
        let split = self.attacks[attack].split;
        let shared = Arc::clone(&self.shared);
        let options = &shared.attacks[attack];
        self.attacks[attack].capped = false;
        for _ in 0..DISPATCH_BATCH {
            let now = self.clock.now_ns();
            let state = &mut self.attacks[attack];
            let Some(users) = state.flow.as_mut() else {
                return;
            };
            if state.exhausted {
                return;
            }
            if options.plan.end_ns().is_some_and(|end| now >= end) {
                users.stop();
                state.exhausted = true;
                return;
            }
            let Some((intended_ns, due)) = users.next_due(&options.plan, state.next_k, now, split)
            else {
                state.exhausted = users.finished(&options.plan, state.next_k, now);
                return;
            };
            if intended_ns > now {
                return;
            }
            if state.in_flight_count >= state.max_in_flight {
                state.capped = true;
                self.counters.cap_waits += 1;
                return;
            }
            let (user, took_run) = users.take(due, &options.plan, state.next_k, now, split);
            if took_run {
                state.next_k += split.workers as u64;
            }
            let Some(user) = user else {
                continue;
            };
            if !self.send_step(attack, user, intended_ns, now) {
                return;
            }
        }
    }

    /// Sends user `user`'s current step; false (the user waits again) when its host
    /// has no connection to give.
    fn send_step(&mut self, attack: usize, user: u32, intended_ns: u64, now: u64) -> bool {
        let shared = Arc::clone(&self.shared);
        let options = &shared.attacks[attack];
        let Some(users) = self.attacks[attack].flow.as_mut() else {
            return false;
        };
        let step = users.user(user).step;
        if self.is_stream_step(attack, step) {
            self.start_stream(attack, user, intended_ns, now);
            return true;
        }
        let host = options.targets[step].host;
        let acquired = match self.step_refused(attack, user, step) {
            Some(id) => Err(id),
            None => match self.acquire(host, options.keepalive) {
                Ok(Some(slot)) => Ok(slot),
                Ok(None) => {
                    if let Some(users) = self.attacks[attack].flow.as_mut() {
                        users.wait(user, intended_ns);
                    }
                    self.attacks[attack].capped = true;
                    self.counters.cap_waits += 1;
                    return false;
                }
                Err(cause) => Err(self.errors.cause(cause)),
            },
        };
        let state = &mut self.attacks[attack];
        state.sent += 1;
        self.counters.sent += 1;
        let seq = state.flow.as_mut().map_or(0, |users| users.next_seq(user));
        let mut request = self.new_request(
            attack,
            options.target_offset + step as u32,
            step as u32,
            intended_ns,
            now,
        );
        request.seq = seq;
        request.user = user;
        request.protocol = self.asked_protocol(host);
        match acquired {
            Ok(slot) => {
                let bytes = self.step_bytes(slot, &request, now);
                self.begin(slot, request, bytes, options.targets[step].head_only);
            }
            Err(id) => self.push_record(&request, now, 0, id),
        }
        true
    }

    /// The error id when user `user`'s step `step` must not be sent: a variable or
    /// data column of the user holds what its header cannot carry (docs/FLOWS.md,
    /// "Values from outside a request"). The user's flow goes on as after a
    /// transport error.
    pub(super) fn step_refused(&mut self, attack: usize, user: u32, step: usize) -> Option<u32> {
        let options = &self.shared.attacks[attack];
        let users = self.attacks[attack].flow.as_ref()?;
        let PreparedRequest::Templated(template) = &options.targets[step].request else {
            return None;
        };
        let user = users.user(user);
        let context = RenderContext {
            seed: self.shared.seed ^ attack as u64,
            seq: 0,
            data: options.data.as_deref(),
            row: user.number,
            variables: &user.variables,
            user: user.number,
        };
        let refusal = template.refusal(&context)?;
        let flow = &users.flow;
        Some(
            self.errors
                .refusal(attack as u16, step as u32, refusal, || {
                    let why = template.refusal_text(refusal, &flow.variables);
                    format!("step {:?}: {why}", flow.steps[step].name)
                }),
        )
    }

    /// The step's request for its user, rendered into connection `slot`'s spare
    /// buffer: the user's variables, data row and cookies.
    fn step_bytes(&mut self, slot: usize, request: &InFlight, now: u64) -> RequestBytes {
        let shared = &self.shared;
        let options = &shared.attacks[request.attack as usize];
        let step = request.target_index as usize;
        let mut buffer = self.conns[slot].spare_buffer();
        let (Some(users), PreparedRequest::Templated(template)) = (
            self.attacks[request.attack as usize].flow.as_ref(),
            &options.targets[step].request,
        ) else {
            return RequestBytes::Owned(buffer);
        };
        let user = users.user(request.user);
        let flow = &users.flow;
        self.cookie_scratch.clear();
        if flow.options.cookies {
            let now_unix_s = self.clock.unix_s(now);
            user.jar.write_header(
                flow.steps[step].cookie_url(),
                now_unix_s,
                &mut self.cookie_scratch,
            );
        }
        let context = RenderContext {
            seed: shared.seed ^ u64::from(request.attack),
            seq: request.seq,
            data: options.data.as_deref(),
            row: user.number,
            variables: &user.variables,
            user: user.number,
        };
        let trace = (shared.trace.as_ref()).and_then(|t| t.ids(request.attack, request.seq));
        template.render(
            &context,
            &mut buffer,
            &mut self.body_scratch,
            &self.cookie_scratch,
            trace,
        );
        RequestBytes::Owned(buffer)
    }

    /// Body bytes a flow request's answer keeps for its step's checks (0: the head
    /// only); `None` for a plain request, which keeps nothing.
    pub(super) fn kept_body_bytes(&self, request: &InFlight) -> Option<usize> {
        if !request.is_flow() {
            return None;
        }
        let flow = self.shared.attacks[request.attack as usize]
            .flow
            .as_deref()?;
        let step = &flow.steps[request.target_index as usize];
        Some(if step.reads_body {
            usize::try_from(flow.options.check_body_limit).unwrap_or(usize::MAX)
        } else {
            0
        })
    }

    /// The flow request of connection `slot` is complete: its answer moves out of the
    /// parser (the buffers swap, so both keep their capacity) to be judged.
    pub(super) fn take_kept_answer(&mut self, slot: usize) {
        let (answer, parser) = (&mut self.answer, &mut self.conns[slot].parser);
        std::mem::swap(&mut answer.head, &mut parser.kept_head);
        std::mem::swap(&mut answer.body, &mut parser.kept_body);
        answer.body_bytes = parser.body_read();
        answer.ready = true;
    }

    /// A flow request ended (`status` 0: without an answer; a gRPC call's status
    /// beside it) at `now`, its answer having arrived at `answered_ns`: its answer
    /// judged (its error and failed checks returned), and its user's next step set.
    pub(super) fn flow_answered(
        &mut self,
        request: &InFlight,
        now: u64,
        answered_ns: u64,
        (status, grpc_status): (u16, Option<record::GrpcStatus>),
        error: u32,
    ) -> (u32, u32) {
        let attack = request.attack as usize;
        let answered = status != 0 && std::mem::take(&mut self.answer.ready);
        let answer = if answered {
            Answer {
                status,
                head: &self.answer.head,
                body: &self.answer.body,
                body_bytes: self.answer.body_bytes,
                latency_ns: answered_ns.saturating_sub(request.intended_ns),
                grpc_status: grpc_status.map(|code| code.0),
            }
        } else {
            Answer::default()
        };
        let now_unix_s = self.clock.unix_s(now);
        let Some(users) = self.attacks[attack].flow.as_mut() else {
            return (error, 0);
        };
        let (user, scratch, flow) = users.user_and_scratch(request.user);
        let step = user.step;
        // The answer came from where the last redirect led, if one did.
        let url = request.hop.as_ref().map_or_else(
            || flow.steps[step].cookie_url(),
            |hop| CookieUrl::of(&hop.url),
        );
        let verdict = flow.judge(user, &answer, url, now_unix_s, scratch);
        let mut checks_failed = verdict.checks_failed;
        let mut error = error;
        if let Some(failure) = verdict.failure {
            checks_failed |= Record::FAILED_BY_FLOW;
            if error == 0 {
                error = self.errors.flow(request.attack, step, failure, || {
                    flow_error(flow, step, failure)
                });
            }
        }
        self.next_step(attack, request.user, now);
        (error, checks_failed)
    }

    /// After an answer: the user thinks and sends its next step, or its run of the
    /// flow ends (closed model: it starts over after the think time, if still wanted).
    pub(super) fn next_step(&mut self, attack: usize, user: u32, now: u64) {
        let split = self.attacks[attack].split;
        let seed = self.shared.seed;
        let plan = &self.shared.attacks[attack].plan;
        let state = &mut self.attacks[attack];
        let exhausted = state.exhausted;
        let Some(users) = state.flow.as_mut() else {
            return;
        };
        let (state_of_user, _, flow) = users.user_and_scratch(user);
        match flow.advance(state_of_user, seed) {
            Next::Step { delay_ns, .. } => users.wait(user, now.saturating_add(delay_ns)),
            Next::End { delay_ns } => {
                let again = match plan.pacing {
                    Pacing::Closed { think_ns, .. }
                        if !exhausted && users.live <= split.of(plan.users_at(now)) =>
                    {
                        Some(now.saturating_add(delay_ns).saturating_add(think_ns))
                    }
                    _ => None,
                };
                users.run_ended(user, again);
            }
        }
    }
}

impl Worker {
    /// A flow request is redirected: the redirecting answer's cookies go in its
    /// user's jar (a login answering 302 with its session cookie), refused ones
    /// silently, as a browser does.
    pub(super) fn keep_redirect_cookies(&mut self, request: &InFlight, now: u64) {
        let now_unix_s = self.clock.unix_s(now);
        let head = &self.answer.head;
        let Some(users) = self.attacks[request.attack as usize].flow.as_mut() else {
            return;
        };
        let (user, _, flow) = users.user_and_scratch(request.user);
        if !flow.options.cookies {
            return;
        }
        let step = &flow.steps[user.step];
        let url = request
            .hop
            .as_ref()
            .map_or(&step.target.url, |hop| &hop.url);
        let answer = Answer {
            head,
            ..Answer::default()
        };
        for set_cookie in answer.headers("set-cookie") {
            let _ = user.jar.store(set_cookie, CookieUrl::of(url), now_unix_s);
        }
    }

    /// A flow request's next hop carries its user's cookies for `url`.
    pub(super) fn add_hop_cookies(
        &mut self,
        request: &InFlight,
        url: &url::Url,
        bytes: &mut Vec<u8>,
        now: u64,
    ) {
        let now_unix_s = self.clock.unix_s(now);
        let Some(users) = self.attacks[request.attack as usize].flow.as_ref() else {
            return;
        };
        let Some(head_end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") else {
            return;
        };
        self.cookie_scratch.clear();
        users.user(request.user).jar.write_header(
            CookieUrl::of(url),
            now_unix_s,
            &mut self.cookie_scratch,
        );
        let at = head_end + 2;
        bytes.splice(at..at, self.cookie_scratch.iter().copied());
    }
}

fn flow_error(flow: &Flow, step: usize, failure: FlowFailure) -> (record::ErrorKind, String) {
    let kind = match failure {
        FlowFailure::Extract { .. } | FlowFailure::NotText { .. } => record::ErrorKind::Extract,
        FlowFailure::Check { .. } => record::ErrorKind::Check,
        FlowFailure::Cookie(_) => record::ErrorKind::Cookie,
        FlowFailure::Decode(_) => record::ErrorKind::Grpc,
    };
    (kind, flow.failure_text(step, failure))
}

/// A flow request's answer as the parser kept it ([`Worker::take_kept_answer`]).
#[derive(Default)]
pub(crate) struct KeptAnswer {
    pub head: Vec<u8>,
    pub body: Vec<u8>,
    pub body_bytes: u64,
    /// Holds the answer of the request being recorded.
    pub ready: bool,
}
