//! [`RunOptions`]: where a plan runs and what the caller plugs into each step (the
//! CLI's monitor, live view, dashboard and Prometheus), so this crate needs none of
//! them.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use engine::{RunConfig, RunObserver, SampleFeed, StopHandle};

/// Where and how to run a plan.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// The run folder.
    pub output: PathBuf,
    /// Continue the run in `output`, skipping the cells its summary holds.
    pub resume: bool,
    /// Makes the samplers of the plan's `monitor` specs for one step; without it,
    /// the specs are not sampled.
    pub monitor: Option<MonitorFactory>,
    /// Makes a live view for one step; without it, steps run unwatched.
    pub watch: Option<WatchFactory>,
}

/// A step's live view (the CLI's terminal view): called with the step's attack and
/// the plan's stop handle (a view's quit key stops the plan, as Ctrl-C does), it
/// returns the observer and what to call once the step is over.
#[derive(Clone)]
pub struct WatchFactory(pub Arc<MakeWatch>);

/// See [`WatchFactory`].
pub type MakeWatch = dyn Fn(&RunConfig, &StopHandle) -> Option<Watch> + Send + Sync;

/// One step's live view: the engine feeds `observer`; `finish` ends the display.
pub struct Watch {
    /// Watches the step's run from the collector thread.
    pub observer: Box<dyn RunObserver>,
    /// Stops the display once the step's run is over.
    pub finish: Box<dyn FnOnce()>,
}

impl std::fmt::Debug for WatchFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WatchFactory")
    }
}

/// A step's samplers from the plan's `monitor` specs and interval (the CLI's
/// `attack -monitor`, so this crate needs no monitor of its own).
#[derive(Clone)]
pub struct MonitorFactory(pub Arc<MakeMonitor>);

/// See [`MonitorFactory`].
pub type MakeMonitor =
    dyn Fn(&[String], Duration) -> Result<Box<dyn SampleFeed>, String> + Send + Sync;

impl std::fmt::Debug for MonitorFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MonitorFactory")
    }
}
