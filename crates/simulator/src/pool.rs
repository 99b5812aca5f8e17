//! The capacity model: a worker pool of `workers`, `overflow` extra workers made on
//! demand, and a FIFO queue of `queue` requests that wait up to `queue_timeout`.
//! poolboy's shape, as in the Belfrage "fixed pool vs overflow" experiment.
//!
//! A request holds a worker for its service time (the stage latency), so with `W`
//! workers and a mean service time `S` the route serves at most `W / S` requests per
//! second: the ground truth a capacity search is checked against.
//!
//! The pool is shared by every server thread. Taking and returning a worker is one
//! compare-and-swap on `busy` while nobody queues; the queue's mutex is touched only
//! when the pool is full (the modelled system is saturated then anyway), and a returned
//! worker is handed straight to the oldest waiter so waiters are served in order.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::oneshot;

/// Why a request got no worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rejection {
    /// Pool, overflow and queue were all full on arrival.
    Full,
    /// The request queued but no worker came within `queue_timeout`.
    Timeout,
}

struct Waiter {
    id: u64,
    /// Sends whether the handed-over worker is an overflow worker.
    grant: oneshot::Sender<bool>,
}

#[derive(Default)]
struct Queue {
    waiters: VecDeque<Waiter>,
    next_id: u64,
}

pub(crate) struct Pool {
    workers: usize,
    /// `workers + overflow`.
    limit: usize,
    queue_limit: usize,
    queue_timeout: Duration,
    busy: AtomicUsize,
    /// Requests in the queue (or about to enter it); read without the lock on release.
    waiting: AtomicUsize,
    queue: Mutex<Queue>,
    rejected_full: AtomicU64,
    rejected_timeout: AtomicU64,
}

/// A worker held by one request; returned to the pool on drop.
pub(crate) struct Permit<'a> {
    pool: &'a Pool,
    /// True when this is an overflow worker (beyond the fixed pool).
    pub overflow: bool,
}

/// Gauges and counters for `/metrics`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PoolStats {
    pub workers: usize,
    pub busy: usize,
    /// Overflow workers: the pool's size beyond `workers`.
    pub overflow_workers: usize,
    pub overflow_busy: usize,
    pub queued: usize,
    pub rejected_full: u64,
    pub rejected_timeout: u64,
}

impl Pool {
    pub fn new(
        workers: usize,
        overflow: usize,
        queue_limit: usize,
        queue_timeout: Duration,
    ) -> Self {
        Self {
            workers,
            limit: workers + overflow,
            queue_limit,
            queue_timeout,
            busy: AtomicUsize::new(0),
            waiting: AtomicUsize::new(0),
            queue: Mutex::new(Queue::default()),
            rejected_full: AtomicU64::new(0),
            rejected_timeout: AtomicU64::new(0),
        }
    }

    /// Takes a worker, queueing if the pool is full and the queue has room.
    pub async fn acquire(&self) -> Result<Permit<'_>, Rejection> {
        if self.waiting.load(SeqCst) == 0
            && let Some(overflow) = self.try_take()
        {
            return Ok(Permit {
                pool: self,
                overflow,
            });
        }
        self.acquire_slow().await
    }

    /// One CAS loop on `busy`; `Some(overflow)` on success.
    fn try_take(&self) -> Option<bool> {
        let mut current = self.busy.load(SeqCst);
        while current < self.limit {
            match self
                .busy
                .compare_exchange_weak(current, current + 1, SeqCst, SeqCst)
            {
                Ok(_) => return Some(current >= self.workers),
                Err(actual) => current = actual,
            }
        }
        None
    }

    async fn acquire_slow(&self) -> Result<Permit<'_>, Rejection> {
        let (id, mut receiver) = {
            let mut queue = self.lock();
            // Announce ourselves before the last look at `busy`, so a release that
            // misses us in `waiting` must have freed a worker we then see.
            self.waiting.fetch_add(1, SeqCst);
            if queue.waiters.is_empty()
                && let Some(overflow) = self.try_take()
            {
                self.waiting.fetch_sub(1, SeqCst);
                return Ok(Permit {
                    pool: self,
                    overflow,
                });
            }
            if queue.waiters.len() >= self.queue_limit {
                self.waiting.fetch_sub(1, SeqCst);
                self.rejected_full.fetch_add(1, SeqCst);
                return Err(Rejection::Full);
            }
            let (grant, receiver) = oneshot::channel();
            queue.next_id += 1;
            let id = queue.next_id;
            queue.waiters.push_back(Waiter { id, grant });
            (id, receiver)
        };
        if let Ok(Ok(overflow)) = tokio::time::timeout(self.queue_timeout, &mut receiver).await {
            return Ok(Permit {
                pool: self,
                overflow,
            });
        }
        self.give_up(id, &mut receiver)
    }

    /// After a timeout: leave the queue, unless a worker was handed over meanwhile.
    fn give_up(
        &self,
        id: u64,
        receiver: &mut oneshot::Receiver<bool>,
    ) -> Result<Permit<'_>, Rejection> {
        let mut queue = self.lock();
        if let Some(at) = queue.waiters.iter().position(|w| w.id == id) {
            queue.waiters.remove(at);
            self.waiting.fetch_sub(1, SeqCst);
        } else if let Ok(overflow) = receiver.try_recv() {
            // Granted just as the timer fired: the worker is ours, so use it.
            return Ok(Permit {
                pool: self,
                overflow,
            });
        }
        self.rejected_timeout.fetch_add(1, SeqCst);
        Err(Rejection::Timeout)
    }

    fn release(&self, overflow: bool) {
        if self.waiting.load(SeqCst) > 0 && self.hand_over(overflow) {
            return;
        }
        self.busy.fetch_sub(1, SeqCst);
        if self.waiting.load(SeqCst) > 0 {
            self.fill_from_queue();
        }
    }

    /// Gives the returning worker to the oldest live waiter; false if none took it.
    fn hand_over(&self, overflow: bool) -> bool {
        let mut queue = self.lock();
        while let Some(waiter) = queue.waiters.pop_front() {
            self.waiting.fetch_sub(1, SeqCst);
            if waiter.grant.send(overflow).is_ok() {
                return true;
            }
        }
        false
    }

    /// Serves waiters with free workers (a worker freed while a waiter was enqueueing).
    fn fill_from_queue(&self) {
        let mut queue = self.lock();
        while !queue.waiters.is_empty() {
            let Some(overflow) = self.try_take() else {
                break;
            };
            let Some(waiter) = queue.waiters.pop_front() else {
                break;
            };
            self.waiting.fetch_sub(1, SeqCst);
            if waiter.grant.send(overflow).is_err() {
                self.busy.fetch_sub(1, SeqCst);
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        // Nothing under this lock can panic halfway; a poisoned lock is still consistent.
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn stats(&self) -> PoolStats {
        let busy = self.busy.load(SeqCst);
        PoolStats {
            workers: self.workers,
            busy: busy.min(self.workers),
            overflow_workers: self.limit - self.workers,
            overflow_busy: busy.saturating_sub(self.workers),
            queued: self.waiting.load(SeqCst),
            rejected_full: self.rejected_full.load(SeqCst),
            rejected_timeout: self.rejected_timeout.load(SeqCst),
        }
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        self.pool.release(self.overflow);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
    }

    #[test]
    fn fixed_pool_rejects_when_full_and_recovers() {
        runtime().block_on(async {
            let pool = Pool::new(2, 0, 0, Duration::from_secs(1));
            let a = pool.acquire().await.unwrap();
            let b = pool.acquire().await.unwrap();
            assert!(!a.overflow && !b.overflow);
            assert_eq!(pool.acquire().await.err(), Some(Rejection::Full));
            assert_eq!(pool.stats().busy, 2);
            drop(a);
            let c = pool.acquire().await.unwrap();
            drop((b, c));
            let stats = pool.stats();
            assert_eq!((stats.busy, stats.queued, stats.rejected_full), (0, 0, 1));
        });
    }

    #[test]
    fn overflow_workers_are_marked() {
        runtime().block_on(async {
            let pool = Pool::new(1, 1, 0, Duration::ZERO);
            let fixed = pool.acquire().await.unwrap();
            let extra = pool.acquire().await.unwrap();
            assert!(!fixed.overflow && extra.overflow);
            assert_eq!(pool.stats().overflow_busy, 1);
            assert!(pool.acquire().await.is_err());
        });
    }

    #[test]
    fn queue_hands_over_in_order_and_times_out() {
        runtime().block_on(async {
            let pool = Arc::new(Pool::new(1, 0, 1, Duration::from_millis(300)));
            let held = pool.acquire().await.unwrap();
            let waiter = {
                let pool = Arc::clone(&pool);
                tokio::spawn(async move { pool.acquire().await.map(|p| p.overflow).is_ok() })
            };
            tokio::time::sleep(Duration::from_millis(20)).await;
            assert_eq!(pool.stats().queued, 1);
            // Queue full: a third request is turned away at once.
            assert_eq!(pool.acquire().await.err(), Some(Rejection::Full));
            drop(held);
            assert!(
                waiter.await.unwrap(),
                "the queued request gets the returned worker"
            );

            let held = pool.acquire().await.unwrap();
            let started = tokio::time::Instant::now();
            assert_eq!(pool.acquire().await.err(), Some(Rejection::Timeout));
            assert!(started.elapsed() >= Duration::from_millis(300));
            drop(held);
            let stats = pool.stats();
            assert_eq!(
                (stats.busy, stats.queued, stats.rejected_timeout),
                (0, 0, 1)
            );
        });
    }

    /// Many threads, each with its own runtime as in the server: the pool never hands
    /// out more than its limit and ends empty.
    #[test]
    fn never_exceeds_limit_across_threads() {
        let pool = Arc::new(Pool::new(3, 1, 8, Duration::from_millis(200)));
        let peak = Arc::new(AtomicUsize::new(0));
        let in_use = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (pool, peak, in_use) =
                    (Arc::clone(&pool), Arc::clone(&peak), Arc::clone(&in_use));
                std::thread::spawn(move || {
                    runtime().block_on(async move {
                        let mut served = 0;
                        for _ in 0..200 {
                            if let Ok(permit) = pool.acquire().await {
                                let now = in_use.fetch_add(1, SeqCst) + 1;
                                peak.fetch_max(now, SeqCst);
                                tokio::task::yield_now().await;
                                in_use.fetch_sub(1, SeqCst);
                                drop(permit);
                                served += 1;
                            }
                        }
                        served
                    })
                })
            })
            .collect();
        let served: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
        assert!(served > 0);
        assert!(peak.load(SeqCst) <= 4, "peak {}", peak.load(SeqCst));
        let stats = pool.stats();
        assert_eq!((stats.busy, stats.overflow_busy, stats.queued), (0, 0, 0));
    }
}
