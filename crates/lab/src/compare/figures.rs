//! A matched step's figures: each of its `summary.json` row side by side
//! (`report::Row`), and whether a difference is beyond the noise, from the steps'
//! record files when both are there: each step's window (the plan's warm-up left out,
//! as the verdict does) cut into one-second windows and bootstrapped by
//! [`report::compare_runs`], the test `loadlab compare` uses on record files.

use std::path::Path;

use analysis::Direction;
use record::ErrorKind;
use report::{Row, RunFigures, Unit, compare_runs};

use super::inputs::Side;
use super::model::StepLine;
use crate::LabError;
use crate::folder::StepRow;

/// A figure of a step row: its name, unit, better direction, value, and the row of
/// [`report::compare_runs`] that holds its per-second noise (None: a whole-window
/// figure with no per-second samples).
struct Figure {
    name: &'static str,
    unit: Unit,
    direction: Option<Direction>,
    value: fn(&StepRow) -> Option<f64>,
    noise_row: Option<&'static str>,
}

const FIGURES: [Figure; 8] = {
    use Direction::{HigherIsBetter as Higher, LowerIsBetter as Lower};
    [
        Figure {
            name: "requests",
            unit: Unit::Count,
            direction: None,
            value: |r| Some(r.requests as f64),
            noise_row: None,
        },
        Figure {
            name: "achieved/s",
            unit: Unit::PerSec,
            direction: Some(Higher),
            value: |r| Some(r.achieved_per_sec),
            noise_row: Some("rate"),
        },
        Figure {
            name: "success",
            unit: Unit::Ratio,
            direction: Some(Higher),
            value: |r| Some(r.success),
            noise_row: Some("success"),
        },
        Figure {
            name: "p50",
            unit: Unit::Millis,
            direction: Some(Lower),
            value: |r| r.p50_ms,
            noise_row: Some("latency p50"),
        },
        Figure {
            name: "p90",
            unit: Unit::Millis,
            direction: Some(Lower),
            value: |r| r.p90_ms,
            noise_row: Some("latency p90"),
        },
        Figure {
            name: "p99",
            unit: Unit::Millis,
            direction: Some(Lower),
            value: |r| r.p99_ms,
            noise_row: Some("latency p99"),
        },
        Figure {
            name: "max",
            unit: Unit::Millis,
            direction: Some(Lower),
            value: |r| r.max_ms,
            noise_row: None,
        },
        Figure {
            name: "send lag p99",
            unit: Unit::Millis,
            direction: Some(Lower),
            value: |r| Some(r.lag_p99_ms),
            noise_row: None,
        },
    ]
};

pub(super) fn step_line(sides: &[Side], matched: &[Option<&StepRow>]) -> StepLine {
    let a = matched[0].expect("A's own step");
    let (noise, noise_note) = step_noise(sides, matched);
    let versus_noise = |b: usize, row: Option<&str>| -> Option<analysis::Difference> {
        let comparison = noise.as_ref()?.get(b)?.as_ref()?;
        let row = row?;
        comparison
            .rows
            .iter()
            .find(|r| r.name == row)?
            .versus
            .first()?
            .noise
    };
    let mut rows: Vec<Row> = FIGURES
        .iter()
        .map(|figure| {
            let values: Vec<Option<f64>> =
                matched.iter().map(|m| m.and_then(figure.value)).collect();
            Row::new(
                figure.name.to_owned(),
                figure.unit,
                figure.direction,
                values,
                |b| versus_noise(b, figure.noise_row),
            )
        })
        .collect();
    for kind in error_kinds(matched) {
        let values = matched
            .iter()
            .map(|m| m.map(|m| m.errors.get(&kind).copied().unwrap_or(0) as f64))
            .collect();
        // Transport kinds have a per-second count in the record files; an HTTP status
        // is one of many under the report's `errors status`, so it has none of its own.
        let noise_row = ErrorKind::ALL
            .iter()
            .find(|k| k.name() == kind && **k != ErrorKind::Status)
            .map(|k| format!("errors {}", k.name()));
        rows.push(Row::new(
            format!("errors {kind}"),
            Unit::Count,
            Some(Direction::LowerIsBetter),
            values,
            |b| versus_noise(b, noise_row.as_deref()),
        ));
    }
    StepLine {
        variant: joined_names(matched.iter().flatten().map(|m| m.variant.as_str())),
        offer: a.offer(),
        params: a.params.clone(),
        kind: a.kind,
        repeat: a.repeat,
        steps: matched.iter().map(|m| m.map(|m| m.step.clone())).collect(),
        verdicts: matched.iter().map(|m| m.map(|m| m.verdict)).collect(),
        noise: noise_note,
        rows,
    }
}

fn error_kinds(matched: &[Option<&StepRow>]) -> Vec<String> {
    let mut kinds: Vec<String> = matched
        .iter()
        .flatten()
        .flat_map(|m| m.errors.keys().cloned())
        .collect();
    kinds.sort();
    kinds.dedup();
    kinds
}

/// Per side after A, the record files' comparison of the step's windows (None for a
/// side without one), and the sentence that says how the noise was judged.
fn step_noise(
    sides: &[Side],
    matched: &[Option<&StepRow>],
) -> (Option<Vec<Option<report::Comparison>>>, String) {
    let single = "a single run, without both record files: no noise estimate";
    let mut figures = Vec::new();
    for (side, row) in sides.iter().zip(matched) {
        let Some(row) = row else {
            figures.push(None);
            continue;
        };
        let Some(path) = row
            .records
            .as_ref()
            .map(|p| side.dir.join(p))
            .filter(|p| p.is_file())
        else {
            if figures.is_empty() {
                return (None, single.to_owned());
            }
            figures.push(None);
            continue;
        };
        match window_figures(&path, warmup_ns(&side.dir)) {
            Ok(Some(f)) => figures.push(Some(f)),
            Ok(None) if figures.is_empty() => {
                return (
                    None,
                    "A's step window holds no requests: no noise estimate".to_owned(),
                );
            }
            Ok(None) => figures.push(None),
            Err(err) => {
                return (
                    None,
                    format!("record files unreadable ({err}): no noise estimate"),
                );
            }
        }
    }
    let Some(Some(a)) = figures.first() else {
        return (None, single.to_owned());
    };
    let comparisons: Vec<Option<report::Comparison>> = figures
        .iter()
        .map(|b| b.as_ref().map(|b| compare_runs(&[a.clone(), b.clone()])))
        .collect();
    let with_records = comparisons[1..].iter().filter(|c| c.is_some()).count();
    let note = if with_records == 0 {
        single
    } else if with_records == comparisons.len() - 1 {
        "95% block bootstrap of the per-second windows of both record files (warm-up left out)"
    } else {
        "95% block bootstrap of the per-second windows where both record files exist; n/a where a side has none: a single run without noise estimate"
    };
    (Some(comparisons), note.to_owned())
}

/// The plan's warm-up, from the run folder's `plan.toml` (0 when it cannot be read:
/// the noise then includes the warm-up's seconds).
fn warmup_ns(dir: &Path) -> u64 {
    let Ok(text) = std::fs::read_to_string(dir.join("plan.toml")) else {
        return 0;
    };
    let Ok(plan) = text.parse::<toml::Table>() else {
        return 0;
    };
    plan.get("load")
        .and_then(|load| load.get("warmup"))
        .and_then(toml::Value::as_str)
        .and_then(|text| units::parse_duration(text).ok())
        .map_or(0, |d| d.as_nanos() as u64)
}

/// A step's record file, from the warm-up's end, as the report's figures and per-second
/// windows; None when the window holds no request.
pub fn window_figures(path: &Path, warmup_ns: u64) -> Result<Option<RunFigures>, LabError> {
    match report::read_record_window(&path.display().to_string(), warmup_ns) {
        Ok(figures) => Ok(Some(figures)),
        Err(report::ReportError::Record(record::RecordError::Empty { .. })) => Ok(None),
        Err(err) => Err(LabError::Folder(err.to_string())),
    }
}

/// The variant names of the sides: one name when they agree.
pub(super) fn joined_names<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let mut distinct: Vec<&str> = Vec::new();
    for name in names {
        if !distinct.contains(&name) {
            distinct.push(name);
        }
    }
    distinct.join(" vs ")
}
