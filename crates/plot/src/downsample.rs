//! Downsampling that keeps what a reader looks for, in bounded memory.
//!
//! - [`PointSampler`]: the latency scatter, fed one request at a time in send-time
//!   order. Up to its limit it keeps every point. Beyond, it keeps one point per cell
//!   of a grid over time (columns) and log latency (rows, 8 per doubling): the slowest
//!   request of the cell, and how many requests the cell holds (its weight, drawn as
//!   shade, so the bulk reads darker than a rare tail). So the slowest request of the
//!   run, and of every column, is always drawn, and every region of the plane that has
//!   a request shows one. When the
//!   grid holds more than the limit, columns merge in pairs (or, once there are few
//!   columns, rows do), which keeps memory flat however long the run.
//! - [`min_max_rows`]: for per-second series that share a time grid (rates, status
//!   codes, percentiles): in each bucket of rows, each series keeps its lowest and
//!   highest row, so no spike or dip disappears, and all series keep the same rows.

/// A request kept for drawing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kept {
    /// Send time minus the page's time origin.
    pub t_ns: u64,
    /// The request's latency, nanoseconds.
    pub latency_ns: u64,
    /// What the hover names it by (a status code or an error id; see `gather.rs`).
    pub label: u32,
    /// How many requests this point stands for: 1, or its grid cell's count.
    pub weight: u64,
}

/// The resolution of a sampler's grid: column width and rows per doubling (`1 << bits`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GridSize {
    pub width_ns: u64,
    pub row_bits: u32,
}

impl GridSize {
    /// The coarser of two sizes in each dimension.
    pub fn coarsest(self, other: GridSize) -> GridSize {
        GridSize {
            width_ns: self.width_ns.max(other.width_ns),
            row_bits: self.row_bits.min(other.row_bits),
        }
    }
}

/// The points of one series after sampling.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Sampled {
    /// In time order.
    pub points: Vec<Kept>,
    /// Points offered, kept or not.
    pub seen: u64,
}

/// Columns kept before rows lose resolution instead of columns.
const MIN_COLUMNS: usize = 128;
/// Columns the grid starts with when it takes over from the raw points.
const START_COLUMNS: u64 = 512;
/// Rows per doubling of latency start at `1 << ROW_BITS` (9-12% apart).
const ROW_BITS: u32 = 3;
/// Rows there can be: 65 magnitudes of `u64`, `1 << ROW_BITS` rows each.
const ROW_SLOTS: usize = 65 << ROW_BITS;

/// Samples one series of points; see the module documentation.
#[derive(Debug, Clone)]
pub struct PointSampler {
    limit: usize,
    seen: u64,
    raw: Vec<Kept>,
    grid: Option<Grid>,
}

impl PointSampler {
    /// Keeps at most about `limit` points (at least 2).
    pub fn new(limit: usize) -> PointSampler {
        PointSampler {
            limit: limit.max(2),
            seen: 0,
            raw: Vec::new(),
            grid: None,
        }
    }

    #[inline]
    /// Offers one request; it is kept, or counted in its grid cell.
    pub fn add(&mut self, point: Kept) {
        self.seen += 1;
        if let Some(grid) = &mut self.grid {
            grid.add(point);
            if grid.kept > self.limit {
                grid.shrink_to(self.limit);
            }
            return;
        }
        self.raw.push(point);
        if self.raw.len() > self.limit {
            self.start_grid();
        }
    }

    fn start_grid(&mut self) {
        let (first, last) = self.raw.iter().fold((u64::MAX, 0), |(lo, hi), p| {
            (lo.min(p.t_ns), hi.max(p.t_ns))
        });
        let span_ns = last.saturating_sub(first);
        let width_ns = (span_ns / START_COLUMNS).max(1).next_power_of_two();
        let mut grid = Grid::new(width_ns, ROW_BITS);
        for point in self.raw.drain(..) {
            grid.add(point);
        }
        grid.shrink_to(self.limit);
        self.grid = Some(grid);
        self.raw = Vec::new();
    }

    /// Points offered so far.
    pub fn seen(&self) -> u64 {
        self.seen
    }

    /// The grid's resolution, once the points outgrew the limit.
    pub fn grid_size(&self) -> Option<GridSize> {
        self.grid.as_ref().map(|grid| GridSize {
            width_ns: grid.width_ns,
            row_bits: grid.row_bits,
        })
    }

    /// Coarsens the grid (if there is one) to at least `size`, so that a dot of this
    /// series stands for as much of the plane as a dot of a series drawn at `size`.
    pub fn coarsen_to(&mut self, size: GridSize) {
        if let Some(grid) = &mut self.grid {
            let coarser = grid.width_ns < size.width_ns || grid.row_bits > size.row_bits;
            grid.width_ns = grid.width_ns.max(size.width_ns);
            grid.row_bits = grid.row_bits.min(size.row_bits);
            if coarser {
                grid.rebuild();
            }
        }
    }

    /// The points kept, with how many were seen.
    pub fn finish(self) -> Sampled {
        let mut points = match self.grid {
            Some(grid) => grid.into_points(),
            None => self.raw,
        };
        points.sort_by_key(|p| (p.t_ns, p.latency_ns));
        Sampled {
            points,
            seen: self.seen,
        }
    }
}

/// One point per (column, row) cell: the slowest.
#[derive(Debug, Clone)]
struct Grid {
    width_ns: u64,
    row_bits: u32,
    /// In column order.
    columns: Vec<Column>,
    kept: usize,
    /// For the last column: row -> 1 + index of its cell, 0 for none.
    slots: Vec<u32>,
}

#[derive(Debug, Clone)]
struct Column {
    index: u64,
    cells: Vec<(u16, Kept)>,
}

impl Grid {
    fn new(width_ns: u64, row_bits: u32) -> Grid {
        Grid {
            width_ns,
            row_bits,
            columns: Vec::new(),
            kept: 0,
            slots: vec![0; ROW_SLOTS],
        }
    }

    #[inline]
    fn add(&mut self, point: Kept) {
        let index = point.t_ns / self.width_ns;
        let row = row_of(point.latency_ns, self.row_bits);
        match self.columns.last().map(|c| c.index) {
            Some(last) if last == index => self.add_to_last(row, point),
            Some(last) if last > index => self.add_out_of_order(index, row, point),
            _ => {
                self.start_column(index);
                self.add_to_last(row, point);
            }
        }
    }

    #[inline]
    fn add_to_last(&mut self, row: u16, point: Kept) {
        let Some(column) = self.columns.last_mut() else {
            return;
        };
        match self.slots[usize::from(row)] {
            0 => {
                column.cells.push((row, point));
                self.slots[usize::from(row)] = column.cells.len() as u32;
                self.kept += 1;
            }
            slot => keep_slower(&mut column.cells[slot as usize - 1].1, point),
        }
    }

    fn start_column(&mut self, index: u64) {
        if let Some(last) = self.columns.last() {
            for (row, _) in &last.cells {
                self.slots[usize::from(*row)] = 0;
            }
        }
        self.columns.push(Column {
            index,
            cells: Vec::new(),
        });
    }

    /// A point older than the last column (inputs are sorted, so this is rare).
    fn add_out_of_order(&mut self, index: u64, row: u16, point: Kept) {
        let position = self.columns.partition_point(|c| c.index < index);
        if self.columns.get(position).is_none_or(|c| c.index != index) {
            self.columns.insert(
                position,
                Column {
                    index,
                    cells: Vec::new(),
                },
            );
        }
        let cells = &mut self.columns[position].cells;
        match cells.iter_mut().find(|(r, _)| *r == row) {
            Some((_, kept)) => keep_slower(kept, point),
            None => {
                cells.push((row, point));
                self.kept += 1;
            }
        }
    }

    /// Coarsens until at most `limit` cells are kept, or nothing is left to merge.
    fn shrink_to(&mut self, limit: usize) {
        while self.kept > limit {
            let one_column = self.columns.len() <= 1;
            if self.columns.len() > MIN_COLUMNS || (self.row_bits == 0 && !one_column) {
                self.width_ns = self.width_ns.saturating_mul(2);
            } else if self.row_bits > 0 {
                self.row_bits -= 1;
            } else {
                return;
            }
            self.rebuild();
        }
    }

    /// Re-adds every kept point under the current width and rows.
    fn rebuild(&mut self) {
        let columns = std::mem::take(&mut self.columns);
        self.kept = 0;
        self.slots.iter_mut().for_each(|slot| *slot = 0);
        for column in columns {
            for (_, point) in column.cells {
                self.add(point);
            }
        }
    }

    fn into_points(self) -> Vec<Kept> {
        self.columns
            .into_iter()
            .flat_map(|column| column.cells.into_iter().map(|(_, point)| point))
            .collect()
    }
}

/// Keeps the slower of two points (the earlier one on a tie), standing for both.
#[inline]
fn keep_slower(kept: &mut Kept, point: Kept) {
    let weight = kept.weight + point.weight;
    if point.latency_ns > kept.latency_ns {
        *kept = point;
    }
    kept.weight = weight;
}

/// The log-linear row of a latency: its magnitude (bit length), then the `bits` bits
/// after the leading one. Rows grow with the value.
#[inline]
fn row_of(value: u64, bits: u32) -> u16 {
    let magnitude = u64::BITS - value.leading_zeros();
    let mask = (1u64 << bits) - 1;
    let top = if magnitude == 0 {
        0
    } else if magnitude > bits {
        (value >> (magnitude - 1 - bits)) & mask
    } else {
        (value << (bits + 1 - magnitude)) & mask
    };
    ((magnitude << bits) as u64 | top) as u16
}

/// The rows to keep of `rows` rows shared by `columns` (one slice of values per series,
/// NaN for none) so that each series has at most about `limit` points; see the module
/// documentation. Rows next to a gap are kept, so gaps stay gaps.
pub fn min_max_rows(columns: &[&[f64]], rows: usize, limit: usize) -> Vec<usize> {
    if rows <= limit.max(2) {
        return (0..rows).collect();
    }
    let per_bucket = 2 * columns.len() + 1;
    let buckets = (limit / per_bucket).max(1);
    let mut keep = vec![false; rows];
    for bucket in 0..buckets {
        let (start, end) = (bucket * rows / buckets, (bucket + 1) * rows / buckets);
        if start == end {
            continue;
        }
        keep[start] = true;
        for values in columns {
            mark_extremes(&values[start..end], start, &mut keep);
        }
    }
    keep[rows - 1] = true;
    for values in columns {
        mark_gap_edges(values, &mut keep);
    }
    (0..rows).filter(|&row| keep[row]).collect()
}

fn mark_extremes(values: &[f64], offset: usize, keep: &mut [bool]) {
    let finite = || values.iter().enumerate().filter(|(_, v)| v.is_finite());
    // The first lowest and the first highest.
    let low = finite().min_by(|a, b| a.1.total_cmp(b.1));
    let high = finite().max_by(|a, b| a.1.total_cmp(b.1).then(b.0.cmp(&a.0)));
    for (index, _) in low.into_iter().chain(high) {
        keep[offset + index] = true;
    }
}

fn mark_gap_edges(values: &[f64], keep: &mut [bool]) {
    for index in 1..values.len() {
        if values[index].is_finite() != values[index - 1].is_finite() {
            keep[index] = true;
            keep[index - 1] = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(t_ns: u64, latency_ns: u64) -> Kept {
        Kept {
            t_ns,
            latency_ns,
            label: 0,
            weight: 1,
        }
    }

    /// A deterministic stream: a steady latency band with a few spikes.
    fn stream(count: u64) -> impl Iterator<Item = Kept> {
        (0..count).map(|i| {
            let band = 500_000 + (i * 7919 % 1000) * 1_000;
            let latency = if i % 9973 == 0 { 30_000_000_000 } else { band };
            point(i * 50_000, latency)
        })
    }

    #[test]
    fn keeps_everything_up_to_the_limit() {
        let mut sampler = PointSampler::new(100);
        for p in stream(100) {
            sampler.add(p);
        }
        let sampled = sampler.finish();
        assert_eq!(sampled.points.len(), 100);
        assert_eq!(sampled.seen, 100);
        assert!(sampled.points.windows(2).all(|w| w[0].t_ns <= w[1].t_ns));
    }

    #[test]
    fn stays_within_the_limit_and_keeps_the_extremes() {
        for limit in [50, 500, 4000] {
            let mut sampler = PointSampler::new(limit);
            let (mut slowest, mut spikes) = (point(0, 0), Vec::new());
            for p in stream(300_000) {
                if p.latency_ns > slowest.latency_ns {
                    slowest = p;
                }
                if p.latency_ns == 30_000_000_000 {
                    spikes.push(p.t_ns);
                }
                sampler.add(p);
            }
            let sampled = sampler.finish();
            assert_eq!(sampled.seen, 300_000);
            assert!(
                sampled.points.len() <= limit,
                "{limit}: {}",
                sampled.points.len()
            );
            assert!(sampled.points.len() >= limit / 4, "{limit}: too few");
            let same = |a: &Kept, b: &Kept| (a.t_ns, a.latency_ns) == (b.t_ns, b.latency_ns);
            assert!(
                sampled.points.iter().any(|p| same(p, &slowest)),
                "{limit}: slowest dropped"
            );
            let weights: u64 = sampled.points.iter().map(|p| p.weight).sum();
            assert_eq!(weights, 300_000, "{limit}: every point is counted once");
            let kept_spikes = sampled
                .points
                .iter()
                .filter(|p| p.latency_ns == 30_000_000_000)
                .count();
            // One spike per column at least, and there are fewer spikes than columns
            // in the bigger grids: then every spike survives.
            if limit >= 4000 {
                assert_eq!(kept_spikes, spikes.len());
            } else {
                assert!(kept_spikes >= 1);
            }
            // The band's bottom row is still drawn somewhere (by its slowest point).
            assert!(sampled.points.iter().any(|p| p.latency_ns < 600_000));
        }
    }

    #[test]
    fn a_finer_grid_coarsens_to_another_series_resolution() {
        let (mut coarse, mut fine) = (PointSampler::new(100), PointSampler::new(5000));
        for p in stream(100_000) {
            coarse.add(p);
            fine.add(p);
        }
        let (coarse_size, fine_size) = (coarse.grid_size().unwrap(), fine.grid_size().unwrap());
        assert!(fine_size.width_ns < coarse_size.width_ns);
        let before = fine.finish().points.len();
        let mut fine = PointSampler::new(5000);
        for p in stream(100_000) {
            fine.add(p);
        }
        fine.coarsen_to(coarse_size.coarsest(fine_size));
        assert_eq!(fine.grid_size(), Some(coarse_size.coarsest(fine_size)));
        let sampled = fine.finish();
        assert!(
            sampled.points.len() < before / 4,
            "{} of {before}",
            sampled.points.len()
        );
        assert!(
            sampled
                .points
                .iter()
                .any(|p| p.latency_ns == 30_000_000_000)
        );
        // Without a grid (few points) nothing changes.
        let mut few = PointSampler::new(10);
        few.add(point(0, 1));
        few.coarsen_to(coarse_size);
        assert_eq!(few.finish().points.len(), 1);
    }

    #[test]
    fn out_of_order_points_land_in_their_column() {
        let mut sampler = PointSampler::new(4);
        for p in [
            point(0, 5),
            point(10, 5),
            point(20, 5),
            point(30, 5),
            point(40, 5),
        ] {
            sampler.add(p);
        }
        sampler.add(point(5, 1_000_000));
        let sampled = sampler.finish();
        assert!(sampled.points.len() <= 4);
        assert!(sampled.points.iter().any(|p| p.latency_ns == 1_000_000));
    }

    #[test]
    fn rows_grow_with_the_value() {
        let mut last = 0;
        for value in (0..5000u64).chain([1 << 40, u64::MAX]) {
            let row = row_of(value, ROW_BITS);
            assert!(row >= last, "{value}");
            assert!(usize::from(row) < ROW_SLOTS);
            last = row;
        }
        // 8 rows per doubling: 1000 and 1100 differ, 1000 and 1050 do not.
        assert_ne!(row_of(1000, 3), row_of(1100, 3));
        assert_eq!(row_of(1000, 3), row_of(1020, 3));
        assert_eq!(row_of(1000, 0), row_of(1020, 0));
    }

    #[test]
    fn min_max_rows_keep_spikes_and_gaps() {
        let mut rate: Vec<f64> = (0..10_000).map(|i| 100.0 + (i % 7) as f64).collect();
        rate[4321] = 5000.0;
        rate[777] = 0.0;
        let mut p99: Vec<f64> = vec![1e6; 10_000];
        for value in &mut p99[6000..6010] {
            *value = f64::NAN;
        }
        let rows = min_max_rows(&[&rate, &p99], 10_000, 500);
        assert!(rows.len() <= 520, "{}", rows.len());
        for must in [0, 777, 4321, 5999, 6000, 6009, 6010, 9999] {
            assert!(rows.contains(&must), "row {must}");
        }
        assert!(rows.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(min_max_rows(&[&rate], 10, 500), (0..10).collect::<Vec<_>>());
    }
}
