//! [`ClockAnchor`]: one instant on the monotonic clock paired with its wall-clock time,
//! so samples land on the same unix-nanosecond axis as the records of a run.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A monotonic instant and the unix time (ns) it stands for. An attack passes its own
/// time zero (`start_unix_ns` and the `Instant` it was taken at), so sample times and
/// record times agree exactly; a standalone monitor anchors at its start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockAnchor {
    /// The monotonic instant of the anchor.
    pub instant: Instant,
    /// The unix time, in nanoseconds, that `instant` stands for.
    pub unix_ns: u64,
}

impl ClockAnchor {
    /// An anchor pairing `instant` with `unix_ns`.
    pub fn new(instant: Instant, unix_ns: u64) -> ClockAnchor {
        ClockAnchor { instant, unix_ns }
    }

    /// Now, on both clocks.
    pub fn now() -> ClockAnchor {
        let instant = Instant::now();
        ClockAnchor {
            instant,
            unix_ns: system_unix_ns(),
        }
    }

    /// The unix time of `instant` on this anchor's axis.
    pub fn unix_ns_at(&self, instant: Instant) -> u64 {
        if instant >= self.instant {
            self.unix_ns
                .saturating_add(nanos(instant.duration_since(self.instant)))
        } else {
            self.unix_ns
                .saturating_sub(nanos(self.instant.duration_since(instant)))
        }
    }

    /// The `index`-th tick of a grid of `interval` starting at the anchor.
    pub(crate) fn tick(&self, index: u64, interval: Duration) -> Instant {
        let offset = interval.saturating_mul(u32::try_from(index).unwrap_or(u32::MAX));
        self.instant + offset
    }

    /// The index of the first tick at or after `instant`.
    pub(crate) fn next_tick_index(&self, instant: Instant, interval: Duration) -> u64 {
        let elapsed = nanos(instant.saturating_duration_since(self.instant));
        let step = nanos(interval).max(1);
        elapsed.div_ceil(step)
    }
}

/// The wall clock in unix nanoseconds (0 before 1970, which no real clock reads).
pub(crate) fn system_unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, nanos)
}

pub(crate) fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_instants_and_ticks() {
        let anchor = ClockAnchor::new(Instant::now(), 1_000_000_000_000);
        let later = anchor.instant + Duration::from_millis(1500);
        assert_eq!(anchor.unix_ns_at(later), 1_001_500_000_000);
        assert_eq!(anchor.unix_ns_at(anchor.instant), anchor.unix_ns);
        let second = Duration::from_secs(1);
        let rows: &[(u64, u64)] = &[
            (0, 0),
            (1, 1),
            (999_999_999, 1),
            (1_000_000_000, 1),
            (1_000_000_001, 2),
        ];
        for &(offset_ns, want) in rows {
            let at = anchor.instant + Duration::from_nanos(offset_ns);
            assert_eq!(anchor.next_tick_index(at, second), want, "{offset_ns}");
        }
        assert_eq!(
            anchor.tick(3, second),
            anchor.instant + Duration::from_secs(3)
        );
    }
}
