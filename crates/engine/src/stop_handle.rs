//! [`StopHandle`]: how a signal handler, a stop rule or a failing writer tells the
//! workers to stop. Workers sleep in epoll, so each registers an eventfd to be woken.

use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use rustix::event::{EventfdFlags, eventfd};

const RUNNING: u8 = 0;
const DRAINING: u8 = 1;
const ABORTING: u8 = 2;

/// Shared stop state. Cloning shares it.
#[derive(Clone, Default)]
pub struct StopHandle {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    level: AtomicU8,
    /// When the first stop was asked: what the plan asked for ends there.
    asked_at: OnceLock<Instant>,
    wakers: Mutex<Vec<Arc<OwnedFd>>>,
}

impl StopHandle {
    /// A handle of a run that is not stopping.
    pub fn new() -> StopHandle {
        StopHandle::default()
    }

    /// Stop sending; let requests in flight finish (up to their timeout).
    pub fn drain(&self) {
        self.raise(DRAINING);
    }

    /// Stop now; requests in flight are abandoned (used when the output is gone).
    pub fn abort(&self) {
        self.raise(ABORTING);
    }

    /// A drain or an abort was asked.
    pub fn is_stopping(&self) -> bool {
        self.inner.level.load(Ordering::Relaxed) != RUNNING
    }

    /// An abort was asked.
    pub fn is_aborting(&self) -> bool {
        self.inner.level.load(Ordering::Relaxed) == ABORTING
    }

    /// When the first stop was asked, if one was.
    pub(crate) fn asked_at(&self) -> Option<Instant> {
        self.inner.asked_at.get().copied()
    }

    fn raise(&self, level: u8) {
        self.inner.asked_at.get_or_init(Instant::now);
        self.inner.level.fetch_max(level, Ordering::SeqCst);
        let wakers = self
            .inner
            .wakers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for waker in wakers.iter() {
            // A full eventfd counter still wakes the reader; nothing to handle.
            let _ = rustix::io::write(waker.as_ref(), &1u64.to_ne_bytes());
        }
    }

    /// An eventfd that becomes readable when a stop is requested.
    pub(crate) fn waker(&self) -> std::io::Result<Arc<OwnedFd>> {
        let fd = Arc::new(eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)?);
        self.inner
            .wakers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(Arc::clone(&fd));
        if self.is_stopping() {
            let _ = rustix::io::write(fd.as_ref(), &1u64.to_ne_bytes());
        }
        Ok(fd)
    }
}
