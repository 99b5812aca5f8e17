//! [`FlowUsers`]: one flow attack's virtual users inside a worker: their states (a
//! slab, reused), the users waiting to send their next step (a timer heap), and when
//! the next one is due.
//!
//! Open model: flow *starts* come from the plan's schedule (start k is due at
//! `plan.intended_ns(k)`), each a new user; a user leaves when its run of the flow
//! ends. Closed model: the plan says how many users there are; a user whose run ended
//! starts over after the scenario's think time. Either way, each step after the
//! first is due at the previous answer plus its think time, and its latency counts
//! from then.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;

use workload::{Flow, FlowScratch, Pacing, Plan, UserState};

use crate::split::Split;

/// Requests of one run of a flow that get their own `seq` (`run << 16 | request`);
/// later ones share the last.
const REQUESTS_PER_RUN: u64 = 1 << 16;

/// What is due next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Due {
    /// A new user starts the flow (open model: from the schedule; closed: the user
    /// count rose).
    NewUser,
    /// A user sends its next step, or (closed model) starts its flow over.
    Waiting(u32),
}

/// Where a user is, besides its [`UserState`].
#[derive(Debug, Clone, Copy, Default)]
struct Run {
    /// The run-wide index of its current run of the flow (a plan index).
    index: u64,
    /// Requests it sent in this run.
    sent: u64,
    /// Waiting to start its flow over (closed model), not to send a step.
    starting_over: bool,
}

pub(crate) struct FlowUsers {
    pub flow: Arc<Flow>,
    users: Vec<UserState>,
    runs: Vec<Run>,
    free: Vec<u32>,
    /// Users present: sending, waiting for an answer, or thinking.
    pub live: usize,
    waiting: BinaryHeap<Reverse<(u64, u32)>>,
    pub scratch: FlowScratch,
    /// Closed model: users this worker brought in (their numbers).
    created: u64,
    /// Runs whose first request was numbered (sent, or recorded as refused): the
    /// records with `seq & 0xffff == 0`, counted as they are made.
    pub starts: u64,
}

impl FlowUsers {
    pub(crate) fn new(flow: Arc<Flow>) -> FlowUsers {
        FlowUsers {
            scratch: flow.scratch(),
            flow,
            users: Vec::new(),
            runs: Vec::new(),
            free: Vec::new(),
            live: 0,
            waiting: BinaryHeap::new(),
            created: 0,
            starts: 0,
        }
    }

    /// The next thing due and when, given the plan's next start `next_k`; `None` when
    /// nothing is waiting and no user may start now.
    pub(crate) fn next_due(
        &self,
        plan: &Plan,
        next_k: u64,
        now: u64,
        split: Split,
    ) -> Option<(u64, Due)> {
        let waiting = self
            .waiting
            .peek()
            .map(|Reverse((due, user))| (*due, Due::Waiting(*user)));
        let new_user = match &plan.pacing {
            Pacing::Open(_) => plan.intended_ns(next_k).map(|t| (t, Due::NewUser)),
            Pacing::Closed { .. } => (plan.allows(next_k, now)
                && self.live < split.of(plan.users_at(now)))
            .then_some((now, Due::NewUser)),
        };
        match (waiting, new_user) {
            (Some(w), Some(n)) => Some(if n.0 < w.0 { n } else { w }),
            (w, n) => w.or(n),
        }
    }

    /// Whether no user will ever send again (no new ones may come).
    pub(crate) fn finished(&self, plan: &Plan, next_k: u64, now: u64) -> bool {
        let more_users = match &plan.pacing {
            Pacing::Open(_) => plan.intended_ns(next_k).is_some(),
            Pacing::Closed { .. } => plan.allows(next_k, now),
        };
        self.live == 0 && !more_users
    }

    /// Takes what is due: a new user, or a waiting one (which, starting its flow over,
    /// takes run `plan.global_index(next_k)`, or leaves when the plan allows no more
    /// runs). Returns the user to send, if any, and whether it took a run (a plan index).
    pub(crate) fn take(
        &mut self,
        due: Due,
        plan: &Plan,
        next_k: u64,
        now: u64,
        split: Split,
    ) -> (Option<u32>, bool) {
        let run = plan.global_index(next_k);
        match due {
            Due::NewUser => (self.add_user(plan, run, split), true),
            Due::Waiting(slot) if !self.runs[slot as usize].starting_over => {
                (self.take_waiting(slot, run), false)
            }
            Due::Waiting(slot) if plan.allows(next_k, now) => (self.take_waiting(slot, run), true),
            Due::Waiting(slot) => {
                self.waiting.pop();
                self.remove(slot);
                (None, false)
            }
        }
    }

    /// A new user for run `run` (a plan index): its slot, or `None` when its flow has
    /// no step it can send (the slot is given back).
    fn add_user(&mut self, plan: &Plan, run: u64, split: Split) -> Option<u32> {
        let number = match plan.pacing {
            Pacing::Open(_) => run,
            Pacing::Closed { .. } => {
                self.created += 1;
                plan.global_index((self.created - 1) * split.workers as u64 + split.index as u64)
            }
        };
        let slot = self.free.pop().unwrap_or_else(|| {
            self.users.push(UserState::default());
            self.runs.push(Run::default());
            (self.users.len() - 1) as u32
        });
        self.live += 1;
        let index = slot as usize;
        self.runs[index] = Run {
            index: run,
            sent: 0,
            starting_over: false,
        };
        if self.flow.start(&mut self.users[index], number).is_none() {
            self.remove(slot);
            return None;
        }
        Some(slot)
    }

    /// Takes waiting user `slot` off the heap (it is about to send); for a user
    /// starting over, starts its new run `run` first. `None` when its flow has no step
    /// it can send (it then leaves).
    fn take_waiting(&mut self, slot: u32, run: u64) -> Option<u32> {
        self.waiting.pop();
        let index = slot as usize;
        if self.runs[index].starting_over {
            self.runs[index] = Run {
                index: run,
                sent: 0,
                starting_over: false,
            };
            let number = self.users[index].number;
            if self.flow.start(&mut self.users[index], number).is_none() {
                self.remove(slot);
                return None;
            }
        }
        Some(slot)
    }

    /// The `seq` of the user's next request, counting it.
    pub(crate) fn next_seq(&mut self, slot: u32) -> u64 {
        let run = &mut self.runs[slot as usize];
        let seq = run.index.saturating_mul(REQUESTS_PER_RUN) + run.sent.min(REQUESTS_PER_RUN - 1);
        self.starts += u64::from(run.sent == 0);
        run.sent += 1;
        seq
    }

    pub(crate) fn user(&self, slot: u32) -> &UserState {
        &self.users[slot as usize]
    }

    /// The user, and the scratch its answers are judged with.
    pub(crate) fn user_and_scratch(
        &mut self,
        slot: u32,
    ) -> (&mut UserState, &mut FlowScratch, &Flow) {
        (
            &mut self.users[slot as usize],
            &mut self.scratch,
            &self.flow,
        )
    }

    /// The user sends its next step at `due_ns`.
    pub(crate) fn wait(&mut self, slot: u32, due_ns: u64) {
        self.waiting.push(Reverse((due_ns, slot)));
    }

    /// The user's run ended: closed model, it starts over at `again_ns` if users are
    /// still wanted; else it leaves.
    pub(crate) fn run_ended(&mut self, slot: u32, again_ns: Option<u64>) {
        match again_ns {
            Some(due) => {
                self.runs[slot as usize].starting_over = true;
                self.wait(slot, due);
            }
            None => self.remove(slot),
        }
    }

    fn remove(&mut self, slot: u32) {
        self.live -= 1;
        self.free.push(slot);
    }

    /// Forgets every waiting user (the plan is over); those sending finish.
    pub(crate) fn stop(&mut self) {
        while let Some(Reverse((_, slot))) = self.waiting.pop() {
            self.remove(slot);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use workload::{FlowOptions, Origin, Schedule, Shard, StepFields};

    fn flow() -> Arc<Flow> {
        let steps = [StepFields {
            request: Some("GET http://127.0.0.1:1/".to_owned()),
            ..StepFields::default()
        }];
        let origin = Origin::scenario("f.toml", 1, "f", std::path::Path::new("."));
        Arc::new(
            Flow::compile(&steps, FlowOptions::default(), &[], &origin, &|_| {
                Ok(Vec::new())
            })
            .unwrap(),
        )
    }

    fn plan(pacing: Pacing) -> Plan {
        Plan {
            pacing,
            duration_ns: Some(10_000_000_000),
            max_requests: None,
            shard: Shard::WHOLE,
        }
    }

    const ONE: Split = Split {
        index: 0,
        workers: 1,
    };

    #[test]
    fn open_model_starts_come_from_the_schedule_and_waiting_users_from_the_heap() {
        let plan = plan(Pacing::Open(Schedule::constant(10.0)));
        let mut users = FlowUsers::new(flow());
        assert_eq!(users.next_due(&plan, 0, 0, ONE), Some((0, Due::NewUser)));
        let (slot, took_run) = users.take(Due::NewUser, &plan, 0, 0, ONE);
        let slot = slot.unwrap();
        assert!(took_run);
        assert_eq!(
            (users.live, users.next_seq(slot), users.next_seq(slot)),
            (1, 0, 1)
        );
        users.wait(slot, 50_000_000);
        assert_eq!(
            users.next_due(&plan, 1, 0, ONE),
            Some((50_000_000, Due::Waiting(slot)))
        );
        assert_eq!(
            users.next_due(&plan, 0, 0, ONE),
            Some((0, Due::NewUser)),
            "the earlier wins"
        );
        let next_step = users.take(Due::Waiting(slot), &plan, 1, 0, ONE);
        assert_eq!(
            next_step,
            (Some(slot), false),
            "a step of its run takes no run"
        );
        users.run_ended(slot, None);
        assert_eq!(users.live, 0);
        assert!(!users.finished(&plan, 1, 0), "more starts to come");
        assert!(users.finished(&plan, 100, 0), "the schedule is over");
    }

    #[test]
    fn closed_model_users_start_over_and_keep_their_numbers() {
        let plan = plan(Pacing::Closed {
            users: Schedule::constant(2.0),
            think_ns: 0,
        });
        let split = Split {
            index: 1,
            workers: 2,
        };
        let mut users = FlowUsers::new(flow());
        assert_eq!(users.next_due(&plan, 1, 0, split), Some((0, Due::NewUser)));
        let slot = users.take(Due::NewUser, &plan, 1, 0, split).0.unwrap();
        assert_eq!(users.user(slot).number, 1, "worker 1's first user");
        assert_eq!(
            users.next_due(&plan, 3, 0, split),
            None,
            "its share is one user"
        );
        users.run_ended(slot, Some(7));
        assert_eq!(
            users.next_due(&plan, 3, 0, split),
            Some((7, Due::Waiting(slot)))
        );
        let again = users.take(Due::Waiting(slot), &plan, 3, 7, split);
        assert_eq!(again, (Some(slot), true), "starting over takes a run");
        assert_eq!(
            (users.user(slot).number, users.next_seq(slot)),
            (1, 3 << 16)
        );
        users.wait(slot, 9);
        users.stop();
        assert_eq!(users.live, 0);
        // With the plan's runs used up, a user starting over leaves instead.
        let bounded = Plan {
            max_requests: Some(2),
            ..plan
        };
        let slot = users.take(Due::NewUser, &bounded, 1, 0, split).0.unwrap();
        users.run_ended(slot, Some(1));
        assert_eq!(
            users.take(Due::Waiting(slot), &bounded, 3, 1, split),
            (None, false)
        );
        assert_eq!(users.live, 0);
    }

    #[test]
    fn a_run_counts_one_start_however_many_requests_it_sends() {
        let plan = plan(Pacing::Open(Schedule::constant(10.0)));
        let mut users = FlowUsers::new(flow());
        // (requests each run sends: a flow of 3 steps, one that stopped after its
        // first, a run past the requests numbered apart)
        let runs = [3u64, 1, REQUESTS_PER_RUN + 2];
        for (k, requests) in (0u64..).zip(runs) {
            let slot = users.take(Due::NewUser, &plan, k, 0, ONE).0.unwrap();
            let seqs: Vec<u64> = (0..requests).map(|_| users.next_seq(slot)).collect();
            let starts = seqs.iter().filter(|seq| *seq & 0xffff == 0).count() as u64;
            assert_eq!(starts, 1, "run {k}: one record starts it");
            assert_eq!(users.starts, k + 1, "run {k}");
            users.run_ended(slot, None);
        }
    }
}
