//! loadlab's origin / downstream / system-under-test simulator: `loadlab simulate`.
//!
//! It serves BBC origin_simulator recipes unchanged (routes, stages, latency ranges,
//! `<<256kb>>` placeholders, `random_content`, gzip, the `/_admin` API) and extends
//! them with latency distributions, weighted status mixes, per-request body sizes,
//! bodies from files, failure modes, and a capacity model whose W/S capacity is a
//! ground truth for capacity searches. `docs/SIMULATOR.md` is the user guide.
//!
//! Main types:
//! - [`Recipe`], from [`parse_recipe`] / [`parse_recipe_file`]: validated, no I/O yet;
//!   errors name the source and field ([`SimulatorError`]).
//! - [`Simulator`]: a running server that owns its threads. [`Simulator::start`] is a
//!   plain blocking call (no async runtime needed by the caller) that returns once the
//!   socket is bound; [`Simulator::stop`] joins the threads.
//! - [`SimulatorOptions`]: address (port 0 picks a free one) and thread count.
//! - [`demo_recipe`]: a capacity-model route with a known knee, for `loadlab demo`.
//!
//! Inside: one current-thread tokio runtime per thread, each with its own
//! `SO_REUSEPORT` listener and a hand-written HTTP/1.1 server (`http`, `conn`,
//! `respond`); recipes become immutable tables (`table`) swapped in by generation
//! number (`state`); counters are per thread (`metrics`); the pool (`pool`) is the one
//! structure threads share on the request path, and only for capacity-model routes.

mod admin;
mod body;
mod conn;
mod date;
mod dispatch;
mod error;
mod failure;
mod http;
mod latency;
mod metrics;
mod origin;
mod pool;
mod recipe;
mod respond;
mod server;
mod state;
mod table;
mod units;

#[cfg(test)]
mod proptests;

use std::net::SocketAddr;
use std::sync::Arc;

pub use error::SimulatorError;
pub use recipe::{Recipe, parse_recipe, parse_recipe_file};

/// Where and how to serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SimulatorOptions {
    /// Listening address; port 0 picks a free port (see [`Simulator::local_addr`]).
    pub addr: SocketAddr,
    /// Server threads, each with its own listener and event loop.
    pub threads: usize,
    /// Seeds the random draws (latencies, mixes, bodies) for reproducible runs.
    pub seed: Option<u64>,
}

impl SimulatorOptions {
    /// Options for `addr` with one thread per available core and random seeding.
    pub fn new(addr: SocketAddr) -> Self {
        let threads = std::thread::available_parallelism().map_or(1, usize::from);
        Self {
            addr,
            threads,
            seed: None,
        }
    }
}

/// A running simulator. Stops (closing every connection) on [`Simulator::stop`] or drop.
pub struct Simulator {
    local_addr: SocketAddr,
    shared: Arc<state::Shared>,
    threads: server::Threads,
}

impl Simulator {
    /// Loads `recipe` (reading body files and fetching origins), binds the listeners
    /// and starts the server threads. Returns once the socket accepts connections.
    /// A recipe with no routes is allowed: every path then answers 406 until one is
    /// posted to `/_admin/add_recipe`, as origin_simulator does.
    pub fn start(options: SimulatorOptions, recipe: &Recipe) -> Result<Simulator, SimulatorError> {
        if !(1..=1024).contains(&options.threads) {
            return Err(SimulatorError::Option {
                option: "threads",
                message: format!("{} is not between 1 and 1024", options.threads),
            });
        }
        let shared = Arc::new(state::Shared::new(options.threads, options.seed));
        if !recipe.routes.is_empty() {
            shared.load_recipe(recipe)?;
        }
        let (local_addr, threads) = server::Threads::start(options.addr, &shared)?;
        Ok(Simulator {
            local_addr,
            shared,
            threads,
        })
    }

    /// The bound address (with the real port when started on port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Adds or replaces routes, as `POST /_admin/add_recipe` does: same-pattern routes
    /// are replaced, others kept, and the run clock restarts for all. Blocking (may
    /// fetch origins). On error the routes in force are untouched.
    pub fn load_recipe(&self, recipe: &Recipe) -> Result<(), SimulatorError> {
        self.shared.load_recipe(recipe)
    }

    /// Stops accepting, closes all connections (requests in flight are not answered)
    /// and joins the server threads.
    pub fn stop(mut self) {
        self.threads.stop();
    }
}

impl Drop for Simulator {
    fn drop(&mut self) {
        self.threads.stop();
    }
}

/// Fully checks a recipe without serving it: reads its body files and fetches its
/// origins, as [`Simulator::start`] would, and reports the first problem.
pub fn check_recipe(recipe: &Recipe) -> Result<(), SimulatorError> {
    let shared = state::Shared::new(1, None);
    shared.load_recipe(recipe)
}

/// The demo's ground truth in requests per second: see [`demo_recipe`].
pub const DEMO_CAPACITY_RPS: f64 = 1000.0;

/// A system under test with a known knee, for `loadlab demo`.
///
/// One route, `/*`, served by a fixed pool of 100 workers, each request holding a worker
/// for a 100 ms service time. Ground truth: capacity = W / S = 100 / 0.1 s =
/// **1000 req/s** ([`DEMO_CAPACITY_RPS`]). Below it every request gets 200 after ~100 ms
/// (within about 1 ms). Above it a queue of 100 fills, so throughput holds at ~1000 req/s,
/// served latency rises to ~200 ms (100 ms of queueing), and the excess is answered 503 at
/// once. Rates of 500 and 800 req/s sit below the knee,
/// 1200 and 1500 above; all are light work for two cores.
pub fn demo_recipe() -> Recipe {
    let json = r#"{
        "route": "/*",
        "body": "<<1kb>>",
        "stages": [{"at": 0, "status": 200, "latency": "100ms"}],
        "capacity": {"workers": 100, "queue": 100, "queue_timeout": "1s", "reject_status": 503}
    }"#;
    // The text above is fixed and covered by a test; an empty recipe is the only
    // non-panicking fallback should that ever change.
    parse_recipe(json, "demo_recipe").unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demo_recipe_states_its_ground_truth() {
        let recipe = demo_recipe();
        assert_eq!(recipe.routes().collect::<Vec<_>>(), ["/*"]);
        let capacity = recipe.capacity_rps();
        assert_eq!(capacity.len(), 1);
        assert!(
            (capacity[0].1 - DEMO_CAPACITY_RPS).abs() < 1e-6,
            "{capacity:?}"
        );
    }

    #[test]
    fn bad_options_are_refused() {
        let options = SimulatorOptions {
            threads: 0,
            ..SimulatorOptions::new("127.0.0.1:0".parse().unwrap())
        };
        let err = Simulator::start(options, &Recipe::default()).err().unwrap();
        assert!(err.to_string().contains("threads"), "{err}");
    }
}
