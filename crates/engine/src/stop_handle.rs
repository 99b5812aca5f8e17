//! [`StopHandle`]: how a signal handler, a stop rule, a failing writer or a coordinator
//! tells the workers to stop. Workers sleep in epoll, so each registers an eventfd to
//! be woken.
//!
//! A shard steered by a coordinator (`attack -steer`) also hears through it that the
//! coordinator is in contact: while it is, the shard's own stop rules wait, since the
//! coordinator judges them on every shard's figures together; once it has been silent
//! for [`STEER_SILENCE`], the shard judges its own again.

use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use rustix::event::{EventfdFlags, eventfd};

const RUNNING: u8 = 0;
const DRAINING: u8 = 1;
const ABORTING: u8 = 2;

/// A coordinator silent this long is taken as gone: the shard's own rules apply again.
pub const STEER_SILENCE: Duration = Duration::from_secs(3);

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
    /// Why the stop was asked, when the asker said (a coordinator's rule).
    detail: OnceLock<String>,
    /// The coordinator's last contact, in ns after `epoch` (0: never).
    steered_ns: AtomicU64,
    epoch: OnceLock<Instant>,
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

    /// Drain, saying why: the run ends as stopped by a rule, with `detail` as its
    /// reason (a coordinator's rule that fired on every shard's figures).
    pub fn drain_because(&self, detail: String) {
        let _ = self.inner.detail.set(detail);
        self.drain();
    }

    /// What [`StopHandle::drain_because`] said, if it was called first.
    pub fn detail(&self) -> Option<&str> {
        self.inner.detail.get().map(String::as_str)
    }

    /// A coordinator is in contact now: the local stop rules wait.
    pub fn steered(&self) {
        let nanos = self.since_epoch().as_nanos().max(1);
        self.inner
            .steered_ns
            .store(u64::try_from(nanos).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    /// Whether a coordinator was in contact within [`STEER_SILENCE`].
    pub fn is_steered(&self) -> bool {
        let last = self.inner.steered_ns.load(Ordering::Relaxed);
        last != 0
            && self
                .since_epoch()
                .saturating_sub(Duration::from_nanos(last))
                < STEER_SILENCE
    }

    fn since_epoch(&self) -> Duration {
        self.inner.epoch.get_or_init(Instant::now).elapsed()
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
