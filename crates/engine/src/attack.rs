//! [`AttackState`]: one attack's share of the run inside a worker: the next request
//! index it owns, when that request is due, its in-flight list, and for the closed
//! model its users.
//!
//! Open model: request k is due at `plan.intended_ns(k)`, a pure function of k.
//! Closed model: the plan says how many users there should be at any time (a user
//! schedule); a user sends, waits for the answer, thinks, and sends again. The
//! intended time of a closed-model request is when its user became ready, so its lag
//! is the generator's and its latency is the request's own.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::mpsc::Receiver;

use workload::{Flow, Pacing, Plan};

use crate::flow_users::FlowUsers;
use crate::inflight::InFlightList;
use crate::lazy::LazyTarget;
use crate::split::Split;

/// Where the next request's intended time came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// The open model's schedule.
    Schedule,
    /// A closed-model user that finished thinking.
    Thinking,
    /// A closed-model user that joins because the user count rose.
    NewUser,
}

pub(crate) struct AttackState {
    /// The next request index this worker owns (`index, index + stride, ...`).
    pub next_k: u64,
    /// This worker among those taking part in the attack (the stride of `next_k`).
    pub split: Split,
    /// No more requests will be dispatched (plan over, or stopping).
    pub exhausted: bool,
    /// Dispatch stopped at a cap; wait for a completion, not the clock.
    pub capped: bool,
    pub max_in_flight: usize,
    pub in_flight: InFlightList,
    pub in_flight_count: usize,
    /// Closed model: when each thinking user is ready again, in completion order.
    thinking: VecDeque<u64>,
    pub lazy: Option<Receiver<LazyTarget>>,
    /// The next lazy target, taken off the queue but not yet sent.
    pub lazy_next: Option<LazyTarget>,
    /// The lazy feeder has not caught up; look again shortly.
    pub lazy_waiting: bool,
    pub sent: u64,
    pub completed: u64,
    /// A flow attack's users (its steps are its targets).
    pub flow: Option<Box<FlowUsers>>,
    /// A replay: the next request is due when its lazy target says
    /// ([`LazyTarget::due_ns`]), not when the schedule does.
    pub replay: bool,
}

impl AttackState {
    pub(crate) fn new(
        split: Split,
        max_in_flight: usize,
        lazy: Option<Receiver<LazyTarget>>,
        flow: Option<Arc<Flow>>,
    ) -> AttackState {
        AttackState {
            next_k: split.index as u64,
            split,
            // A worker past those taking part owns no request of the attack.
            exhausted: split.index >= split.workers,
            capped: false,
            max_in_flight,
            in_flight: InFlightList::default(),
            in_flight_count: 0,
            thinking: VecDeque::new(),
            lazy,
            lazy_next: None,
            lazy_waiting: false,
            sent: 0,
            completed: 0,
            flow: flow.map(|flow| Box::new(FlowUsers::new(flow))),
            replay: false,
        }
    }

    /// The next request's intended time and its source, or `None` when nothing more
    /// will be due (the attack is then exhausted). The time may lie in the future:
    /// the caller sleeps until then. Closed-model users that are all busy give `None`
    /// without exhausting the attack.
    pub(crate) fn next_due(
        &mut self,
        plan: &Plan,
        now: u64,
        split: Split,
    ) -> Option<(u64, Source)> {
        if self.exhausted {
            return None;
        }
        // Past the end nothing more leaves, even a backlog: it is counted as unsent.
        if plan.end_ns().is_some_and(|end| now >= end) {
            return self.exhaust();
        }
        if self.replay {
            if !plan.allows(self.next_k, now) {
                return self.exhaust();
            }
            // The feeder has not caught up: now, and the dispatch finds it waiting.
            let due = self.lazy_next.as_ref().map_or(now, |next| next.due_ns);
            return Some((due, Source::Schedule));
        }
        match &plan.pacing {
            Pacing::Open(_) => match plan.intended_ns(self.next_k) {
                Some(t) => Some((t, Source::Schedule)),
                None => self.exhaust(),
            },
            Pacing::Closed { .. } => {
                if !plan.allows(self.next_k, now) {
                    return self.exhaust();
                }
                self.next_user(plan, now, split)
            }
        }
    }

    fn next_user(&self, plan: &Plan, now: u64, split: Split) -> Option<(u64, Source)> {
        if let Some(&ready) = self.thinking.front()
            && ready <= now
        {
            return Some((ready, Source::Thinking));
        }
        if self.users() < split.of(plan.users_at(now)) {
            return Some((now, Source::NewUser));
        }
        self.thinking
            .front()
            .map(|&ready| (ready, Source::Thinking))
    }

    /// Records that the request due from `source` was dispatched.
    pub(crate) fn took(&mut self, source: Source) {
        self.next_k += self.split.workers as u64;
        self.sent += 1;
        if source == Source::Thinking {
            self.thinking.pop_front();
        }
    }

    /// Closed model, after a request completed (and left the in-flight count): its
    /// user thinks and comes back, unless the user count has dropped meanwhile.
    pub(crate) fn user_finished(&mut self, plan: &Plan, now: u64, split: Split) {
        let Pacing::Closed { think_ns, .. } = plan.pacing else {
            return;
        };
        if !self.exhausted && self.users() < split.of(plan.users_at(now)) {
            self.thinking.push_back(now.saturating_add(think_ns));
        }
    }

    /// Closed model: users now present (sending or thinking).
    pub(crate) fn users(&self) -> usize {
        if let Some(users) = &self.flow {
            return users.live;
        }
        self.in_flight_count + self.thinking.len()
    }

    /// When to look again while the user count changes (a ramp of users).
    pub(crate) fn recheck_ns(&self, plan: &Plan, now: u64) -> Option<u64> {
        match &plan.pacing {
            Pacing::Closed { users, .. } if !self.exhausted && users.duration_ns().is_some() => {
                Some(now + 10_000_000)
            }
            _ => None,
        }
    }

    fn exhaust(&mut self) -> Option<(u64, Source)> {
        self.exhausted = true;
        self.thinking.clear();
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use workload::Schedule;

    const MS: u64 = 1_000_000;

    fn closed(users: &str, think_ms: u64) -> Plan {
        Plan {
            pacing: Pacing::Closed {
                users: Schedule::parse(users).unwrap(),
                think_ns: think_ms * MS,
            },
            duration_ns: None,
            max_requests: None,
            shard: workload::Shard::WHOLE,
        }
    }

    #[test]
    fn closed_users_think_between_requests() {
        let plan = closed("const(2, 1m)", 100);
        let split = Split {
            index: 0,
            workers: 1,
        };
        let mut state = AttackState::new(split, 100, None, None);
        // Two users join at once.
        for _ in 0..2 {
            let (t, source) = state.next_due(&plan, 0, split).unwrap();
            assert_eq!((t, source), (0, Source::NewUser));
            state.took(source);
            state.in_flight_count += 1;
        }
        assert_eq!(state.next_due(&plan, 0, split), None, "both users busy");
        // One answer comes back at 5 ms: that user is ready again at 105 ms.
        state.in_flight_count -= 1;
        state.user_finished(&plan, 5 * MS, split);
        assert_eq!(
            state.next_due(&plan, 50 * MS, split),
            Some((105 * MS, Source::Thinking)),
            "still thinking"
        );
        let (t, source) = state.next_due(&plan, 110 * MS, split).unwrap();
        assert_eq!(
            (t, source),
            (105 * MS, Source::Thinking),
            "intended = when the user was ready"
        );
        state.took(source);
        assert_eq!(state.users(), 1);
        assert!(!state.exhausted);
        assert_eq!(state.next_due(&plan, 61_000 * MS, split), None);
        assert!(state.exhausted, "the schedule ended");
    }

    #[test]
    fn fewer_users_means_users_leave() {
        let plan = closed("const(2, 1s) const(1, 1s)", 0);
        let split = Split {
            index: 0,
            workers: 1,
        };
        let mut state = AttackState::new(split, 100, None, None);
        state.in_flight_count = 2;
        state.in_flight_count -= 1;
        state.user_finished(&plan, 1500 * MS, split);
        assert_eq!(
            state.users(),
            1,
            "with one user wanted, the finished one leaves"
        );
        assert_eq!(state.recheck_ns(&plan, 0), Some(10 * MS));
    }
}
