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
//! Two tables come out of a comparison: per variant, the capacity held (its maximum
//! rate, or its most users when its steps were users: [`Capacity`]) with the
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

use analysis::SpanJudgement;
use report::{CompareFormat, TraceStoreHandle};

pub use crate::folder::Capacity;
pub use figures::window_figures;
pub use gate::{FolderRegression, GATED_FIGURES};
pub use inputs::{CompareArgs, FolderInput, Side, classify, read_summary, sides};
pub use matching::compare_sides;
pub use model::{FolderComparison, StepLine, VariantLine};

use crate::LabError;
use crate::folder::RunSummary;

/// Reads `inputs`, prints their comparison to `out` in `format`, and returns the
/// regressions beyond `threshold` (none without one). With `store` (`-trace-store`),
/// each side's variants also say where the slow traced requests' time went in the step
/// where their limit shows, and which span moved most from A.
pub fn run_compare_folders(
    inputs: &[FolderInput],
    format: CompareFormat,
    (threshold, store): (Option<f64>, Option<&TraceStoreHandle>),
    out: &mut dyn std::io::Write,
) -> Result<Vec<FolderRegression>, LabError> {
    let sides = sides(inputs)?;
    let comparison = compare_sides(&sides);
    let write = |err: std::io::Error| LabError::Folder(format!("writing the comparison: {err}"));
    let judged = store.map_or_else(Vec::new, |store| side_spans(&sides, store));
    let spans: Vec<(&str, Option<&SpanJudgement>)> = (judged.iter())
        .map(|(name, spans)| (name.as_str(), spans.as_ref()))
        .collect();
    out.write_all(with_spans_json(comparison.render(format), format, &spans).as_bytes())
        .map_err(write)?;
    if format != CompareFormat::Json {
        let block = report::ran_out_block(format, &ran_out_first(&sides));
        out.write_all(block.as_bytes()).map_err(write)?;
        let markdown = format == CompareFormat::Markdown;
        let block = report::compare_spans_block(&spans, markdown);
        out.write_all(block.as_bytes()).map_err(write)?;
    }
    out.flush().map_err(write)?;
    Ok(threshold.map_or_else(Vec::new, |t| comparison.regressions(t)))
}

/// The JSON comparison with each side's span judgement and the span that moved
/// (`report::compare_spans_json`, as compare of record files writes them) added to
/// its object; other formats, or no judgement, as they are.
fn with_spans_json(
    rendered: String,
    format: CompareFormat,
    spans: &[(&str, Option<&SpanJudgement>)],
) -> String {
    let mut tail = String::new();
    report::compare_spans_json(&mut tail, spans);
    if format != CompareFormat::Json || tail.is_empty() {
        return rendered;
    }
    let extra: Result<serde_json::Map<String, serde_json::Value>, _> =
        serde_json::from_str(&format!("{{{}}}", &tail[1..]));
    match (serde_json::from_str::<serde_json::Value>(&rendered), extra) {
        (Ok(serde_json::Value::Object(mut object)), Ok(extra)) => {
            object.extend(extra);
            let mut json = serde_json::to_string_pretty(&object).unwrap_or(rendered);
            json.push('\n');
            json
        }
        _ => rendered,
    }
}

/// Per side and variant (`DIR#VARIANT`), where the slow traced requests' time went in
/// its step where the limit shows ([`RunSummary::ran_out_first`]; else its last step),
/// judged once from that step's record files as `report -trace-store` judges them;
/// `None` for a variant whose step left no record file.
fn side_spans(sides: &[Side], store: &TraceStoreHandle) -> Vec<(String, Option<SpanJudgement>)> {
    let mut judged = Vec::new();
    for side in sides {
        let ran_out = side.summary.ran_out_first();
        let mut variants: Vec<&str> = Vec::new();
        for step in &side.summary.steps {
            if !variants.contains(&step.variant.as_str()) {
                variants.push(&step.variant);
            }
        }
        for variant in variants {
            if (side.variant.as_deref()).is_some_and(|picked| picked != variant) {
                continue;
            }
            let last = (side.summary.steps.iter()).rfind(|s| s.variant == variant);
            let Some(step) = (ran_out.iter())
                .find_map(|(v, step)| (*v == variant).then_some(*step))
                .or(last)
            else {
                continue;
            };
            let name = match side.variant {
                Some(_) => side.name.clone(),
                None => format!("{}#{variant}", side.name),
            };
            let files: Vec<String> = (step.records.iter().chain(&step.shards))
                .map(|file| side.dir.join(file).display().to_string())
                .collect();
            judged.push((name, step_spans(&files, store)));
        }
    }
    judged
}

/// The span judgement of one step's record files (none: `None`).
fn step_spans(files: &[String], store: &TraceStoreHandle) -> Option<SpanJudgement> {
    if files.is_empty() {
        return None;
    }
    let mut config = report::ReportConfig::new(report::ReportType::Text, None, None).ok()?;
    config.trace_store = Some(store.clone());
    let (mut sink, mut warnings) = (std::io::sink(), std::io::sink());
    report::run_report(files, &config, &mut sink, &mut warnings)
        .ok()?
        .spans
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
