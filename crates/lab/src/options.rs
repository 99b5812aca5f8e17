//! [`RunOptions`]: where a plan runs and what the caller plugs into each step (the
//! CLI's monitor, live view, dashboard and Prometheus), so this crate needs none of
//! them.

use std::io::Write;
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
    /// Makes what watches one step (`attack`'s watchers: its live view, Prometheus,
    /// its dashboard); without it, steps run unwatched.
    pub watch: Option<WatchFactory>,
    /// Where each step's slow traced requests' traces are read back from (the plan's
    /// `trace_store`, or `run -trace-store`); without it, no step reads any.
    pub trace_store: Option<report::TraceStoreHandle>,
}

/// Where a step's records go: its `records.llr`, or a writer that also hands a copy
/// to whatever reads them live (a dashboard).
pub type StepOutput = Box<dyn Write + Send>;

/// What watches one step: called with the step's run, the plan's stop handle (a
/// view's quit key stops the plan, as Ctrl-C does), the step's record output and its
/// name (the record file), it returns the output to write to and the watch.
#[derive(Clone)]
pub struct WatchFactory(pub Arc<MakeWatch>);

/// See [`WatchFactory`].
pub type MakeWatch =
    dyn Fn(&RunConfig, &StopHandle, StepOutput, &str) -> (StepOutput, Option<Watch>) + Send + Sync;

/// One step's watch: the engine feeds `observer`; `finish` ends it.
pub struct Watch {
    /// Watches the step's run from the collector thread.
    pub observer: Box<dyn RunObserver>,
    /// Called once the step's run is over and its output closed, with whether the run
    /// completed (a failed one leaves no summary line).
    pub finish: Box<dyn FnOnce(bool)>,
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
