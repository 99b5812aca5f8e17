//! What a sampler thread is given and must do: the [`Sampler`] trait (one reading per
//! [`Tick`]), the [`Stop`] every thread of a monitor watches, and the [`ThreadContext`]
//! they share. The samplers (`host`, `process`, `prom`, `pg`, the agent client) import
//! it; `runner.rs` starts and drives them.

use std::net::TcpStream;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::clock::ClockAnchor;
use crate::hub::Reading;

/// One reading per tick (the agent client streams instead: see `agent.rs`).
pub(crate) trait Sampler: Send {
    /// What the thread is called (`loadlab-mon-host`).
    fn thread_name(&self) -> String;
    /// Reads once; must return by `tick.deadline` (or close to it).
    fn sample(&mut self, tick: &Tick, out: &mut Vec<Reading>);
}

/// The moment a sampler runs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tick {
    pub now: Instant,
    pub at_unix_ns: u64,
}

/// Shared by every thread of one monitor: the stop flag and sockets to shut on stop.
#[derive(Default)]
pub(crate) struct Stop {
    stopped: Mutex<bool>,
    wake: Condvar,
    sockets: Mutex<Vec<TcpStream>>,
}

impl Stop {
    /// Sleeps until `deadline`; true when the monitor was stopped instead.
    pub(crate) fn wait_until(&self, deadline: Instant) -> bool {
        let mut stopped = self.stopped.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if *stopped {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            stopped = self
                .wake
                .wait_timeout(stopped, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    pub(crate) fn is_stopped(&self) -> bool {
        *self.stopped.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A socket to shut down on stop, so a thread blocked reading it wakes up.
    pub(crate) fn watch_socket(&self, socket: &TcpStream) {
        if let Ok(clone) = socket.try_clone() {
            self.sockets
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(clone);
        }
    }

    pub(crate) fn stop(&self) {
        *self.stopped.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.wake.notify_all();
        for socket in self
            .sockets
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain(..)
        {
            let _ = socket.shutdown(std::net::Shutdown::Both);
        }
    }
}

/// What every sampler thread shares.
#[derive(Clone)]
pub(crate) struct ThreadContext {
    pub anchor: ClockAnchor,
    pub interval: Duration,
    pub stop: Arc<Stop>,
    pub readings: Sender<Reading>,
}
