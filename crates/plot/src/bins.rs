//! [`Bins`]: per-interval rows (1 s by default) on the page's time axis, filled in one
//! pass over records in send-time order.
//!
//! A row counts the requests *sent* in it (by status), the successful ones *completed*
//! in it, the requests the schedule *asked* for in it (by intended send time, for
//! schedules the header does not give a constant rate for), and the latency and send
//! lag percentiles of the requests sent in it. Percentiles need the values, so only the
//! interval being filled holds a [`Distribution`]; it closes when a later record
//! arrives. Rows are a few dozen bytes per interval of the run, never per request.

use report::Distribution;

/// What a row says about the status of requests: an HTTP status, or for transport
/// errors (status 0) the error kind (`TRANSPORT + kind index`).
pub type StatusKey = u32;
/// Status keys at or above this are transport errors; the rest are HTTP statuses.
pub const TRANSPORT: StatusKey = 1 << 16;

/// One interval.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Row {
    /// Interval number from the time origin.
    pub index: u64,
    pub sent: u64,
    /// Successful responses completed in this interval (whenever they were sent).
    pub ok_done: u64,
    /// Requests whose intended send time falls in this interval (counted only for
    /// attacks whose asked rate is not a constant).
    pub asked: u64,
    /// Requests sent, by status key, in order of first sight.
    pub statuses: Vec<(StatusKey, u64)>,
    /// p50, p90, p99 and max latency of the requests sent in the interval.
    pub latency_ns: Option<[u64; 4]>,
    /// p99 and max send lag of the requests sent in the interval.
    pub send_lag_ns: Option<[u64; 2]>,
}

#[derive(Clone)]
struct OpenInterval {
    index: u64,
    latency: Distribution,
    send_lag: Distribution,
}

/// The rows; see the module documentation.
#[derive(Clone)]
pub struct Bins {
    every_ns: u64,
    /// Sorted by index; only intervals something happened in.
    rows: Vec<Row>,
    open: Option<OpenInterval>,
}

impl Bins {
    pub fn new(every_ns: u64) -> Bins {
        Bins {
            every_ns: every_ns.max(1),
            rows: Vec::new(),
            open: None,
        }
    }

    pub fn every_ns(&self) -> u64 {
        self.every_ns
    }

    /// Adds one request. Times are nanoseconds from the origin; `intended_ns` is `None`
    /// when the attack's asked rate is known otherwise.
    #[inline]
    pub fn add(&mut self, request: &BinnedRequest) {
        let index = request.sent_ns / self.every_ns;
        let open = self.open_interval(index);
        open.latency.add(request.latency_ns);
        open.send_lag.add(request.send_lag_ns);
        let open_index = open.index;
        let row = self.row(open_index);
        row.sent += 1;
        match row
            .statuses
            .iter_mut()
            .find(|(key, _)| *key == request.status)
        {
            Some((_, count)) => *count += 1,
            None => row.statuses.push((request.status, 1)),
        }
        if request.success {
            let done = request.sent_ns.saturating_add(request.latency_ns) / self.every_ns;
            self.row(done).ok_done += 1;
        }
        if let Some(intended_ns) = request.intended_ns {
            self.row(intended_ns / self.every_ns).asked += 1;
        }
    }

    /// The interval being filled, closing the previous one when `index` is later.
    /// Records that arrive late (out of send order) join the open interval.
    fn open_interval(&mut self, index: u64) -> &mut OpenInterval {
        if self.open.as_ref().is_some_and(|open| open.index < index) {
            self.close_open();
        }
        self.open.get_or_insert_with(|| OpenInterval {
            index,
            latency: Distribution::new(),
            send_lag: Distribution::new(),
        })
    }

    fn close_open(&mut self) {
        let Some(open) = self.open.take() else {
            return;
        };
        let max_latency = open.latency.max();
        let max_lag = open.send_lag.max();
        let latency = open.latency.into_quantiles();
        let lag = open.send_lag.into_quantiles();
        let row = self.row(open.index);
        row.latency_ns = Some([
            latency.quantile(0.50),
            latency.quantile(0.90),
            latency.quantile(0.99),
            max_latency,
        ]);
        row.send_lag_ns = Some([lag.quantile(0.99), max_lag]);
    }

    /// The row of interval `index`, made if new. Records come in send-time order, so
    /// the row is almost always one of the last few: search from the back.
    #[inline]
    fn row(&mut self, index: u64) -> &mut Row {
        let mut position = self.rows.len();
        while position > 0 && self.rows[position - 1].index > index {
            position -= 1;
        }
        if position == 0 || self.rows[position - 1].index != index {
            self.rows.insert(
                position,
                Row {
                    index,
                    ..Row::default()
                },
            );
            position += 1;
        }
        &mut self.rows[position - 1]
    }

    /// Closes the last interval and returns the rows in time order.
    pub fn finish(mut self) -> Vec<Row> {
        self.close_open();
        self.rows
    }
}

/// Longest run of empty intervals drawn as zeros; a longer one (inputs hours apart)
/// becomes a break in the lines.
pub const MAX_EMPTY_ROWS: u64 = 1000;

/// Rows from the first to the last interval, empty ones as zero rows, except runs of
/// more than [`MAX_EMPTY_ROWS`] empty intervals, which become one `None`.
pub fn dense(rows: &[Row]) -> Vec<Option<Row>> {
    let mut out = Vec::with_capacity(rows.len());
    let mut next_index = rows.first().map_or(0, |row| row.index);
    for row in rows {
        let missing = row.index - next_index;
        if missing > MAX_EMPTY_ROWS {
            out.push(None);
        } else {
            out.extend((next_index..row.index).map(|index| {
                Some(Row {
                    index,
                    ..Row::default()
                })
            }));
        }
        out.push(Some(row.clone()));
        next_index = row.index + 1;
    }
    out
}

/// What [`Bins::add`] needs of a request.
#[derive(Debug, Clone, Copy)]
pub struct BinnedRequest {
    pub sent_ns: u64,
    pub latency_ns: u64,
    pub send_lag_ns: u64,
    pub status: StatusKey,
    pub success: bool,
    pub intended_ns: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn request(sent_ns: u64, latency_ns: u64, status: StatusKey) -> BinnedRequest {
        BinnedRequest {
            sent_ns,
            latency_ns,
            send_lag_ns: 1_000,
            status,
            success: (200..400).contains(&status),
            intended_ns: Some(sent_ns.saturating_sub(1_000)),
        }
    }

    #[test]
    fn rows_count_sends_completions_and_asks() {
        let mut bins = Bins::new(S);
        // Second 0: three requests, one slow (completes in second 2), one 503.
        bins.add(&request(100, 1_000_000, 200));
        bins.add(&request(S / 2, 2 * S, 200));
        bins.add(&request(S - 1, 1_000, 503));
        // Nothing sent in second 1; second 3: one transport error.
        bins.add(&request(3 * S, 30 * S, TRANSPORT + 2));
        let rows = bins.finish();
        let indexes: Vec<u64> = rows.iter().map(|r| r.index).collect();
        assert_eq!(indexes, [0, 2, 3]);
        let (first, done, last) = (&rows[0], &rows[1], &rows[2]);
        assert_eq!((first.sent, first.ok_done, first.asked), (3, 1, 3));
        assert_eq!(first.statuses, [(200, 2), (503, 1)]);
        assert_eq!(first.latency_ns, Some([1_000_000, 2 * S, 2 * S, 2 * S]));
        assert_eq!(first.send_lag_ns, Some([1_000, 1_000]));
        assert_eq!((done.sent, done.ok_done, done.latency_ns), (0, 1, None));
        assert_eq!(
            (last.sent, last.ok_done, &last.statuses),
            (1, 0, &vec![(TRANSPORT + 2, 1)])
        );
    }

    #[test]
    fn dense_rows_fill_short_gaps_and_break_long_ones() {
        let row = |index| Row {
            index,
            sent: 1,
            ..Row::default()
        };
        let rows = dense(&[row(3), row(5), row(5 + MAX_EMPTY_ROWS + 2)]);
        let shape: Vec<Option<(u64, u64)>> = rows
            .iter()
            .map(|r| r.as_ref().map(|r| (r.index, r.sent)))
            .collect();
        assert_eq!(
            shape,
            [
                Some((3, 1)),
                Some((4, 0)),
                Some((5, 1)),
                None,
                Some((MAX_EMPTY_ROWS + 7, 1))
            ]
        );
        assert!(dense(&[]).is_empty());
    }

    #[test]
    fn late_records_join_the_open_interval() {
        let mut bins = Bins::new(S);
        let unasked = |sent_ns, latency_ns| BinnedRequest {
            intended_ns: None,
            success: false,
            ..request(sent_ns, latency_ns, 500)
        };
        bins.add(&unasked(2 * S, 5));
        bins.add(&unasked(S, 7));
        let rows = bins.finish();
        let sent: Vec<(u64, u64)> = rows.iter().map(|r| (r.index, r.sent)).collect();
        assert_eq!(sent, [(2, 2)]);
        assert_eq!(rows[0].latency_ns.map(|l| l[3]), Some(7));
    }
}
