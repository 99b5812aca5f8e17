//! [`Clock`]: the run's one time base. Offsets are monotonic nanoseconds since time
//! zero; `start_unix_ns` ties them to the wall clock for the record file.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// The run's time zero, on the monotonic clock and on the wall clock.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    start: Instant,
    start_unix_ns: u64,
}

impl Clock {
    /// Time zero is now.
    pub fn start() -> Clock {
        let start_unix_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        Clock {
            start: Instant::now(),
            start_unix_ns,
        }
    }

    /// Time zero at `start` on the monotonic clock, which is `start_unix_ns` on the
    /// wall clock (`-start-at`: an instant asked for, not the one observed).
    pub fn at(start: Instant, start_unix_ns: u64) -> Clock {
        Clock {
            start,
            start_unix_ns,
        }
    }

    /// Nanoseconds since time zero.
    #[inline]
    pub fn now_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    /// The offset of `instant` (0 if it came before time zero).
    pub fn offset_ns(&self, instant: Instant) -> u64 {
        instant.saturating_duration_since(self.start).as_nanos() as u64
    }

    /// Wall-clock unix nanoseconds of an offset.
    #[inline]
    pub fn unix_ns(&self, offset_ns: u64) -> u64 {
        self.start_unix_ns + offset_ns
    }

    /// Wall-clock unix seconds of an offset (cookies' expiry is in seconds).
    pub(crate) fn unix_s(&self, offset_ns: u64) -> i64 {
        (self.unix_ns(offset_ns) / 1_000_000_000) as i64
    }

    /// Wall-clock unix nanoseconds of time zero.
    pub fn start_unix_ns(&self) -> u64 {
        self.start_unix_ns
    }

    /// Time zero on the monotonic clock, for others who time things on this axis.
    pub fn start_instant(&self) -> Instant {
        self.start
    }
}
