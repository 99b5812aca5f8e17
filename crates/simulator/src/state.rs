//! State shared by all server threads, and each thread's lock-free view of it.
//!
//! The current [`Table`] sits behind a mutex that only recipe loads, admin reads and
//! scrapes take. Request threads keep their own `Rc` of the table and compare one
//! generation number per request; only after a reload does a thread take the mutex,
//! once, to pick up the new table. So readers never block each other or the request
//! path, and no shared reference count is touched per request.

use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rand::SeedableRng;
use rand::rngs::SmallRng;

use crate::SimulatorOptions;
use crate::body_file::FileAccess;
use crate::budget::Budget;
use crate::error::SimulatorError;
use crate::metrics::{PoolRow, Registry, StageRow, ThreadStats};
use crate::recipe::Recipe;
use crate::table::{Table, build_routes};

pub(crate) struct Shared {
    generation: AtomicU64,
    table: Mutex<Arc<Table>>,
    /// Serialises recipe loads so two `add_recipe` calls cannot lose each other's routes.
    load_lock: Mutex<()>,
    pub registry: Mutex<Registry>,
    pub threads: Vec<Arc<ThreadStats>>,
    /// Counter values at the last `clear_current_count`.
    pub baseline: Mutex<Vec<u64>>,
    pub unmatched_slot: usize,
    pub unmatched_label: usize,
    pub bad_request_label: usize,
    /// Counter slots for requests refused before routing, by status.
    pub refusal_slots: Vec<(u16, usize)>,
    seed: Option<u64>,
    seed_counter: AtomicU64,
    /// The last `{{id}}` handed out: ids are unique across threads and reloads.
    pub answer_ids: AtomicU64,
    /// Who may use `/_admin`: see [`crate::access::Access`].
    pub access: crate::access::Access,
    /// The canonical directory posted recipes may read body files from.
    files_dir: Option<PathBuf>,
    max_body_bytes: u64,
    max_recipe_memory_bytes: u64,
    /// The TLS acceptor and certificate, when serving TLS.
    pub tls: Option<crate::tls::TlsSetup>,
    /// HTTP/2 `SETTINGS_MAX_CONCURRENT_STREAMS`.
    pub max_concurrent_streams: u32,
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section here leaves its data consistent, so a panic elsewhere
    // while holding the lock does not make the data unusable.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    /// Shared state for `options`; checks the admin token and the files directory.
    pub fn new(options: SimulatorOptions) -> Result<Self, SimulatorError> {
        let SimulatorOptions {
            addr: _,
            threads,
            seed,
            admin_token,
            files_dir,
            max_body_bytes,
            max_recipe_memory_bytes,
            tls,
            max_concurrent_streams,
        } = options;
        if max_concurrent_streams == 0 {
            return Err(SimulatorError::Option {
                option: "max-streams",
                message: "must be at least 1".to_owned(),
            });
        }
        let tls = tls.as_ref().map(crate::tls::setup).transpose()?;
        let access = crate::access::Access::new(admin_token.as_deref())?;
        let files_dir = files_dir.as_deref().map(canonical_dir).transpose()?;
        let mut registry = Registry::new();
        let unmatched_label = registry.route_label(crate::metrics::UNMATCHED_ROUTE);
        let unmatched_slot = registry.counter_slot(unmatched_label, "406");
        let bad_request_label = registry.route_label(crate::metrics::BAD_REQUEST_ROUTE);
        let refusal_slots = [400, 413, 431, 501]
            .into_iter()
            .map(|status| {
                (
                    status,
                    registry.counter_slot(bad_request_label, &status.to_string()),
                )
            })
            .collect();
        Ok(Self {
            generation: AtomicU64::new(0),
            table: Mutex::new(Arc::new(Table::empty())),
            load_lock: Mutex::new(()),
            registry: Mutex::new(registry),
            threads: (0..threads).map(|_| Arc::new(ThreadStats::new())).collect(),
            baseline: Mutex::new(Vec::new()),
            unmatched_slot,
            unmatched_label,
            bad_request_label,
            refusal_slots,
            seed,
            seed_counter: AtomicU64::new(0),
            answer_ids: AtomicU64::new(0),
            access,
            files_dir,
            max_body_bytes,
            max_recipe_memory_bytes,
            tls,
            max_concurrent_streams,
        })
    }

    /// A random generator for one thread or one load: seeded when the options ask for
    /// reproducible runs, from the OS otherwise.
    pub fn rng(&self) -> SmallRng {
        match self.seed {
            Some(seed) => SmallRng::seed_from_u64(
                seed.wrapping_add(self.seed_counter.fetch_add(1, Ordering::Relaxed)),
            ),
            None => SmallRng::from_os_rng(),
        }
    }

    /// Counter slot for a refusal status (slot 0, "other", if not pre-registered).
    pub fn refusal_slot(&self, status: u16) -> usize {
        self.refusal_slots
            .iter()
            .find(|(s, _)| *s == status)
            .map_or(0, |(_, slot)| *slot)
    }

    pub fn current(&self) -> Arc<Table> {
        Arc::clone(&lock(&self.table))
    }

    fn install(&self, table: Table) {
        *lock(&self.table) = Arc::new(table);
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// Builds `recipe` (blocking: may read files and fetch origins) and merges it into
    /// the routes in force. On error nothing changes.
    ///
    /// Loads run one at a time, building included, so that the memory cap counts what
    /// the routes kept from the table in force already hold and two loads cannot each
    /// spend the same room.
    pub fn load_recipe(&self, recipe: &Recipe) -> Result<(), SimulatorError> {
        let _serial = lock(&self.load_lock);
        let current = self.current();
        let kept_bytes: u64 = current
            .routes
            .iter()
            .filter(|route| !recipe.routes().any(|pattern| pattern == route.pattern))
            .map(|route| route.held_bytes)
            .sum();
        let mut budget = Budget::new(
            self.max_body_bytes,
            self.max_recipe_memory_bytes,
            kept_bytes,
        );
        let access = if recipe.posted {
            FileAccess::Confined(self.files_dir.as_deref())
        } else {
            FileAccess::Operator
        };
        let routes = build_routes(recipe, &self.registry, access, &mut budget, &mut self.rng())?;
        self.install(current.merged(routes));
        Ok(())
    }

    /// Drops every route: origin_simulator's `restart`.
    pub fn restart(&self) {
        let _serial = lock(&self.load_lock);
        self.install(Table::empty());
    }

    /// Pool and stage rows of the table in force, for `/metrics`.
    pub fn route_rows(&self) -> (Vec<PoolRow>, Vec<StageRow>, f64) {
        let table = self.current();
        let now = std::time::Instant::now();
        let elapsed_ns = table.elapsed_ns(now);
        let mut pools = Vec::new();
        let mut stages = Vec::new();
        for route in &table.routes {
            let stage = route.stage_at(elapsed_ns);
            stages.push(StageRow {
                route: route.pattern.clone(),
                stage: stage.map_or(-1, |s| s as i64),
            });
            if let Some(capacity) = &route.capacity {
                let capacity_rps = stage
                    .and_then(|s| capacity.capacity_rps.get(s))
                    .copied()
                    .unwrap_or(0.0);
                pools.push(PoolRow {
                    route: route.pattern.clone(),
                    stats: capacity.pool.stats(),
                    capacity_rps,
                });
            }
        }
        (pools, stages, elapsed_ns as f64 / 1e9)
    }
}

/// `-files DIR` resolved once, so confinement compares canonical paths.
fn canonical_dir(dir: &Path) -> Result<PathBuf, SimulatorError> {
    let option_error = |message: String| SimulatorError::Option {
        option: "files",
        message,
    };
    let canonical = dir
        .canonicalize()
        .map_err(|e| option_error(format!("{}: {e}", dir.display())))?;
    if !canonical.is_dir() {
        return Err(option_error(format!("{}: not a directory", dir.display())));
    }
    Ok(canonical)
}

/// A thread's handle on the table in force. Wrapping the `Arc` lets the thread hand out
/// `Rc`s of it: cloning those is a plain increment, where cloning the `Arc` would be an
/// atomic on a cache line every thread shares.
pub(crate) struct LocalTable(Arc<Table>);

impl std::ops::Deref for LocalTable {
    type Target = Table;

    fn deref(&self) -> &Table {
        &self.0
    }
}

/// One thread's cached table. `Rc` clones are thread-local, so handing the table to a
/// request costs no atomic operation.
pub(crate) struct LocalView {
    generation: Cell<u64>,
    table: RefCell<Rc<LocalTable>>,
}

impl LocalView {
    pub fn new(shared: &Shared) -> Self {
        Self {
            generation: Cell::new(shared.generation.load(Ordering::Acquire)),
            table: RefCell::new(Rc::new(LocalTable(shared.current()))),
        }
    }

    /// The table in force; refreshes from `shared` after a reload.
    pub fn table(&self, shared: &Shared) -> Rc<LocalTable> {
        let generation = shared.generation.load(Ordering::Acquire);
        if generation != self.generation.get() {
            *self.table.borrow_mut() = Rc::new(LocalTable(shared.current()));
            self.generation.set(generation);
        }
        Rc::clone(&self.table.borrow())
    }
}
