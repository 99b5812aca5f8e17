//! Experiments: `loadlab run PLAN`. A plan (a TOML file, [`Plan`]) names the systems
//! compared (variants), the load steps and the SLO that judges each step; the runner
//! ([`run_plan`]) turns it into cells, runs each as a normal attack whose record file is
//! kept, judges each step on its own window (warm-up excluded, the generator's health
//! always checked, [`analysis::judge`]) and writes a run folder that is the write-up.
//!
//! - [`plan`]: the TOML model and its line-precise checks.
//! - `cells`: a plan's cells (variant x step x axes x repeats) and the `{{name}}`
//!   substitution of hooks.
//! - `hooks`: `setup`/`ready`/`teardown` shell commands with a timeout.
//! - `step`: one cell: hooks, an [`engine::run`] into `records.llr`, its summary.
//! - `sharded`: a step run as N shards (`[load] shards`): its scenarios file, the
//!   shards' commands (local, a template, `kube run`), their wait and failures.
//! - `summarise`: a step's record file to an [`analysis::StepSummary`] of its window;
//!   `held`: its held connections and messages from the stats samples.
//! - `folder`: the run folder (`plan.toml` redacted, `log.txt`, `summary.json`,
//!   `summary.md`, `index.html`); `index_page`: `index.html` from the summary's rows,
//!   drawn with [`plot::ChartPage`]; each step's `plot.html` is [`plot::RunPlot`]'s page.
//! - [`compare`]: `loadlab compare` over run folders and per-variant results
//!   (`DIR#VARIANT`): max rate held and every step figure side by side, the noise from
//!   the steps' record files.
//! - [`ci`]: JUnit XML and a Markdown summary for CI jobs, worded from the step rows.
//! - `runner`: sweep, search and matrix; `-resume`; an interrupted plan's summary is
//!   marked incomplete.
//!
//! Errors are [`LabError`]; plan errors name the file, line and field.

#![warn(missing_docs)]

mod cells;
pub mod ci;
pub mod compare;
mod folder;
mod hooks;
mod index_page;
mod options;
pub mod plan;
mod reach;
mod runner;
mod sharded;
mod step;
mod step_fields;
mod summarise;

use std::path::PathBuf;

pub use folder::held_rows::{ConnectionsRow, HeldAnswer};
pub use folder::{
    CellStats, RunSummary, ScenarioRow, StepKind, StepRow, StepVerdict, VariantResult, redact,
};
pub use options::{
    MakeMonitor, MakeWatch, MonitorFactory, RunOptions, StepOutput, Watch, WatchFactory,
};
pub use plan::{Mode, Plan};
pub use runner::run_plan;
pub use summarise::{Figures, Window, summarise};

/// Why a plan could not be read or run.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// A plan file field with a bad value (or a typo), with its line.
    #[error("{source_name}:{line}: {field}{}{reason}", if field.is_empty() { "" } else { ": " })]
    Plan {
        /// The plan file as given.
        source_name: String,
        /// The 1-based line.
        line: u64,
        /// The field as the plan spells it, e.g. `slo.success`.
        field: String,
        /// What is wrong.
        reason: String,
    },
    /// A file or folder could not be read or written.
    #[error("{}: {cause}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The I/O error underneath, said in the message (not a `source`, so a
        /// chain of causes does not say it twice).
        cause: std::io::Error,
    },
    /// The run folder is in a state the options do not allow.
    #[error("{0}")]
    Folder(String),
    /// An attack or run field of the plan (as `attack` reads them) with a bad value;
    /// the message names the plan file, the line and the field.
    #[error(transparent)]
    Fields(#[from] workload::WorkloadError),
    /// A step's targets did not answer a connect: the plan stopped before sending.
    #[error("{0}")]
    Unreachable(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_io_error_is_said_once_in_a_chain_of_causes() {
        let err = LabError::Io {
            path: PathBuf::from("/runs/night/summary.json"),
            cause: std::io::Error::other("disk full"),
        };
        assert_eq!(
            units::error_chain(&err),
            "/runs/night/summary.json: disk full"
        );
    }
}
