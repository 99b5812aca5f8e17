//! Counters for `/metrics` (Prometheus text) and `/_admin/current_count`.
//!
//! Each server thread owns a [`ThreadStats`] and is its only writer, so counting is a
//! relaxed load and store on a cache line no other core writes: no lock, no contended
//! atomic. A scrape sums all threads. Labels are interned in a [`Registry`] when a recipe
//! loads: every (route, status) pair gets a counter slot and every route a histogram row,
//! so the request path indexes arrays and never formats or hashes a label.

use std::collections::HashMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};

/// Counter slots per thread; pairs past this share slot 0 (`route="(other)"`).
pub(crate) const MAX_COUNTERS: usize = 4096;
/// Histogram rows per thread; routes past this share row 0.
pub(crate) const MAX_ROUTE_LABELS: usize = 256;
/// Upper bounds of the latency histogram buckets, in seconds (then `+Inf`).
const BUCKET_BOUNDS_S: [f64; 13] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];
const BUCKETS: usize = BUCKET_BOUNDS_S.len() + 1;

/// Route label for requests no route matched.
pub(crate) const UNMATCHED_ROUTE: &str = "(none)";
/// Route label for requests refused before routing (bad HTTP).
pub(crate) const BAD_REQUEST_ROUTE: &str = "(bad_request)";

/// The protocol a request came over, for `loadlab_sim_protocol_requests_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Protocol {
    Http1 = 0,
    Http2 = 1,
}

const PROTOCOL_LABELS: [&str; 2] = ["http/1.1", "h2"];

/// One thread's counters. Written only by its thread; read by scrapes.
pub(crate) struct ThreadStats {
    counters: Box<[AtomicU64]>,
    by_protocol: [AtomicU64; 2],
    buckets: Box<[AtomicU64]>,
    sum_ns: Box<[AtomicU64]>,
    in_flight: AtomicI64,
    connections: AtomicI64,
}

fn zeroed(len: usize) -> Box<[AtomicU64]> {
    (0..len).map(|_| AtomicU64::new(0)).collect()
}

/// Adds to a counter with one writer: cheaper than `fetch_add` and just as exact.
fn add(cell: &AtomicU64, amount: u64) {
    cell.store(cell.load(Relaxed).wrapping_add(amount), Relaxed);
}

fn add_signed(cell: &AtomicI64, amount: i64) {
    cell.store(cell.load(Relaxed).wrapping_add(amount), Relaxed);
}

impl ThreadStats {
    pub fn new() -> Self {
        Self {
            counters: zeroed(MAX_COUNTERS),
            by_protocol: [AtomicU64::new(0), AtomicU64::new(0)],
            buckets: zeroed(MAX_ROUTE_LABELS * BUCKETS),
            sum_ns: zeroed(MAX_ROUTE_LABELS),
            in_flight: AtomicI64::new(0),
            connections: AtomicI64::new(0),
        }
    }

    /// Counts one answered request and its latency (arrival to last byte written).
    pub fn record(&self, slot: usize, route_label: usize, latency_ns: u64, protocol: Protocol) {
        add(&self.counters[slot.min(MAX_COUNTERS - 1)], 1);
        add(&self.by_protocol[protocol as usize], 1);
        let row = route_label.min(MAX_ROUTE_LABELS - 1);
        let seconds = latency_ns as f64 / 1e9;
        let bucket = BUCKET_BOUNDS_S
            .iter()
            .position(|bound| seconds <= *bound)
            .unwrap_or(BUCKETS - 1);
        add(&self.buckets[row * BUCKETS + bucket], 1);
        add(&self.sum_ns[row], latency_ns);
    }

    pub fn in_flight_delta(&self, delta: i64) {
        add_signed(&self.in_flight, delta);
    }

    pub fn connections_delta(&self, delta: i64) {
        add_signed(&self.connections, delta);
    }
}

/// Interned labels. Touched only when recipes load and when metrics are read.
#[derive(Default)]
pub(crate) struct Registry {
    routes: Vec<String>,
    route_index: HashMap<String, usize>,
    /// Counter slot -> (route label, status label).
    slots: Vec<(usize, String)>,
    slot_index: HashMap<(usize, String), usize>,
}

impl Registry {
    pub fn new() -> Self {
        let mut registry = Registry::default();
        let other = registry.route_label("(other)");
        registry.counter_slot(other, "other");
        registry
    }

    pub fn route_label(&mut self, route: &str) -> usize {
        if let Some(&label) = self.route_index.get(route) {
            return label;
        }
        if self.routes.len() >= MAX_ROUTE_LABELS {
            return 0;
        }
        self.routes.push(route.to_owned());
        self.route_index
            .insert(route.to_owned(), self.routes.len() - 1);
        self.routes.len() - 1
    }

    pub fn counter_slot(&mut self, route_label: usize, status: &str) -> usize {
        let key = (route_label, status.to_owned());
        if let Some(&slot) = self.slot_index.get(&key) {
            return slot;
        }
        if self.slots.len() >= MAX_COUNTERS {
            return 0;
        }
        self.slots.push(key.clone());
        self.slot_index.insert(key, self.slots.len() - 1);
        self.slots.len() - 1
    }
}

/// Sums of every thread's counters at one moment.
pub(crate) struct Snapshot {
    pub counters: Vec<u64>,
    by_protocol: [u64; 2],
    buckets: Vec<u64>,
    sum_ns: Vec<u64>,
    pub in_flight: i64,
    pub connections: i64,
}

pub(crate) fn snapshot(threads: &[std::sync::Arc<ThreadStats>]) -> Snapshot {
    let mut snap = Snapshot {
        counters: vec![0; MAX_COUNTERS],
        by_protocol: [0; 2],
        buckets: vec![0; MAX_ROUTE_LABELS * BUCKETS],
        sum_ns: vec![0; MAX_ROUTE_LABELS],
        in_flight: 0,
        connections: 0,
    };
    for thread in threads {
        sum_into(&mut snap.counters, &thread.counters);
        sum_into(&mut snap.by_protocol, &thread.by_protocol);
        sum_into(&mut snap.buckets, &thread.buckets);
        sum_into(&mut snap.sum_ns, &thread.sum_ns);
        snap.in_flight += thread.in_flight.load(Relaxed);
        snap.connections += thread.connections.load(Relaxed);
    }
    snap
}

fn sum_into(total: &mut [u64], cells: &[AtomicU64]) {
    for (sum, cell) in total.iter_mut().zip(cells) {
        *sum = sum.wrapping_add(cell.load(Relaxed));
    }
}

/// `current_count`'s JSON: `{"total_requests": N, "200": n, ...}`, counted since the last
/// `clear_current_count` (whose snapshot is `baseline`).
pub(crate) fn current_count_json(registry: &Registry, now: &Snapshot, baseline: &[u64]) -> String {
    let mut by_status: std::collections::BTreeMap<&str, u64> = Default::default();
    let mut total = 0;
    for (slot, (_, status)) in registry.slots.iter().enumerate().skip(1) {
        let count = now.counters[slot].saturating_sub(baseline.get(slot).copied().unwrap_or(0));
        if count > 0 {
            *by_status.entry(status).or_default() += count;
            total += count;
        }
    }
    let mut object = serde_json::Map::new();
    object.insert("total_requests".into(), total.into());
    for (status, count) in by_status {
        object.insert(status.to_owned(), count.into());
    }
    serde_json::Value::Object(object).to_string()
}

/// Per-route pool figures, gathered by the caller from the current recipe.
pub(crate) struct PoolRow {
    pub route: String,
    pub stats: crate::pool::PoolStats,
    /// The model's ground truth for the stage in force: (workers + overflow) / mean service time.
    pub capacity_rps: f64,
}

/// Per-route stage figures, gathered by the caller from the current recipe.
pub(crate) struct StageRow {
    pub route: String,
    pub stage: i64,
}

/// Renders the Prometheus text exposition.
pub(crate) fn render(
    registry: &Registry,
    snap: &Snapshot,
    pools: &[PoolRow],
    stages: &[StageRow],
    run_seconds: f64,
) -> String {
    let mut out = String::with_capacity(4096);
    header(
        &mut out,
        "loadlab_sim_requests_total",
        "counter",
        "Requests answered, by route and status (or failure mode).",
    );
    for (slot, (route, status)) in registry.slots.iter().enumerate() {
        if snap.counters[slot] > 0 {
            let route = &registry.routes[*route];
            let _ = writeln!(
                out,
                "loadlab_sim_requests_total{{route=\"{}\",status=\"{}\"}} {}",
                escape(route),
                escape(status),
                snap.counters[slot]
            );
        }
    }
    header(
        &mut out,
        "loadlab_sim_protocol_requests_total",
        "counter",
        "Requests answered, by protocol (http/1.1, or h2 over TLS or h2c).",
    );
    for (label, count) in PROTOCOL_LABELS.iter().zip(snap.by_protocol) {
        let _ = writeln!(
            out,
            "loadlab_sim_protocol_requests_total{{protocol=\"{label}\"}} {count}"
        );
    }
    render_histogram(&mut out, registry, snap);
    gauge(
        &mut out,
        "loadlab_sim_in_flight",
        "Requests received and not yet answered.",
        snap.in_flight,
    );
    gauge(
        &mut out,
        "loadlab_sim_connections",
        "Open client connections.",
        snap.connections,
    );
    let _ = write!(
        out,
        "# HELP loadlab_sim_run_seconds Seconds since the current recipe was loaded (the run clock).\n# TYPE loadlab_sim_run_seconds gauge\nloadlab_sim_run_seconds {run_seconds:.3}\n"
    );
    header(
        &mut out,
        "loadlab_sim_stage",
        "gauge",
        "Index of the stage each route is in (-1 before its first stage).",
    );
    for row in stages {
        let _ = writeln!(
            out,
            "loadlab_sim_stage{{route=\"{}\"}} {}",
            escape(&row.route),
            row.stage
        );
    }
    render_pools(&mut out, pools);
    out
}

fn render_histogram(out: &mut String, registry: &Registry, snap: &Snapshot) {
    let name = "loadlab_sim_request_duration_seconds";
    header(
        out,
        name,
        "histogram",
        "Served latency, from request read to response written.",
    );
    for (row, route) in registry.routes.iter().enumerate() {
        let counts = &snap.buckets[row * BUCKETS..(row + 1) * BUCKETS];
        let total: u64 = counts.iter().sum();
        if total == 0 {
            continue;
        }
        let route = escape(route);
        let mut cumulative = 0;
        for (bucket, count) in counts.iter().enumerate() {
            cumulative += count;
            let bound = BUCKET_BOUNDS_S
                .get(bucket)
                .map_or("+Inf".to_owned(), |b| b.to_string());
            let _ = writeln!(
                out,
                "{name}_bucket{{route=\"{route}\",le=\"{bound}\"}} {cumulative}"
            );
        }
        let _ = writeln!(
            out,
            "{name}_sum{{route=\"{route}\"}} {}",
            snap.sum_ns[row] as f64 / 1e9
        );
        let _ = writeln!(out, "{name}_count{{route=\"{route}\"}} {total}");
    }
}

/// The pool families of `/metrics`, in order: name, type and help; their values per
/// route are [`pool_values`], in the same order.
const POOL_FAMILIES: [(&str, &str, &str); 8] = [
    (
        "loadlab_sim_pool_workers",
        "gauge",
        "Size of the fixed worker pool.",
    ),
    (
        "loadlab_sim_pool_busy",
        "gauge",
        "Fixed-pool workers serving a request.",
    ),
    (
        "loadlab_sim_pool_overflow_workers",
        "gauge",
        "Size of the overflow pool (workers started past the fixed pool when it is full).",
    ),
    (
        "loadlab_sim_pool_overflow_busy",
        "gauge",
        "Overflow workers serving a request.",
    ),
    (
        "loadlab_sim_pool_queued",
        "gauge",
        "Requests waiting for a worker.",
    ),
    (
        "loadlab_sim_pool_rejected_total",
        "counter",
        "Requests turned away: pool and queue full on arrival.",
    ),
    (
        "loadlab_sim_pool_capacity_rps",
        "gauge",
        "Ground-truth capacity of the stage in force: (workers + overflow) / mean service time.",
    ),
    (
        "loadlab_sim_pool_timeouts_total",
        "counter",
        "Requests that queued and gave up after queue_timeout.",
    ),
];

/// A pool figure as exposed: a count, or a rate to three decimals.
enum PoolValue {
    Count(u64),
    Rate(f64),
}

impl std::fmt::Display for PoolValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PoolValue::Count(count) => write!(f, "{count}"),
            PoolValue::Rate(rate) => write!(f, "{rate:.3}"),
        }
    }
}

/// One route's values of [`POOL_FAMILIES`].
fn pool_values(pool: &PoolRow) -> [PoolValue; 8] {
    let s = &pool.stats;
    [
        PoolValue::Count(s.workers as u64),
        PoolValue::Count(s.busy as u64),
        PoolValue::Count(s.overflow_workers as u64),
        PoolValue::Count(s.overflow_busy as u64),
        PoolValue::Count(s.queued as u64),
        PoolValue::Count(s.rejected_full),
        PoolValue::Rate(pool.capacity_rps),
        PoolValue::Count(s.rejected_timeout),
    ]
}

fn render_pools(out: &mut String, pools: &[PoolRow]) {
    let values: Vec<[PoolValue; 8]> = pools.iter().map(pool_values).collect();
    for (family, (name, kind, help)) in POOL_FAMILIES.iter().enumerate() {
        header(out, name, kind, help);
        for (pool, values) in pools.iter().zip(&values) {
            let _ = writeln!(
                out,
                "{name}{{route=\"{}\"}} {}",
                escape(&pool.route),
                values[family]
            );
        }
    }
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = write!(out, "# HELP {name} {help}\n# TYPE {name} {kind}\n");
}

fn gauge(out: &mut String, name: &str, help: &str, value: i64) {
    header(out, name, "gauge", help);
    let _ = writeln!(out, "{name} {value}");
}

/// Prometheus label-value escaping: backslash, quote and newline.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn counts_sum_across_threads_and_render() {
        let mut registry = Registry::new();
        let news = registry.route_label("/news");
        assert_eq!(
            registry.route_label("/news"),
            news,
            "labels are interned once"
        );
        let ok = registry.counter_slot(news, "200");
        let reset = registry.counter_slot(news, "reset");
        let threads = vec![Arc::new(ThreadStats::new()), Arc::new(ThreadStats::new())];
        threads[0].record(ok, news, 2_000_000, Protocol::Http1);
        threads[1].record(ok, news, 200_000_000, Protocol::Http2);
        threads[1].record(reset, news, 0, Protocol::Http2);
        threads[0].in_flight_delta(3);
        threads[1].in_flight_delta(-1);
        let snap = snapshot(&threads);
        let text = render(
            &registry,
            &snap,
            &[],
            &[StageRow {
                route: "/news".into(),
                stage: 1,
            }],
            1.5,
        );
        for line in [
            "loadlab_sim_requests_total{route=\"/news\",status=\"200\"} 2",
            "loadlab_sim_requests_total{route=\"/news\",status=\"reset\"} 1",
            "loadlab_sim_request_duration_seconds_bucket{route=\"/news\",le=\"0.001\"} 1",
            "loadlab_sim_request_duration_seconds_bucket{route=\"/news\",le=\"0.0025\"} 2",
            "loadlab_sim_request_duration_seconds_bucket{route=\"/news\",le=\"0.25\"} 3",
            "loadlab_sim_request_duration_seconds_bucket{route=\"/news\",le=\"+Inf\"} 3",
            "loadlab_sim_request_duration_seconds_count{route=\"/news\"} 3",
            "loadlab_sim_in_flight 2",
            "loadlab_sim_stage{route=\"/news\"} 1",
            "loadlab_sim_run_seconds 1.500",
            "loadlab_sim_protocol_requests_total{protocol=\"http/1.1\"} 1",
            "loadlab_sim_protocol_requests_total{protocol=\"h2\"} 2",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "missing {line:?} in\n{text}"
            );
        }
        let json = |text: String| serde_json::from_str::<serde_json::Value>(&text).unwrap();
        assert_eq!(
            json(current_count_json(&registry, &snap, &[])),
            serde_json::json!({"total_requests": 3, "200": 2, "reset": 1})
        );
        assert_eq!(
            json(current_count_json(&registry, &snap, &snap.counters)),
            serde_json::json!({"total_requests": 0})
        );
    }

    #[test]
    fn pool_families_in_order() {
        let pools = [PoolRow {
            route: "/a".into(),
            stats: crate::pool::PoolStats {
                workers: 4,
                busy: 3,
                overflow_workers: 2,
                overflow_busy: 1,
                queued: 2,
                rejected_full: 5,
                rejected_timeout: 6,
            },
            capacity_rps: 80.0,
        }];
        let mut out = String::new();
        render_pools(&mut out, &pools);
        let samples: Vec<&str> = out.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(
            samples,
            [
                "loadlab_sim_pool_workers{route=\"/a\"} 4",
                "loadlab_sim_pool_busy{route=\"/a\"} 3",
                "loadlab_sim_pool_overflow_workers{route=\"/a\"} 2",
                "loadlab_sim_pool_overflow_busy{route=\"/a\"} 1",
                "loadlab_sim_pool_queued{route=\"/a\"} 2",
                "loadlab_sim_pool_rejected_total{route=\"/a\"} 5",
                "loadlab_sim_pool_capacity_rps{route=\"/a\"} 80.000",
                "loadlab_sim_pool_timeouts_total{route=\"/a\"} 6",
            ]
        );
        assert_eq!(out.lines().count(), 8 * 3, "HELP and TYPE per family");
        assert!(out.contains(
            "# HELP loadlab_sim_pool_timeouts_total Requests that queued and gave up after queue_timeout.\n# TYPE loadlab_sim_pool_timeouts_total counter\n"
        ));
    }

    #[test]
    fn registry_overflows_into_the_other_slot() {
        let mut registry = Registry::new();
        for i in 0..MAX_ROUTE_LABELS + 5 {
            registry.route_label(&format!("/r{i}"));
        }
        assert_eq!(registry.route_label("/late"), 0);
        for i in 0..MAX_COUNTERS + 5 {
            registry.counter_slot(1, &i.to_string());
        }
        assert_eq!(registry.counter_slot(1, "late"), 0);
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
