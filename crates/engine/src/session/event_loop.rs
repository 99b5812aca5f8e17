//! The session loop: one thread per worker (made at its first session) running every
//! session the worker starts as a non-blocking state machine on an epoll. Sessions
//! come in over a channel (with an eventfd to wake the loop), their deadlines wait in
//! a heap, and each ended session's records go back to the worker ([`Reply`]).
//!
//! Sockets are registered edge-triggered, once: a session is driven at every event
//! and deadline of its own, and it always tries its read or write before it waits,
//! so no edge is lost between two drives.
//!
//! The loop keeps the workers' precision budget (`-precision`, [`Loop::pause`]): a
//! deadline sooner than the budget is let wait one budget, so one wake-up drives
//! every session due by then and reads every socket ready, instead of a wake-up each
//! (paced sends over many connections: a deadline every few microseconds). Nothing
//! is driven before its deadline, and a paced message sent late carries its due time.
//! What a session reads late is timed by when it reached the host (`Wire::arrived_ns`,
//! the kernel's receive stamp), so the budget's wait is not counted as the server's.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, TryRecvError, channel};
use std::time::Duration;

use rustix::event::epoll::Event;
use rustix::event::{EventfdFlags, eventfd};

use super::{Drive, Reply, STOP_LOOK_NS, Session, SessionDone, SessionJob};
use crate::clock::Clock;
use crate::poller::Poller;
use crate::stop_handle::StopHandle;

/// The poller's token of the loop's own eventfd (new jobs, or the worker gone).
const JOBS_TOKEN: u64 = u64::MAX;

/// The worker's handle on its session loop: dropping it lets the loop end once its
/// sessions have.
pub(crate) struct Runner {
    jobs: Option<Sender<SessionJob>>,
    waker: Arc<OwnedFd>,
    /// The loop's wake-ups so far.
    wakes: Arc<AtomicU64>,
}

impl Runner {
    /// Starts the loop thread, waking at most `precision_ns` late for a deadline
    /// (the workers' `-precision`); ended sessions report to `reply`.
    pub(crate) fn spawn(
        reply: Reply,
        clock: Clock,
        stop: StopHandle,
        precision_ns: u64,
    ) -> io::Result<Runner> {
        let waker = Arc::new(eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)?);
        let poller = Poller::new()?;
        poller.add_level_read(waker.as_ref(), JOBS_TOKEN)?;
        let (sender, jobs) = channel();
        let wakes = Arc::new(AtomicU64::new(0));
        let mut event_loop = Loop {
            poller,
            waker: Arc::clone(&waker),
            jobs,
            jobs_open: true,
            reply,
            clock,
            stop,
            slots: Vec::new(),
            free: Vec::new(),
            live: 0,
            stop_seen: false,
            deadlines: BinaryHeap::new(),
            precision_ns,
            wakes: Arc::clone(&wakes),
        };
        std::thread::Builder::new()
            .name("loadlab-sessions".to_owned())
            .spawn(move || event_loop.run())?;
        Ok(Runner {
            jobs: Some(sender),
            waker,
            wakes,
        })
    }

    /// The loop's wake-ups so far.
    pub(crate) fn wakes(&self) -> u64 {
        self.wakes.load(Ordering::Relaxed)
    }

    /// Hands `job` to the loop.
    pub(crate) fn submit(&self, job: SessionJob) -> io::Result<()> {
        let sent = self
            .jobs
            .as_ref()
            .is_some_and(|jobs| jobs.send(job).is_ok());
        if !sent {
            return Err(io::Error::other("the session loop has ended"));
        }
        wake(&self.waker);
        Ok(())
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        // Closing the channel first: the loop, woken, sees it gone.
        self.jobs = None;
        wake(&self.waker);
    }
}

fn wake(fd: &OwnedFd) {
    let _ = rustix::io::write(fd, &1u64.to_ne_bytes());
}

/// A session in its slot; `generation` tells a stale event or deadline from a live one.
struct Slot {
    generation: u32,
    session: Option<Session>,
    /// The deadline last put in the heap for it (`u64::MAX`: none).
    armed_ns: u64,
}

struct Loop {
    poller: Poller,
    waker: Arc<OwnedFd>,
    jobs: Receiver<SessionJob>,
    jobs_open: bool,
    reply: Reply,
    clock: Clock,
    stop: StopHandle,
    slots: Vec<Slot>,
    free: Vec<u32>,
    live: usize,
    /// The run's stop was seen (and every session driven once since).
    stop_seen: bool,
    /// (deadline, token) of the sessions waiting on a time; stale entries are skipped.
    deadlines: BinaryHeap<Reverse<(u64, u64)>>,
    /// How late a deadline may be driven, so one wake-up serves several.
    precision_ns: u64,
    wakes: Arc<AtomicU64>,
}

impl Loop {
    fn run(&mut self) {
        let mut events = Vec::with_capacity(1024);
        while self.jobs_open || self.live > 0 {
            let now = self.clock.now_ns();
            let next_ns = self.deadlines.peek().map_or(u64::MAX, |d| d.0.0);
            if self
                .pause(next_ns.saturating_sub(now), &mut events)
                .is_err()
            {
                // An epoll that fails cannot wait: drive every session to its end.
                self.stop.abort();
            }
            self.wakes.fetch_add(1, Ordering::Relaxed);
            for event in &events {
                let token = event.data.u64();
                if token == JOBS_TOKEN {
                    self.take_jobs();
                } else {
                    self.woken(token);
                }
            }
            let stopping = self.stop.is_stopping();
            if self.stop.is_aborting() || (stopping && !self.stop_seen) {
                // Each session sees the stop at its next drive: a hold or a stream
                // ends now, with its connection's entry marked open at the end; an
                // expect or a connect in progress goes on to its deadline, as a
                // request in flight does at a graceful stop.
                self.stop_seen = stopping;
                self.drive_all();
            } else {
                self.drive_due();
            }
        }
    }

    /// Waits until the next deadline, `wait_ns` away, or a socket's readiness. A
    /// deadline sooner than the budget (deadlines come faster than that: paced sends
    /// over many connections) is let wait one budget, as a worker lets a request
    /// (`Worker::pause`): the loop sleeps, not woken by readiness, until the budget
    /// after it, then takes every ready event at once, and the pass drives every
    /// session due by then. A session is then driven at most a budget late (a paced
    /// message carries its due time all the same) and a socket read at most a budget
    /// plus a deadline's wait late, never early. A deadline already past (the loop is
    /// behind) is not waited on.
    fn pause(&self, wait_ns: u64, events: &mut Vec<Event>) -> io::Result<()> {
        if (1..self.precision_ns).contains(&wait_ns) {
            std::thread::sleep(Duration::from_nanos(wait_ns + self.precision_ns));
            return self.poller.wait(events, Some(0));
        }
        self.poller.wait(events, Some(wait_ns.min(STOP_LOOK_NS)))
    }

    fn take_jobs(&mut self) {
        let mut counter = [0u8; 8];
        let _ = rustix::io::read(self.waker.as_ref(), &mut counter);
        loop {
            match self.jobs.try_recv() {
                Ok(job) => self.add(job),
                Err(TryRecvError::Empty) => return,
                Err(TryRecvError::Disconnected) => {
                    self.jobs_open = false;
                    return;
                }
            }
        }
    }

    fn add(&mut self, job: SessionJob) {
        let Some(session) = Session::start(job) else {
            return;
        };
        let index = self.free.pop().unwrap_or_else(|| {
            self.slots.push(Slot {
                generation: 0,
                session: None,
                armed_ns: u64::MAX,
            });
            (self.slots.len() - 1) as u32
        });
        let slot = &mut self.slots[index as usize];
        slot.generation = slot.generation.wrapping_add(1);
        slot.armed_ns = u64::MAX;
        let token = u64::from(index) | (u64::from(slot.generation) << 32);
        if let Some(fd) = session.fd() {
            // A socket that cannot be watched is driven by its deadlines only.
            let _ = self.poller.add(fd, token);
        }
        slot.session = Some(session);
        self.live += 1;
        self.drive(token);
    }

    /// Its socket is ready: the session reads again, and goes on.
    fn woken(&mut self, token: u64) {
        if let Some(session) = self.session(token) {
            session.readable();
            self.drive(token);
        }
    }

    /// The session `token` names, if it is still the one it named.
    fn session(&mut self, token: u64) -> Option<&mut Session> {
        let slot = self.slots.get_mut(token as u32 as usize)?;
        if slot.generation != (token >> 32) as u32 {
            return None;
        }
        slot.session.as_mut()
    }

    /// Drives the session of `token` if it is still the one that token named.
    fn drive(&mut self, token: u64) {
        let index = token as u32 as usize;
        let generation = (token >> 32) as u32;
        let Some(slot) = self.slots.get_mut(index) else {
            return;
        };
        if slot.generation != generation {
            return;
        }
        let Some(session) = slot.session.as_mut() else {
            return;
        };
        let drive = session.drive();
        if session.take_new_socket()
            && let Some(fd) = session.fd()
        {
            // A reconnect's socket; the old one left the epoll when it closed.
            let _ = self.poller.add(fd, token);
        }
        match drive {
            Drive::Wait(deadline_ns) => {
                if deadline_ns != slot.armed_ns && deadline_ns != u64::MAX {
                    self.deadlines.push(Reverse((deadline_ns, token)));
                }
                slot.armed_ns = deadline_ns;
            }
            Drive::Done(outcomes) => {
                let Some(mut session) = slot.session.take() else {
                    return;
                };
                self.free.push(index as u32);
                self.live -= 1;
                let held = session.take_held();
                let job = session.job();
                let done = SessionDone {
                    attack: job.attack,
                    user: job.user,
                    seq: job.seq,
                    intended_ns: job.intended_ns,
                    outcomes,
                    held,
                };
                // Dropping the session closes its socket (and leaves the epoll).
                drop(session);
                if self.reply.done.send(done).is_ok() {
                    wake(&self.reply.waker);
                }
            }
        }
    }

    /// Drives the sessions whose deadline has come.
    fn drive_due(&mut self) {
        let now = self.clock.now_ns();
        while let Some(&Reverse((deadline_ns, token))) = self.deadlines.peek() {
            if deadline_ns > now {
                return;
            }
            self.deadlines.pop();
            let index = token as u32 as usize;
            let current = self.slots.get(index).is_some_and(|slot| {
                slot.generation == (token >> 32) as u32 && slot.armed_ns == deadline_ns
            });
            if current {
                self.drive(token);
            }
        }
    }

    fn drive_all(&mut self) {
        let tokens: Vec<u64> = self
            .slots
            .iter()
            .enumerate()
            .filter(|(_, slot)| slot.session.is_some())
            .map(|(index, slot)| index as u64 | (u64::from(slot.generation) << 32))
            .collect();
        for token in tokens {
            self.drive(token);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::TcpListener;
    use std::time::{Duration, Instant};

    use record::ErrorKind;
    use workload::{ActionFields, Flow, FlowOptions, Origin, StepFields};

    use super::*;

    fn flow() -> Arc<Flow> {
        let steps = [StepFields {
            ws: Some("ws://127.0.0.1:1/".to_owned()),
            actions: vec![ActionFields {
                hold: Some("1s".to_owned()),
                ..ActionFields::default()
            }],
            ..StepFields::default()
        }];
        let origin = Origin::scenario("f.toml", 1, "f", std::path::Path::new("."));
        let compiled = Flow::compile(&steps, FlowOptions::default(), &[], &origin, &|_| {
            Ok(Vec::new())
        });
        Arc::new(compiled.unwrap())
    }

    /// Threads of this process named for the session loop (or, before it, a session).
    fn session_threads() -> usize {
        let tasks = std::fs::read_dir("/proc/self/task").unwrap();
        tasks
            .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
            .filter(|name| name.starts_with("loadlab-sessio"))
            .count()
    }

    /// The tests here run one at a time: one counts the process's loop threads.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// A session that connects to `address`, whose upgrade nobody answers, so it
    /// fails at its timeout: a deadline of its own.
    fn silent_job(
        address: std::net::SocketAddr,
        user: u32,
        timeout_ns: u64,
        (clock, stop): (Clock, &StopHandle),
    ) -> SessionJob {
        SessionJob {
            attack: 0,
            user,
            seq: u64::from(user),
            step: 0,
            flow: flow(),
            request: b"GET / HTTP/1.1\r\nHost: h\r\n\r\n".to_vec(),
            key: String::new(),
            sends: Vec::new(),
            address: crate::hosts::Address::Tcp(address),
            local_ip: None,
            tls: None,
            timeout_ns,
            intended_ns: clock.now_ns(),
            clock,
            stop: stop.clone(),
            tally: Arc::default(),
        }
    }

    /// A loop with a `precision_ns` budget, and where its ended sessions go.
    fn runner(
        clock: Clock,
        stop: &StopHandle,
        precision_ns: u64,
    ) -> (Runner, Receiver<SessionDone>) {
        let waker = Arc::new(eventfd(0, EventfdFlags::CLOEXEC).unwrap());
        let (done, finished) = channel();
        let reply = Reply { done, waker };
        let runner = Runner::spawn(reply, clock, stop.clone(), precision_ns).unwrap();
        (runner, finished)
    }

    /// How long a session waited for its upgrade's answer, checking it timed out.
    fn waited_ns(session: &SessionDone) -> u64 {
        let [connect] = &session.outcomes[..] else {
            panic!("{:?}", session.outcomes);
        };
        let (kind, text) = connect.failure.clone().unwrap();
        assert_eq!(kind, ErrorKind::Timeout, "{text}");
        connect.end_ns - connect.started_ns
    }

    #[test]
    fn many_sessions_wait_on_one_thread_and_each_ends_at_its_own_deadline() {
        let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        // The kernel completes the connects; nobody ever answers the upgrades.
        let silent = TcpListener::bind("127.0.0.1:0").unwrap();
        let (clock, stop) = (Clock::start(), StopHandle::new());
        let (runner, finished) = runner(clock, &stop, 0);
        let sessions = 100u32;
        for user in 0..sessions {
            // Deadlines from 200 ms to 299 ms: each must end at its own.
            let timeout_ns = 200_000_000 + u64::from(user) * 1_000_000;
            let job = silent_job(
                silent.local_addr().unwrap(),
                user,
                timeout_ns,
                (clock, &stop),
            );
            runner.submit(job).unwrap();
        }
        // A thread names itself once it runs: wait for the loop's name to show.
        let named = Instant::now();
        while session_threads() == 0 && named.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(session_threads(), 1, "one loop thread, not one per session");
        let started = Instant::now();
        for _ in 0..sessions {
            let session = finished.recv_timeout(Duration::from_secs(10)).unwrap();
            let waited_ns = waited_ns(&session);
            let timeout_ns = 200_000_000 + u64::from(session.user) * 1_000_000;
            assert!(
                (timeout_ns..timeout_ns + 150_000_000).contains(&waited_ns),
                "user {}: {waited_ns} ns for a {timeout_ns} ns timeout",
                session.user
            );
        }
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "they waited together"
        );
        drop(runner);
    }

    /// The loop's wake-ups while `sessions` deadlines 5 ms apart (from 300 ms) come
    /// due under a budget of `precision_ns`; each checked ended at its deadline or
    /// within the budget (and a margin for a loaded machine) after it, never before.
    fn wakes_for_deadlines(sessions: u32, precision_ns: u64) -> u64 {
        let silent = TcpListener::bind("127.0.0.1:0").unwrap();
        let (clock, stop) = (Clock::start(), StopHandle::new());
        let (runner, finished) = runner(clock, &stop, precision_ns);
        let timeout_ns = |user: u32| 300_000_000 + u64::from(user) * 5_000_000;
        for user in 0..sessions {
            let job = silent_job(
                silent.local_addr().unwrap(),
                user,
                timeout_ns(user),
                (clock, &stop),
            );
            runner.submit(job).unwrap();
        }
        // The connects and the upgrades' writes are done well before the first deadline.
        std::thread::sleep(Duration::from_millis(150));
        let before = runner.wakes();
        for _ in 0..sessions {
            let session = finished.recv_timeout(Duration::from_secs(10)).unwrap();
            let (waited_ns, due_ns) = (waited_ns(&session), timeout_ns(session.user));
            assert!(
                (due_ns..due_ns + precision_ns + 100_000_000).contains(&waited_ns),
                "user {}: driven after {waited_ns} ns, due at {due_ns} ns (budget {precision_ns} ns)",
                session.user
            );
        }
        let wakes = runner.wakes() - before;
        drop(runner);
        wakes
    }

    #[test]
    fn deadlines_within_the_budget_share_a_wake_up_and_none_is_driven_early() {
        let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        // 12 deadlines over 55 ms. Without a budget, a wake-up each; with 100 ms, the
        // first wakes the loop exactly and the rest, due within the budget, share the
        // next (a look for the stop may add one).
        let sessions = 12;
        let exact = wakes_for_deadlines(sessions, 0);
        assert!(
            exact >= u64::from(sessions) / 2,
            "{exact} wake-ups without a budget"
        );
        let budgeted = wakes_for_deadlines(sessions, 100_000_000);
        assert!(
            budgeted <= 4,
            "{budgeted} wake-ups for {sessions} deadlines within the budget"
        );
    }
}
