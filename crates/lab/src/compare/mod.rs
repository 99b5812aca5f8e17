//! `loadlab compare` over run folders: two or more runs of a plan side by side (before
//! and after a change), or variants of one run against each other (`DIR#VARIANT`, or a
//! single folder: every variant against the plan's first, its baseline).
//!
//! One idea in three layers: `analysis::compare` is the statistics (a seeded block
//! bootstrap of two series of per-second samples), `report::compare` the comparison of
//! record files and the model of every comparison (`report::Row`: each input's value,
//! each against A, the noise; `report::Versus`; the regression rule), and this module
//! the comparison of run folders, whose steps it matches and whose figures it puts in
//! `report::Row`s, their noise from `report::compare_runs` over the steps' record files.
//!
//! Two tables come out of a comparison: per variant, the maximum rate held with the
//! improvement factor against A; per matching step (the same variant, kind, offered rate
//! or users, axis values and repeat), every figure of its `summary.json` row with the
//! absolute and relative difference. Whether a step's difference is beyond the noise
//! comes from its record files when both are there: each step's window (the plan's
//! warm-up left out, as the verdict does) is cut into one-second windows and
//! [`report::compare_runs`] bootstraps them, the test `loadlab compare` uses on record
//! files. Without both record files a step is a single run with no noise estimate, and
//! says so; a maximum rate held is one search or sweep per side, so it never has one.
//!
//! By job: `inputs` (the sides), `matching` (which step matches which), `figures` (a
//! matched step's rows and noise), `gate` (regressions), `render` (text, Markdown,
//! JSON), `model` (what they share).

mod figures;
mod gate;
mod inputs;
mod matching;
mod model;
mod render;

#[cfg(test)]
mod tests;

use report::CompareFormat;

pub use figures::window_figures;
pub use gate::{FolderRegression, GATED_FIGURES};
pub use inputs::{CompareArgs, FolderInput, Side, classify, read_summary, sides};
pub use matching::compare_sides;
pub use model::{FolderComparison, StepLine, VariantLine};

use crate::LabError;
use crate::folder::RunSummary;

/// Reads `inputs`, prints their comparison to `out` in `format`, and returns the
/// regressions beyond `threshold` (none without one).
pub fn run_compare_folders(
    inputs: &[FolderInput],
    format: CompareFormat,
    threshold: Option<f64>,
    out: &mut dyn std::io::Write,
) -> Result<Vec<FolderRegression>, LabError> {
    let sides = sides(inputs)?;
    let comparison = compare_sides(&sides);
    let write = |err: std::io::Error| LabError::Folder(format!("writing the comparison: {err}"));
    out.write_all(comparison.render(format).as_bytes())
        .map_err(write)?;
    if format != CompareFormat::Json {
        let block = report::ran_out_block(format, &ran_out_first(&sides));
        out.write_all(block.as_bytes()).map_err(write)?;
    }
    out.flush().map_err(write)?;
    Ok(threshold.map_or_else(Vec::new, |t| comparison.regressions(t)))
}

/// Each side's variants with what ran out first in their steps (`summary.md`'s), by
/// `DIR#VARIANT`: the first sentence of the step's diagnosis, with its step.
fn ran_out_first(sides: &[Side]) -> Vec<(String, String)> {
    let mut lines = Vec::new();
    for side in sides {
        for (variant, step) in side.summary.ran_out_first() {
            if side
                .variant
                .as_deref()
                .is_some_and(|picked| picked != variant)
            {
                continue;
            }
            let name = match side.variant {
                Some(_) => side.name.clone(),
                None => format!("{}#{variant}", side.name),
            };
            if let Some(headline) = step.diagnosis.first() {
                let lead = RunSummary::ran_out_lead(step);
                lines.push((name, format!("{lead}: {headline}")));
            }
        }
    }
    lines
}
