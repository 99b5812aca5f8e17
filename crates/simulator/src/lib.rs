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
//! - [`SimulatorOptions`]: address (port 0 picks a free one), thread count, [`Tls`],
//!   HTTP/2's concurrent-stream limit.
//!
//! Inside: one current-thread tokio runtime per thread, each with its own
//! `SO_REUSEPORT` listener. Each connection is HTTP/1.1 or HTTP/2, decided once
//! (`negotiate`: ALPN over TLS (`tls`), a peek for the h2c preface in cleartext).
//! HTTP/1.1 is served by hand-written code (`http`, `conn`, `respond`), HTTP/2 by the
//! `h2` crate (`conn_h2`, `respond_h2`); both hand requests to the same routing
//! (`dispatch`, `admin`), so recipes, stages, the capacity model and the admin API
//! behave alike, and only the wire form of answers and failure modes differs.
//! Recipes become immutable tables (`table`) swapped in by generation number
//! (`state`); counters are per thread (`metrics`); the pool (`pool`) is the one
//! structure threads share on the request path, and only for capacity-model routes.
//!
//! The modules in layers, each using only the ones before it: the recipe's pieces
//! (`duration_size`, `latency`, `failure`, `body_file`, `origin`, `body`, `recipe`);
//! what is served (`table`, `pool`, `metrics`, `state`, `access`); a thread's state
//! (`worker`) and the answer model (`reply`, with the request as routing sees it in
//! `http`); deciding answers (`admin`, `dispatch`); writing them (`respond`,
//! `respond_h2`); connections (`conn`, `conn_h2`, `negotiate`); the listeners
//! (`server`).

#![warn(missing_docs)]

mod access;
mod admin;
mod app;
mod body;
mod body_file;
mod budget;
mod conn;
mod conn_h2;
mod date;
mod dispatch;
mod duration_size;
mod error;
mod failure;
mod grpc;
mod grpc_reflection;
mod http;
mod latency;
mod metrics;
mod negotiate;
mod origin;
mod pool;
mod recipe;
mod recipe_fields;
mod reply;
mod request;
mod respond;
mod respond_h2;
mod server;
mod state;
mod stream;
mod table;
mod template;
mod tls;
mod worker;

#[cfg(test)]
mod proptests;

use std::net::SocketAddr;
use std::sync::Arc;

pub use error::SimulatorError;
pub use recipe::{Recipe, parse_recipe, parse_recipe_file};

/// Default cap on one body a recipe makes the simulator hold (`simulate -max-body-size`).
pub const DEFAULT_MAX_BODY_BYTES: u64 = 64 * 1024 * 1024;
/// Default cap on all bodies of the routes in force (`simulate -max-recipe-memory`).
pub const DEFAULT_MAX_RECIPE_MEMORY_BYTES: u64 = 512 * 1024 * 1024;
/// Default HTTP/2 `SETTINGS_MAX_CONCURRENT_STREAMS` (`simulate -max-streams`): Go's
/// net/http server's, between nginx's 128 and h2's unlimited.
pub const DEFAULT_MAX_CONCURRENT_STREAMS: u32 = 250;

/// Serve TLS (`simulate -tls`), with ALPN `h2` and `http/1.1`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tls {
    /// A self-signed certificate generated at start for `localhost`, `127.0.0.1` and
    /// `::1`; clients trust it through [`Simulator::certificate_pem`].
    SelfSigned,
    /// The operator's certificate chain and private key, PEM files.
    PemFiles {
        /// Certificate chain, leaf first.
        cert: std::path::PathBuf,
        /// Private key (PKCS#8, PKCS#1 or SEC1).
        key: std::path::PathBuf,
    },
}

/// Where and how to serve, and what the admin API may do.
#[derive(Clone, PartialEq, Eq)]
pub struct SimulatorOptions {
    /// Listening address; port 0 picks a free port (see [`Simulator::local_addr`]).
    pub addr: SocketAddr,
    /// Server threads, each with its own listener and event loop.
    pub threads: usize,
    /// Seeds the random draws (latencies, mixes, bodies) for reproducible runs.
    pub seed: Option<u64>,
    /// When set, every `/_admin` request must carry `authorization: Bearer <token>`,
    /// from any peer. When unset, `/_admin` answers loopback peers only.
    pub admin_token: Option<String>,
    /// The one directory whose files recipes posted to `/_admin/add_recipe` may serve
    /// as `body_file` (paths resolved inside it, no escape by `..` or symlinks). When
    /// unset, posted recipes may not name files. Recipes handed to [`Simulator::start`]
    /// or [`Simulator::load_recipe`] come from the operator and are not confined.
    pub files_dir: Option<std::path::PathBuf>,
    /// Largest body one route or mix entry may hold, in bytes.
    pub max_body_bytes: u64,
    /// Largest total of bodies held by all routes in force, in bytes.
    pub max_recipe_memory_bytes: u64,
    /// When set, the listener speaks TLS only (HTTP/2 or HTTP/1.1 by ALPN); when unset,
    /// cleartext HTTP/1.1 and h2c with prior knowledge on the same port.
    pub tls: Option<Tls>,
    /// HTTP/2 `SETTINGS_MAX_CONCURRENT_STREAMS` per connection, at least 1.
    pub max_concurrent_streams: u32,
}

impl SimulatorOptions {
    /// Options for `addr` with one thread per available core, random seeding, a
    /// loopback-only admin API, no files for posted recipes and the default memory caps.
    pub fn new(addr: SocketAddr) -> Self {
        let threads = std::thread::available_parallelism().map_or(1, usize::from);
        Self {
            addr,
            threads,
            seed: None,
            admin_token: None,
            files_dir: None,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_recipe_memory_bytes: DEFAULT_MAX_RECIPE_MEMORY_BYTES,
            tls: None,
            max_concurrent_streams: DEFAULT_MAX_CONCURRENT_STREAMS,
        }
    }
}

// By hand, so that printing the options never prints the admin token.
impl std::fmt::Debug for SimulatorOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimulatorOptions")
            .field("addr", &self.addr)
            .field("threads", &self.threads)
            .field("seed", &self.seed)
            .field(
                "admin_token",
                &self.admin_token.as_ref().map(|_| "REDACTED"),
            )
            .field("files_dir", &self.files_dir)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("max_recipe_memory_bytes", &self.max_recipe_memory_bytes)
            .field("tls", &self.tls)
            .field("max_concurrent_streams", &self.max_concurrent_streams)
            .finish()
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
        let addr = options.addr;
        let shared = Arc::new(state::Shared::new(options)?);
        if !recipe.routes.is_empty() {
            shared.load_recipe(recipe)?;
        }
        let (local_addr, threads) = server::Threads::start(addr, &shared)?;
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

    /// With TLS, the certificate chain served, PEM: what a client adds to its trusted
    /// roots (`attack -root-certs`). `None` in cleartext.
    pub fn certificate_pem(&self) -> Option<&str> {
        self.shared
            .tls
            .as_ref()
            .map(|tls| tls.certificate_pem.as_str())
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
/// origins, as [`Simulator::start`] with `options` would (same memory caps), and
/// reports the first problem.
pub fn check_recipe(recipe: &Recipe, options: &SimulatorOptions) -> Result<(), SimulatorError> {
    let options = SimulatorOptions {
        threads: 1,
        ..options.clone()
    };
    let shared = state::Shared::new(options)?;
    shared.load_recipe(recipe)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_options_are_refused() {
        let options = SimulatorOptions {
            threads: 0,
            ..SimulatorOptions::new("127.0.0.1:0".parse().unwrap())
        };
        let err = Simulator::start(options, &Recipe::default()).err().unwrap();
        assert!(err.to_string().contains("threads"), "{err}");
        let options = SimulatorOptions {
            max_concurrent_streams: 0,
            ..SimulatorOptions::new("127.0.0.1:0".parse().unwrap())
        };
        let err = Simulator::start(options, &Recipe::default()).err().unwrap();
        assert_eq!(
            err.to_string(),
            "simulator option max-streams: must be at least 1"
        );
    }
}
