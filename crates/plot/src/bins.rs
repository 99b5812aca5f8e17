//! [`Bins`]: per-interval rows (1 s by default) on the page's time axis, filled in one
//! pass over records in send-time order.
//!
//! A row counts the requests *sent* in it (by status), the successful ones *completed*
//! in it, the requests the schedule *asked* for in it (by intended send time, for
//! schedules the header does not give a constant rate for), and the latency and send
//! lag percentiles of the requests sent in it, and for a flow's requests how each check
//! went ([`CheckCount`], [`Bins::add_checks`]). Percentiles need the values, so only the
//! interval being filled holds a [`Distribution`]; it closes when a later record
//! arrives. Rows are a few dozen bytes per interval of the run (and per check that ran
//! in it), never per request.

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
    /// The load started in the interval, what an asked rate is held to: a flow's runs
    /// (its first request of each), any other attack's requests (so `sent` in a run
    /// without flows).
    pub started: u64,
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
    /// How each check of the requests sent in the interval went, in order of first
    /// sight; empty without flow checks.
    pub checks: Vec<CheckCount>,
    /// A replay's originals whose logged time (rebased, sped up: their records'
    /// intended send time) falls in the interval ([`Bins::add_logged`]).
    pub logged: u64,
    /// A replay's p99 latency as logged, and as replayed, of the requests intended in
    /// the interval (`replay_gather.rs`); `None` without one.
    pub original_p99_ns: Option<u64>,
    pub replay_p99_ns: Option<u64>,
}

/// One check's runs in an interval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CheckCount {
    /// The check's run-wide id (`checks.rs`).
    pub check: u32,
    pub passed: u64,
    pub failed: u64,
}

impl CheckCount {
    /// Adds `other`'s runs of the same check.
    fn add(&mut self, other: &CheckCount) {
        self.passed += other.passed;
        self.failed += other.failed;
    }
}

#[derive(Clone)]
struct OpenInterval {
    index: u64,
    latency: Distribution,
    send_lag: Distribution,
}

impl OpenInterval {
    /// The row's latency p50, p90, p99 and max, and its send lag p99 and max.
    fn closing_values(self) -> ([u64; 4], [u64; 2]) {
        let (max_latency, max_lag) = (self.latency.max(), self.send_lag.max());
        let latency = self.latency.into_quantiles();
        let lag = self.send_lag.into_quantiles();
        (
            [
                latency.quantile(0.50),
                latency.quantile(0.90),
                latency.quantile(0.99),
                max_latency,
            ],
            [lag.quantile(0.99), max_lag],
        )
    }
}

impl Row {
    /// Adds a later row of the same coarser interval: counts add up, percentiles and
    /// maxima keep the highest, so no spike disappears.
    fn merge(&mut self, other: &Row) {
        self.sent += other.sent;
        self.started += other.started;
        self.ok_done += other.ok_done;
        self.asked += other.asked;
        for &(key, count) in &other.statuses {
            match self.statuses.iter_mut().find(|(mine, _)| *mine == key) {
                Some((_, mine)) => *mine += count,
                None => self.statuses.push((key, count)),
            }
        }
        self.logged += other.logged;
        self.original_p99_ns = self.original_p99_ns.max(other.original_p99_ns);
        self.replay_p99_ns = self.replay_p99_ns.max(other.replay_p99_ns);
        self.latency_ns = highest(self.latency_ns, other.latency_ns);
        self.send_lag_ns = highest(self.send_lag_ns, other.send_lag_ns);
        for theirs in &other.checks {
            match self.checks.iter_mut().find(|c| c.check == theirs.check) {
                Some(mine) => mine.add(theirs),
                None => self.checks.push(*theirs),
            }
        }
    }

    /// The runs of `check` in this interval, if it ran.
    pub fn check(&self, check: u32) -> Option<&CheckCount> {
        self.checks.iter().find(|c| c.check == check)
    }
}

/// Element by element, the higher of two optional arrays.
fn highest<const N: usize>(a: Option<[u64; N]>, b: Option<[u64; N]>) -> Option<[u64; N]> {
    match (a, b) {
        (Some(a), Some(b)) => Some(std::array::from_fn(|i| a[i].max(b[i]))),
        (a, b) => a.or(b),
    }
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
        row.started += u64::from(request.starts_load);
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

    /// Counts a flow request's checks in the row of its send time (nanoseconds from
    /// the origin): `checks` are the run-wide ids of its target's checks in bit order,
    /// `checks_failed` the record's bits. Nothing is allocated once each check has
    /// run in the interval.
    #[inline]
    pub fn add_checks(&mut self, sent_ns: u64, checks: &[u32], checks_failed: u32) {
        if checks.is_empty() {
            return;
        }
        let row = self.row(sent_ns / self.every_ns);
        for (bit, &check) in checks.iter().enumerate() {
            let failed = checks_failed
                .checked_shr(bit as u32)
                .is_some_and(|bits| bits & 1 != 0);
            let count = match row.checks.iter().position(|c| c.check == check) {
                Some(position) => &mut row.checks[position],
                None => {
                    row.checks.push(CheckCount {
                        check,
                        ..CheckCount::default()
                    });
                    let last = row.checks.len() - 1;
                    &mut row.checks[last]
                }
            };
            if failed {
                count.failed += 1;
            } else {
                count.passed += 1;
            }
        }
    }

    /// Counts a replay's original at `intended_ns` (nanoseconds from the origin), in
    /// whatever order they come.
    pub fn add_logged(&mut self, intended_ns: u64) {
        self.row(intended_ns / self.every_ns).logged += 1;
    }

    /// Sets interval `index`'s replay p99s; a value already there (an interval
    /// closed twice, for a straggler) keeps the higher, as [`Row::merge`] does.
    pub fn set_replay_p99(&mut self, index: u64, original_ns: Option<u64>, replay_ns: Option<u64>) {
        let row = self.row(index);
        row.original_p99_ns = row.original_p99_ns.max(original_ns);
        row.replay_p99_ns = row.replay_p99_ns.max(replay_ns);
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
        let index = open.index;
        let (latency_ns, send_lag_ns) = open.closing_values();
        let row = self.row(index);
        row.latency_ns = Some(latency_ns);
        row.send_lag_ns = Some(send_lag_ns);
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

    /// A copy for the live page: the open interval closed, and at most `max_rows` rows.
    /// Once the run spans more intervals, runs of 2, 4, 8… adjacent ones merge
    /// ([`Row::merge`]) into one row of that many times the interval, so the copy made
    /// each second stops growing with the run.
    pub fn coarse_copy(&self, max_rows: usize) -> Bins {
        let span = match (self.rows.first(), self.rows.last()) {
            (Some(first), Some(last)) => last.index - first.index + 1,
            _ => 0,
        };
        let mut factor = 1u64;
        while span.div_ceil(factor) > max_rows.max(1) as u64 {
            factor *= 2;
        }
        let open = self
            .open
            .clone()
            .map(|open| (open.index, open.closing_values()));
        let mut rows: Vec<Row> = Vec::with_capacity(self.rows.len().min(max_rows + 1));
        for row in &self.rows {
            let closed;
            let row = match open {
                Some((index, (latency_ns, send_lag_ns))) if index == row.index => {
                    closed = Row {
                        latency_ns: Some(latency_ns),
                        send_lag_ns: Some(send_lag_ns),
                        ..row.clone()
                    };
                    &closed
                }
                _ => row,
            };
            let index = row.index / factor;
            match rows.last_mut() {
                Some(last) if last.index == index => last.merge(row),
                _ => rows.push(Row {
                    index,
                    ..row.clone()
                }),
            }
        }
        Bins {
            every_ns: self.every_ns * factor,
            rows,
            open: None,
        }
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
    /// It starts a unit of the load: a flow's first request of a run, any other
    /// attack's request.
    pub starts_load: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use record::Record;

    const S: u64 = 1_000_000_000;

    fn request(sent_ns: u64, latency_ns: u64, status: StatusKey) -> BinnedRequest {
        BinnedRequest {
            sent_ns,
            latency_ns,
            send_lag_ns: 1_000,
            status,
            success: (200..400).contains(&status),
            intended_ns: Some(sent_ns.saturating_sub(1_000)),
            starts_load: true,
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
    fn a_flow_s_runs_started_count_apart_from_its_requests() {
        let mut bins = Bins::new(S);
        // Two runs of a flow of 3 steps in second 0: only a run's first request
        // starts load (and was asked); the plain request of another attack does too.
        for run in 0..2 {
            for step in 0..3 {
                let first = step == 0;
                bins.add(&BinnedRequest {
                    starts_load: first,
                    intended_ns: first.then_some(run * S / 2),
                    ..request(run * S / 2 + step * 1_000, 1_000, 200)
                });
            }
        }
        bins.add(&request(S / 4, 1_000, 200));
        let row = &bins.finish()[0];
        assert_eq!((row.started, row.sent, row.asked), (3, 7, 3));
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
    fn coarse_copies_merge_runs_of_intervals_past_the_limit() {
        let mut bins = Bins::new(S);
        for second in 0..10 {
            let status = if second == 7 { 503 } else { 200 };
            bins.add(&request(second * S, (second + 1) * 1_000, status));
            bins.add(&request(second * S + 1, 1_000, 200));
        }
        // Within the limit, the copy is the rows, the open interval closed.
        let whole = bins.coarse_copy(10);
        assert_eq!(whole.every_ns(), S);
        assert_eq!(whole.finish(), bins.clone().finish());
        // Ten seconds in at most four rows: 4-second rows (0-3, 4-7, 8-9). A request
        // is asked for 1 µs before it is sent: the first of each second in the one before.
        let coarse = bins.coarse_copy(4);
        assert_eq!(coarse.every_ns(), 4 * S);
        let rows = coarse.finish();
        let shape: Vec<(u64, u64, u64)> = rows.iter().map(|r| (r.index, r.sent, r.asked)).collect();
        assert_eq!(shape, [(0, 8, 10), (1, 8, 8), (2, 4, 2)]);
        assert_eq!(rows[1].statuses, [(200, 7), (503, 1)]);
        // The highest of the merged rows, the open (last) interval's included.
        let max_latency: Vec<Option<u64>> =
            rows.iter().map(|r| r.latency_ns.map(|l| l[3])).collect();
        assert_eq!(max_latency, [Some(4_000), Some(8_000), Some(10_000)]);
        assert_eq!(Bins::new(S).coarse_copy(4).finish(), []);
    }

    #[test]
    fn checks_count_in_the_row_of_the_send_and_merge_in_coarse_copies() {
        let mut bins = Bins::new(S);
        // (sent at, the target's check ids, checks_failed)
        let requests: &[(u64, &[u32], u32)] = &[
            (0, &[0, 1], 0),
            (S / 2, &[0, 1], 0b10),
            (S / 2, &[], 0b1),
            (S + 1, &[2], 0b1 | Record::FAILED_BY_FLOW),
            (2 * S, &[0, 1], 0b11),
            (3 * S, &[2], 0),
        ];
        for &(sent_ns, checks, failed) in requests {
            bins.add(&request(sent_ns, 1_000, 200));
            bins.add_checks(sent_ns, checks, failed);
        }
        let counts = |rows: &[Row]| -> Vec<Vec<(u32, u64, u64)>> {
            rows.iter()
                .map(|row| {
                    row.checks
                        .iter()
                        .map(|c| (c.check, c.passed, c.failed))
                        .collect()
                })
                .collect()
        };
        let rows = bins.clone().finish();
        assert_eq!(
            counts(&rows),
            [
                vec![(0, 2, 0), (1, 1, 1)],
                vec![(2, 0, 1)],
                vec![(0, 0, 1), (1, 0, 1)],
                vec![(2, 1, 0)],
            ]
        );
        assert_eq!(
            rows[0].check(1),
            Some(&CheckCount {
                check: 1,
                passed: 1,
                failed: 1
            })
        );
        assert_eq!(rows[1].check(0), None);
        // Two-second rows: counts add up by check.
        let coarse = bins.coarse_copy(2).finish();
        assert_eq!(
            counts(&coarse),
            [
                vec![(0, 2, 0), (1, 1, 1), (2, 0, 1)],
                vec![(0, 0, 1), (1, 0, 1), (2, 1, 0)],
            ]
        );
    }

    #[test]
    fn late_records_join_the_open_interval() {
        let mut bins = Bins::new(S);
        let unasked = |sent_ns, latency_ns| BinnedRequest {
            intended_ns: None,
            starts_load: true,
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
