//! The one set of attack defaults (vegeta's where vegeta has the flag). The engine's
//! constructors, scenario files and `loadlab attack --help` all read them from here.

use std::time::Duration;

use units::Rate;

/// `-rate` when no rate, schedule or user count is given: 50 requests a second.
pub const RATE: Rate = Rate {
    count: 50.0,
    per: Duration::from_secs(1),
};

/// `-timeout`: per request, connect included.
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// `-precision`: how late a worker may wake to send the requests due and read the
/// answers arrived, so that one wake-up serves several. 100 µs keeps the send lag p99
/// within 200 µs at 50k req/s on one core, 10 times finer than wrk2's 1 ms timer.
pub const PRECISION: Duration = Duration::from_micros(100);

/// `-precision` at most: coarser would blur the latencies it measures.
pub const MAX_PRECISION: Duration = Duration::from_millis(10);

/// `-http2`: h2 is offered to https servers in ALPN, as vegeta does.
pub const HTTP2: bool = true;

/// `-monitor-interval`: how often the system under test is sampled.
pub const MONITOR_INTERVAL: Duration = Duration::from_secs(1);

/// `-keepalive`: connections are reused.
pub const KEEPALIVE: bool = true;

/// `-redirects`: how many redirects a request follows.
pub const REDIRECTS: i32 = 10;

/// `-max-workers`: requests in flight at most (open model).
pub const MAX_IN_FLIGHT: u64 = 10_000;

/// `-workers`: connections opened before the attack starts.
pub const INITIAL_CONNECTIONS: u64 = 10;

/// `-connections`: open connections per target host at most.
pub const CONNECTIONS_PER_HOST: u64 = 10_000;

/// `-threads` may be at most this many times the CPUs the process may run on: more
/// event loops than that only add context switches (and file descriptors).
pub const MAX_THREADS_PER_CPU: usize = 4;
