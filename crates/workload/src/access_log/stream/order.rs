//! Putting one log's requests in time order: [`Reorder`] sorts lines written out of
//! order within a bounded window, and [`Spread`] spreads the requests that share a
//! coarse timestamp over its interval.
//!
//! Servers log a request when it completes, so a slow request's line comes after
//! quicker ones that arrived later. [`Reorder`] holds requests keyed by time, then
//! arrival, and lets one go once the newest time seen is a window past it: memory is
//! the requests of one window (rate x window), never the file. Most lines come in
//! order: those queue in a FIFO, and only the others go through a min-heap (whose
//! sifting moved whole requests: a quarter of a survey's CPU when all went there).

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};
use std::time::Duration;

use units::GoDuration;

use super::LogStats;
use crate::{LoggedRequest, WorkloadError};

/// A time-ordering window over one log's requests.
pub(super) struct Reorder {
    window_ns: u64,
    /// Requests that came in time order (each no older than the one before).
    in_order: VecDeque<Held>,
    /// The others.
    heap: BinaryHeap<Reverse<Held>>,
    /// The newest time read so far.
    newest_ns: Option<u64>,
    /// The time of the last request given out: nothing older may come after it.
    last_out_ns: Option<u64>,
    next_arrival: u64,
}

/// A held request, ordered by time, then arrival.
struct Held {
    time_unix_ns: u64,
    arrival: u64,
    request: LoggedRequest,
}

impl Held {
    fn key(&self) -> (u64, u64) {
        (self.time_unix_ns, self.arrival)
    }
}

impl PartialEq for Held {
    fn eq(&self, other: &Held) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Held {}

impl PartialOrd for Held {
    fn partial_cmp(&self, other: &Held) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Held {
    fn cmp(&self, other: &Held) -> Ordering {
        self.key().cmp(&other.key())
    }
}

impl Reorder {
    pub fn new(window_ns: u64) -> Reorder {
        Reorder {
            window_ns,
            in_order: VecDeque::new(),
            heap: BinaryHeap::new(),
            newest_ns: None,
            last_out_ns: None,
            next_arrival: 0,
        }
    }

    /// Takes a request in; an error when it comes further back than the window
    /// allows: older than a request already given out, or more than the window older
    /// than the newest read (checked from the first line: before anything has gone
    /// out, such a line would go first and the rest wait out the gap).
    pub fn push(
        &mut self,
        mut request: LoggedRequest,
        name: &str,
        stats: &mut LogStats,
    ) -> Result<(), WorkloadError> {
        let time_ns = request.time_unix_ns;
        if let Some(newest_ns) = self.newest_ns.filter(|&newest| time_ns < newest) {
            if newest_ns - time_ns > self.window_ns
                || self.last_out_ns.is_some_and(|out| time_ns < out)
            {
                return Err(self.too_late(&request, newest_ns, name));
            }
            stats.reordered += 1;
            stats.max_reorder_ns = stats.max_reorder_ns.max(newest_ns - time_ns);
        }
        request.put_back_ns = self.newest_ns.map_or(0, |n| n.saturating_sub(time_ns));
        self.newest_ns = Some(self.newest_ns.map_or(time_ns, |n| n.max(time_ns)));
        let held = Held {
            time_unix_ns: time_ns,
            arrival: self.next_arrival,
            request,
        };
        self.next_arrival += 1;
        match self.in_order.back() {
            Some(last) if time_ns < last.time_unix_ns => self.heap.push(Reverse(held)),
            _ => self.in_order.push_back(held),
        }
        Ok(())
    }

    /// The key of the oldest request held, and whether it is in the FIFO.
    fn oldest(&self) -> Option<((u64, u64), bool)> {
        let fifo = self.in_order.front().map(Held::key);
        let heap = self.heap.peek().map(|held| held.0.key());
        match (fifo, heap) {
            (Some(f), Some(h)) => Some(if f <= h { (f, true) } else { (h, false) }),
            (Some(f), None) => Some((f, true)),
            (None, Some(h)) => Some((h, false)),
            (None, None) => None,
        }
    }

    /// The oldest request once the newest time seen is a window past it.
    pub fn pop_ready(&mut self) -> Option<LoggedRequest> {
        let newest_ns = self.newest_ns?;
        let ((oldest_ns, _), _) = self.oldest()?;
        if oldest_ns.saturating_add(self.window_ns) > newest_ns {
            return None;
        }
        self.pop_any()
    }

    /// The oldest request held, ready or not (at the end of the log).
    pub fn pop_any(&mut self) -> Option<LoggedRequest> {
        let held = match self.oldest()? {
            (_, true) => self.in_order.pop_front()?,
            (_, false) => self.heap.pop()?.0,
        };
        self.last_out_ns = Some(held.time_unix_ns);
        Some(held.request)
    }

    /// Requests held.
    pub fn held(&self) -> usize {
        self.in_order.len() + self.heap.len()
    }

    fn too_late(&self, request: &LoggedRequest, newest_ns: u64, name: &str) -> WorkloadError {
        let back_ns = newest_ns - request.time_unix_ns;
        WorkloadError::Target {
            source_name: name.to_owned(),
            line: request.line,
            reason: format!(
                "timestamps go backwards by {} ({} after {}), beyond the {} reorder window; \
                 raise -reorder-window",
                GoDuration(Duration::from_nanos(back_ns)),
                time_text(request.time_unix_ns),
                time_text(newest_ns),
                GoDuration(Duration::from_nanos(self.window_ns)),
            ),
        }
    }
}

/// A unix time in RFC 3339, UTC.
pub fn time_text(time_unix_ns: u64) -> String {
    jiff::Timestamp::from_nanosecond(i128::from(time_unix_ns))
        .map_or_else(|_| format!("{time_unix_ns} ns"), |t| t.to_string())
}

/// The most requests of one timestamp held to be spread: past it, the rest of that
/// timestamp's requests go at their logged time (no format logs this many in one
/// interval of its resolution outside of a pathological file).
pub(super) const MAX_SPREAD_GROUP: usize = 100_000;

/// Spreads the requests that share a timestamp evenly over the format's resolution:
/// nginx's `$time_local` logs whole seconds, and a replay should not send each
/// second's requests in one burst. n requests at time T go at T + i x interval / n,
/// where the interval is the resolution, or the gap to the next timestamp when that
/// is shorter (so the order holds for formats whose times are not on the grid).
///
/// Look-ahead: one timestamp's requests (at most [`MAX_SPREAD_GROUP`]) and the first
/// request of the next.
pub(super) struct Spread {
    resolution_ns: u64,
    /// Requests of one timestamp, in order.
    group: Vec<LoggedRequest>,
    /// Spread requests ready to go.
    ready: VecDeque<LoggedRequest>,
}

impl Spread {
    pub fn new(resolution_ns: u64) -> Spread {
        Spread {
            resolution_ns: resolution_ns.max(1),
            group: Vec::new(),
            ready: VecDeque::new(),
        }
    }

    /// Takes the next request in time order.
    pub fn push(&mut self, request: LoggedRequest) {
        let group_ns = self.group.first().map(|first| first.time_unix_ns);
        if group_ns.is_some_and(|t| t != request.time_unix_ns) {
            self.release(Some(request.time_unix_ns));
        } else if self.group.len() >= MAX_SPREAD_GROUP {
            self.ready.extend(self.group.drain(..));
        }
        self.group.push(request);
    }

    /// The input ended: the last group is released; whether any request is ready.
    pub fn finish(&mut self) -> bool {
        self.release(None);
        !self.ready.is_empty()
    }

    pub fn pop(&mut self) -> Option<LoggedRequest> {
        self.ready.pop_front()
    }

    /// Requests held.
    pub fn held(&self) -> usize {
        self.group.len() + self.ready.len()
    }

    /// Spreads the group over its interval, up to `next_ns` when that comes sooner.
    fn release(&mut self, next_ns: Option<u64>) {
        let Some(start_ns) = self.group.first().map(|first| first.time_unix_ns) else {
            return;
        };
        let interval_ns = next_ns.map_or(self.resolution_ns, |next| {
            self.resolution_ns.min(next.saturating_sub(start_ns))
        });
        let count = self.group.len() as u128;
        for (i, mut request) in self.group.drain(..).enumerate() {
            let offset_ns = u128::from(interval_ns) * i as u128 / count;
            let offset_ns = u64::try_from(offset_ns).unwrap_or(interval_ns);
            request.time_unix_ns = start_ns.saturating_add(offset_ns);
            self.ready.push_back(request);
        }
    }
}
