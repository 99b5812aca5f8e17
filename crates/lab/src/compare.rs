//! `loadlab compare` over run folders: two or more runs of a plan side by side (before
//! and after a change), or variants of one run against each other (`DIR#VARIANT`, or a
//! single folder: every variant against the plan's first, its baseline).
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

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use analysis::Direction;
use record::ErrorKind;
use report::{CompareFormat, RunFigures, compare_runs, side_letter};
use serde::Serialize;

use crate::LabError;
use crate::cells::format_rate;
use crate::folder::{RunSummary, StepKind, StepRow, StepVerdict};

/// One side: a whole run folder, or one variant of it (`DIR#VARIANT`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FolderInput {
    /// The run folder.
    pub dir: PathBuf,
    /// The variant picked, or every variant.
    pub variant: Option<String>,
}

impl FolderInput {
    /// The name the output uses: `DIR` or `DIR#VARIANT`.
    pub fn name(&self) -> String {
        match &self.variant {
            Some(variant) => format!("{}#{variant}", self.dir.display()),
            None => self.dir.display().to_string(),
        }
    }
}

/// What the command line named: record files, or run folders.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CompareArgs {
    /// Record files from `loadlab attack`, compared by `report`.
    RecordFiles(Vec<String>),
    /// Run folders or variants of them.
    Folders(Vec<FolderInput>),
}

/// Sorts the command line's inputs: a folder is a run folder, `DIR#VARIANT` a variant
/// of one (when `DIR` is a folder and no file has that exact name), anything else a
/// record file. Record files and folders do not mix.
pub fn classify(args: &[String]) -> Result<CompareArgs, LabError> {
    let mut files = Vec::new();
    let mut folders = Vec::new();
    for arg in args {
        match folder_input(arg) {
            Some(folder) => folders.push((arg, folder)),
            None => {
                hint_variant_syntax(arg)?;
                files.push(arg.clone());
            }
        }
    }
    match (files.first(), folders.first()) {
        (Some(file), Some((folder, _))) => Err(LabError::Folder(format!(
            "compare takes record files or run folders, not both: {folder} is a folder, {file} is not"
        ))),
        (_, None) => Ok(CompareArgs::RecordFiles(files)),
        (None, Some(_)) => Ok(CompareArgs::Folders(
            folders.into_iter().map(|(_, f)| f).collect(),
        )),
    }
}

fn folder_input(arg: &str) -> Option<FolderInput> {
    let path = Path::new(arg);
    if path.is_dir() {
        return Some(FolderInput {
            dir: path.to_owned(),
            variant: None,
        });
    }
    let (dir, variant) = arg.rsplit_once('#')?;
    (!path.exists() && Path::new(dir).is_dir()).then(|| FolderInput {
        dir: PathBuf::from(dir),
        variant: Some(variant.to_owned()),
    })
}

/// `runs/a/fixed-pool` reads like a variant's folder, but a variant is not one (its
/// steps are `steps/NNN-VARIANT-RATE`): say how to pick it instead of "no such file".
fn hint_variant_syntax(arg: &str) -> Result<(), LabError> {
    let path = Path::new(arg);
    let Some(parent) = path.parent().filter(|p| p.join("summary.json").is_file()) else {
        return Ok(());
    };
    if path.exists() {
        return Ok(());
    }
    let name = path
        .file_name()
        .map_or(String::new(), |n| n.to_string_lossy().into_owned());
    Err(LabError::Folder(format!(
        "{arg}: no such file or folder; to pick variant {name:?} of the run folder {}, write {}#{name}",
        parent.display(),
        parent.display()
    )))
}

/// Reads a run folder's `summary.json`; a missing file or bad JSON names the file (and
/// the line).
pub fn read_summary(dir: &Path) -> Result<RunSummary, LabError> {
    let path = dir.join("summary.json");
    let text = std::fs::read_to_string(&path).map_err(|source| {
        if source.kind() == std::io::ErrorKind::NotFound {
            LabError::Folder(format!(
                "{}: not found: {} is not a run folder of `loadlab run`",
                path.display(),
                dir.display()
            ))
        } else {
            LabError::Io {
                path: path.clone(),
                cause: source,
            }
        }
    })?;
    serde_json::from_str(&text).map_err(|err| {
        let message = err.to_string();
        let message = message
            .rsplit_once(" at line ")
            .map_or(message.as_str(), |(m, _)| m);
        LabError::Folder(format!("{}:{}: {message}", path.display(), err.line()))
    })
}

/// One side as compared: its name, its folder's summary and the variant it stands for.
#[derive(Clone, Debug)]
pub struct Side {
    /// `DIR` or `DIR#VARIANT`.
    pub name: String,
    /// The run folder (record paths are relative to it).
    pub dir: PathBuf,
    /// Its `summary.json`.
    pub summary: RunSummary,
    /// The variant picked; None compares the whole folder.
    pub variant: Option<String>,
}

/// Reads every input's summary; a single whole folder becomes each of its variants, the
/// first (the plan's baseline) as A.
pub fn sides(inputs: &[FolderInput]) -> Result<Vec<Side>, LabError> {
    let picked = inputs.iter().filter(|i| i.variant.is_some()).count();
    if picked != 0 && picked != inputs.len() {
        return Err(LabError::Folder(
            "compare takes whole run folders or variants (DIR#VARIANT), not both".to_owned(),
        ));
    }
    let mut sides = Vec::new();
    for input in inputs {
        let summary = read_summary(&input.dir)?;
        if let Some(variant) = &input.variant
            && !summary.variants.iter().any(|v| &v.variant == variant)
        {
            return Err(LabError::Folder(format!(
                "{}: no variant {variant:?} in its summary.json (variants: {})",
                input.dir.display(),
                variant_names(&summary)
            )));
        }
        sides.push(Side {
            name: input.name(),
            dir: input.dir.clone(),
            summary,
            variant: input.variant.clone(),
        });
    }
    match sides.as_slice() {
        [only] if only.variant.is_none() => every_variant(only),
        [_] => Err(LabError::Folder(
            "compare needs at least two inputs (a single run folder compares its variants)"
                .to_owned(),
        )),
        _ => Ok(sides),
    }
}

fn variant_names(summary: &RunSummary) -> String {
    let names: Vec<&str> = summary
        .variants
        .iter()
        .map(|v| v.variant.as_str())
        .collect();
    names.join(", ")
}

fn every_variant(side: &Side) -> Result<Vec<Side>, LabError> {
    if side.summary.variants.len() < 2 {
        return Err(LabError::Folder(format!(
            "{} has one variant ({}): give another run folder to compare it with",
            side.dir.display(),
            variant_names(&side.summary)
        )));
    }
    Ok(side
        .summary
        .variants
        .iter()
        .map(|v| Side {
            name: format!("{}#{}", side.dir.display(), v.variant),
            variant: Some(v.variant.clone()),
            ..side.clone()
        })
        .collect())
}

/// How a figure prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FigureUnit {
    /// A count.
    Count,
    /// Per second.
    #[serde(rename = "1/s")]
    PerSec,
    /// A share, printed as a percentage.
    Ratio,
    /// Milliseconds.
    Ms,
}

/// One side against A on one figure.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Against {
    /// This side's value minus A's.
    pub diff: Option<f64>,
    /// `diff` over A's value.
    pub relative: Option<f64>,
    /// How many times better than A (>1: better).
    pub improvement: Option<f64>,
    /// `beyond`, `within` or `n/a` (no per-second samples for this figure or step).
    pub noise: &'static str,
    /// The 95% bootstrap interval of the difference of per-second means, in the
    /// per-second figure's own unit (ns for latency, a share for success).
    pub interval: Option<[f64; 2]>,
}

/// One figure across every side.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FigureRow {
    /// e.g. `achieved/s`, `p99`, `errors 503`.
    pub row: String,
    /// How values print.
    pub unit: FigureUnit,
    /// `higher` or `lower` is better; None for counts that are neither.
    pub better: Option<&'static str>,
    /// Each side's value (None: the side has no such step or figure).
    pub values: Vec<Option<f64>>,
    /// Each side after A against A.
    pub versus: Vec<Against>,
}

/// A variant's maximum rate held on every side.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct VariantLine {
    /// The variant's name (`A-NAME vs B-NAME` when the sides picked different ones).
    pub variant: String,
    /// Max rate held per side, req/s.
    pub held: Vec<Option<f64>>,
    /// How each side found it (`-` when the side lacks the variant).
    pub how: Vec<String>,
    /// Each side after A against A (never a noise estimate: one result per side).
    pub versus: Vec<Against>,
}

/// How a step's noise was judged.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StepLine {
    /// The variant, or the sides' variants when they picked different ones.
    pub variant: String,
    /// `500/s`, `10 users` or `schedule`.
    pub offer: String,
    /// Axis values.
    pub params: BTreeMap<String, String>,
    /// `sweep`, `probe`, `confirm` or `matrix`.
    pub kind: StepKind,
    /// The repeat.
    pub repeat: u32,
    /// Each side's step folder name (None: no matching step).
    pub steps: Vec<Option<String>>,
    /// Each side's verdict.
    pub verdicts: Vec<Option<StepVerdict>>,
    /// How the noise was judged, or why it was not.
    pub noise: String,
    /// The figures.
    pub rows: Vec<FigureRow>,
}

/// Every side against the first.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FolderComparison {
    /// Side names, A first.
    pub inputs: Vec<String>,
    /// Per variant, the maximum rate held.
    pub variants: Vec<VariantLine>,
    /// Per step of A, the matching steps of the others.
    pub steps: Vec<StepLine>,
    /// Steps of the other sides that match no step of A.
    pub unmatched: Vec<String>,
}

/// A figure on which a side is worse than A beyond the threshold.
#[derive(Clone, Debug, PartialEq)]
pub struct FolderRegression {
    /// e.g. `max rate held of fixed-pool`, `p99 at fixed-pool 1000/s`.
    pub what: String,
    /// The side that regressed.
    pub input: String,
    /// How much worse, as a share of A's value.
    pub worse_by: f64,
    /// Whether the noise was judged (a step with record files), or not (a maximum rate
    /// held: one result per side).
    pub beyond_noise: bool,
}

/// Reads the sides' steps and compares every side with the first.
pub fn compare_sides(sides: &[Side]) -> FolderComparison {
    let selecting = sides.iter().any(|s| s.variant.is_some());
    let mut steps = Vec::new();
    let mut used: Vec<Vec<bool>> = sides
        .iter()
        .map(|s| vec![false; s.summary.steps.len()])
        .collect();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for row in &sides[0].summary.steps {
        if !side_has(&sides[0], row) {
            continue;
        }
        let key = step_key(row, selecting);
        let occurrence = seen.entry(key.clone()).or_default();
        let matched: Vec<Option<&StepRow>> = sides
            .iter()
            .zip(used.iter_mut())
            .map(|(side, used)| nth_match(side, used, &key, *occurrence, selecting))
            .collect();
        *occurrence += 1;
        steps.push(step_line(sides, &matched));
    }
    let unmatched = sides
        .iter()
        .zip(&used)
        .skip(1)
        .flat_map(|(side, used)| {
            side.summary
                .steps
                .iter()
                .zip(used)
                .filter(|(row, used)| !**used && side_has(side, row))
                .map(|(row, _)| format!("{}: {}", side.name, row.step))
        })
        .collect();
    FolderComparison {
        inputs: sides.iter().map(|s| s.name.clone()).collect(),
        variants: variant_lines(sides),
        steps,
        unmatched,
    }
}

fn side_has(side: &Side, row: &StepRow) -> bool {
    side.variant.as_ref().is_none_or(|v| *v == row.variant)
}

/// What makes two steps the same step: the variant (unless the sides picked theirs),
/// the kind, the offer, the axis values and the repeat.
fn step_key(row: &StepRow, selecting: bool) -> String {
    let variant = if selecting { "" } else { row.variant.as_str() };
    let params: Vec<String> = row.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!(
        "{variant}\u{1f}{}\u{1f}{}\u{1f}{}\u{1f}{}",
        row.kind,
        offer(row),
        params.join(","),
        row.repeat
    )
}

fn nth_match<'a>(
    side: &'a Side,
    used: &mut [bool],
    key: &str,
    nth: usize,
    selecting: bool,
) -> Option<&'a StepRow> {
    let (index, row) = side
        .summary
        .steps
        .iter()
        .enumerate()
        .filter(|(_, row)| side_has(side, row) && step_key(row, selecting) == key)
        .nth(nth)?;
    used[index] = true;
    Some(row)
}

/// `500/s`, `10 users` or `schedule`.
fn offer(row: &StepRow) -> String {
    match (row.rate_asked, row.users) {
        (Some(rate), _) => format!("{}/s", format_rate(rate)),
        (None, Some(users)) => format!("{users} users"),
        (None, None) => "schedule".to_owned(),
    }
}

/// The variant names of the sides: one name when they agree.
fn joined_names<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let mut distinct: Vec<&str> = Vec::new();
    for name in names {
        if !distinct.contains(&name) {
            distinct.push(name);
        }
    }
    distinct.join(" vs ")
}

fn variant_lines(sides: &[Side]) -> Vec<VariantLine> {
    let labels: Vec<Vec<String>> = if sides.iter().any(|s| s.variant.is_some()) {
        vec![
            sides
                .iter()
                .map(|s| s.variant.clone().unwrap_or_default())
                .collect(),
        ]
    } else {
        let mut names: Vec<String> = Vec::new();
        for v in sides.iter().flat_map(|s| &s.summary.variants) {
            if !names.contains(&v.variant) {
                names.push(v.variant.clone());
            }
        }
        names.into_iter().map(|n| vec![n; sides.len()]).collect()
    };
    labels
        .into_iter()
        .map(|per_side| {
            let found: Vec<_> = sides
                .iter()
                .zip(&per_side)
                .map(|(side, name)| side.summary.variants.iter().find(|v| &v.variant == name))
                .collect();
            let held: Vec<Option<f64>> = found
                .iter()
                .map(|v| v.and_then(|v| v.max_rate_held))
                .collect();
            VariantLine {
                variant: joined_names(per_side.iter().map(String::as_str)),
                how: found
                    .iter()
                    .map(|v| v.map_or("-".to_owned(), |v| v.how.clone()))
                    .collect(),
                versus: held[1..]
                    .iter()
                    .map(|b| against(held[0], *b, Some(Direction::HigherIsBetter), None))
                    .collect(),
                held,
            }
        })
        .collect()
}

/// B against A; `noise` is the bootstrap's verdict when there was one.
fn against(
    a: Option<f64>,
    b: Option<f64>,
    direction: Option<Direction>,
    noise: Option<analysis::Difference>,
) -> Against {
    let (diff, relative, improvement) = match (a, b) {
        (Some(a), Some(b)) => {
            let ratio = |top: f64, bottom: f64| (bottom != 0.0 && top != 0.0).then(|| top / bottom);
            let improvement = match direction {
                Some(Direction::HigherIsBetter) => ratio(b, a),
                Some(Direction::LowerIsBetter) => ratio(a, b),
                None => None,
            };
            (Some(b - a), (a != 0.0).then(|| (b - a) / a), improvement)
        }
        _ => (None, None, None),
    };
    Against {
        diff,
        relative,
        improvement,
        noise: match noise {
            Some(d) if d.beyond_noise => "beyond",
            Some(_) => "within",
            None => "n/a",
        },
        interval: noise.map(|d| [d.diff_low, d.diff_high]),
    }
}

/// A figure of a step row: its name, unit, better direction, value, and the row of
/// [`report::compare_runs`] that holds its per-second noise (None: a whole-window
/// figure with no per-second samples).
struct Figure {
    name: &'static str,
    unit: FigureUnit,
    direction: Option<Direction>,
    value: fn(&StepRow) -> Option<f64>,
    noise_row: Option<&'static str>,
}

const FIGURES: [Figure; 8] = {
    use Direction::{HigherIsBetter as Higher, LowerIsBetter as Lower};
    [
        Figure {
            name: "requests",
            unit: FigureUnit::Count,
            direction: None,
            value: |r| Some(r.requests as f64),
            noise_row: None,
        },
        Figure {
            name: "achieved/s",
            unit: FigureUnit::PerSec,
            direction: Some(Higher),
            value: |r| Some(r.achieved_per_sec),
            noise_row: Some("rate"),
        },
        Figure {
            name: "success",
            unit: FigureUnit::Ratio,
            direction: Some(Higher),
            value: |r| Some(r.success),
            noise_row: Some("success"),
        },
        Figure {
            name: "p50",
            unit: FigureUnit::Ms,
            direction: Some(Lower),
            value: |r| r.p50_ms,
            noise_row: Some("latency p50"),
        },
        Figure {
            name: "p90",
            unit: FigureUnit::Ms,
            direction: Some(Lower),
            value: |r| r.p90_ms,
            noise_row: Some("latency p90"),
        },
        Figure {
            name: "p99",
            unit: FigureUnit::Ms,
            direction: Some(Lower),
            value: |r| r.p99_ms,
            noise_row: Some("latency p99"),
        },
        Figure {
            name: "max",
            unit: FigureUnit::Ms,
            direction: Some(Lower),
            value: |r| r.max_ms,
            noise_row: None,
        },
        Figure {
            name: "send lag p99",
            unit: FigureUnit::Ms,
            direction: Some(Lower),
            value: |r| Some(r.lag_p99_ms),
            noise_row: None,
        },
    ]
};

/// The step rows a regression is judged on.
pub const GATED_FIGURES: [&str; 3] = ["achieved/s", "success", "p99"];

fn step_line(sides: &[Side], matched: &[Option<&StepRow>]) -> StepLine {
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
    let mut rows: Vec<FigureRow> = FIGURES
        .iter()
        .map(|figure| {
            let values: Vec<Option<f64>> =
                matched.iter().map(|m| m.and_then(figure.value)).collect();
            figure_row(
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
        rows.push(figure_row(
            format!("errors {kind}"),
            FigureUnit::Count,
            Some(Direction::LowerIsBetter),
            values,
            |b| versus_noise(b, noise_row.as_deref()),
        ));
    }
    StepLine {
        variant: joined_names(matched.iter().flatten().map(|m| m.variant.as_str())),
        offer: offer(a),
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

/// `noise(b)` is side b's (1-based) bootstrap on this figure.
fn figure_row(
    row: String,
    unit: FigureUnit,
    direction: Option<Direction>,
    values: Vec<Option<f64>>,
    noise: impl Fn(usize) -> Option<analysis::Difference>,
) -> FigureRow {
    let versus = (1..values.len())
        .map(|b| against(values[0], values[b], direction, noise(b)))
        .collect();
    FigureRow {
        row,
        unit,
        better: direction.map(|d| match d {
            Direction::HigherIsBetter => "higher",
            Direction::LowerIsBetter => "lower",
        }),
        values,
        versus,
    }
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

impl FolderComparison {
    /// Lower maximum rates held by more than `threshold` (a share) of A's, and the gated
    /// step figures ([`GATED_FIGURES`]) worse by more than `threshold` of A's value and
    /// beyond the noise.
    pub fn regressions(&self, threshold: f64) -> Vec<FolderRegression> {
        let mut found = Vec::new();
        for line in &self.variants {
            let Some(a) = line.held[0].filter(|a| *a > 0.0) else {
                continue;
            };
            for (index, b) in line.held.iter().enumerate().skip(1) {
                let worse = a - b.unwrap_or(0.0);
                if worse > threshold * a {
                    found.push(FolderRegression {
                        what: format!("max rate held of {}", line.variant),
                        input: self.inputs[index].clone(),
                        worse_by: worse / a,
                        beyond_noise: false,
                    });
                }
            }
        }
        for step in &self.steps {
            for row in step
                .rows
                .iter()
                .filter(|r| GATED_FIGURES.contains(&r.row.as_str()))
            {
                found.extend(row_regressions(step, row, &self.inputs, threshold));
            }
        }
        found
    }
}

fn row_regressions(
    step: &StepLine,
    row: &FigureRow,
    inputs: &[String],
    threshold: f64,
) -> Vec<FolderRegression> {
    let Some(a) = row.values[0].filter(|a| *a != 0.0) else {
        return Vec::new();
    };
    row.versus
        .iter()
        .enumerate()
        .filter_map(|(index, versus)| {
            let diff = versus.diff?;
            let worse = if row.better == Some("higher") {
                -diff
            } else {
                diff
            };
            (versus.noise == "beyond" && worse > threshold * a.abs()).then(|| FolderRegression {
                what: format!("{} at {}", row.row, step.title()),
                input: inputs[index + 1].clone(),
                worse_by: worse / a.abs(),
                beyond_noise: true,
            })
        })
        .collect()
}

impl StepLine {
    /// `fixed-pool 1000/s`, `api 500/s replicas=2 r2`, `fixed-pool vs overflow-pool 1000/s`.
    pub fn title(&self) -> String {
        let mut title = format!("{} {}", self.variant, self.offer);
        for (k, v) in &self.params {
            let _ = write!(title, " {k}={v}");
        }
        if !matches!(self.kind, StepKind::Sweep | StepKind::Matrix) {
            let _ = write!(title, " ({})", self.kind);
        }
        if self.repeat > 1 {
            let _ = write!(title, " r{}", self.repeat);
        }
        title
    }
}

/// What the noise column means, below the text and Markdown tables.
const NOISE_NOTE: &str = "noise: 95% block bootstrap of the difference of per-second means of the two steps' \
record files (beyond: the interval excludes 0); n/a: no per-second samples for that figure, \
or a single run without record files. A maximum rate held is one result per side: no noise estimate.\n";

impl FolderComparison {
    /// The comparison in `format`.
    pub fn render(&self, format: CompareFormat) -> String {
        match format {
            CompareFormat::Text => self.layout(&Layout::TEXT),
            CompareFormat::Markdown => self.layout(&Layout::MARKDOWN),
            CompareFormat::Json => {
                let mut json = serde_json::to_string_pretty(self).unwrap_or_default();
                json.push('\n');
                json
            }
        }
    }

    fn layout(&self, layout: &Layout) -> String {
        let mut out = String::new();
        for (index, name) in self.inputs.iter().enumerate() {
            let _ = writeln!(
                out,
                "{}{}: {}{name}{}",
                layout.bullet,
                side_letter(index),
                layout.quote,
                layout.quote
            );
        }
        let _ = writeln!(out, "\n{}max rate held (req/s)\n", layout.heading);
        let mut table = vec![self.header("variant", false)];
        for line in &self.variants {
            let mut cells = vec![line.variant.clone(), held_text(line.held[0])];
            for (versus, held) in line.versus.iter().zip(&line.held[1..]) {
                cells.push(held_text(*held));
                cells.extend(versus_cells(FigureUnit::PerSec, versus, false));
            }
            table.push(cells);
        }
        out.push_str(&layout.table(&table));
        for step in &self.steps {
            out.push_str(&self.step_block(step, layout));
        }
        if !self.unmatched.is_empty() {
            let _ = writeln!(out, "\n{}steps without a match in A\n", layout.heading);
            for name in &self.unmatched {
                let _ = writeln!(out, "{}{name}", layout.bullet);
            }
        }
        out.push('\n');
        out.push_str(NOISE_NOTE);
        out
    }

    fn header(&self, first: &str, noise: bool) -> Vec<String> {
        let mut header = vec![first.to_owned(), "A".to_owned()];
        for index in 1..self.inputs.len() {
            let side = side_letter(index);
            header.push(side.clone());
            let columns: &[&str] = if noise {
                &["diff", "rel", "x", "noise"]
            } else {
                &["diff", "rel", "x"]
            };
            header.extend(columns.iter().map(|h| format!("{h} {side}")));
        }
        header
    }

    fn step_block(&self, step: &StepLine, layout: &Layout) -> String {
        let mut out = format!("\n{}step {}\n\n", layout.heading, step.title());
        let mut table = vec![self.header("figure", true)];
        let text = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".to_owned());
        let verdicts: Vec<Option<String>> = (step.verdicts.iter())
            .map(|v| v.map(|v| v.word().to_owned()))
            .collect();
        for (label, values) in [("step", &step.steps), ("verdict", &verdicts)] {
            let mut cells = vec![label.to_owned(), text(&values[0])];
            for value in &values[1..] {
                cells.push(text(value));
                cells.extend(["", "", "", ""].map(str::to_owned));
            }
            table.push(cells);
        }
        for row in &step.rows {
            let mut cells = vec![row.row.clone(), value_text(row.unit, row.values[0])];
            for (versus, value) in row.versus.iter().zip(&row.values[1..]) {
                cells.push(value_text(row.unit, *value));
                cells.extend(versus_cells(row.unit, versus, true));
            }
            table.push(cells);
        }
        out.push_str(&layout.table(&table));
        let _ = writeln!(out, "\n{}noise: {}", layout.bullet, step.noise);
        out
    }
}

/// Text or Markdown.
struct Layout {
    bullet: &'static str,
    quote: &'static str,
    heading: &'static str,
    markdown: bool,
}

impl Layout {
    const TEXT: Layout = Layout {
        bullet: "",
        quote: "",
        heading: "",
        markdown: false,
    };
    const MARKDOWN: Layout = Layout {
        bullet: "- ",
        quote: "`",
        heading: "### ",
        markdown: true,
    };

    fn table(&self, rows: &[Vec<String>]) -> String {
        if !self.markdown {
            let joined: String = rows.iter().map(|r| format!("{}\n", r.join("\t"))).collect();
            return report::tabwriter::align(&joined, &[]);
        }
        let mut out = String::new();
        for (index, row) in rows.iter().enumerate() {
            let _ = writeln!(out, "| {} |", row.join(" | "));
            if index == 0 {
                let _ = writeln!(out, "|{}", "---|".repeat(row.len()));
            }
        }
        out
    }
}

fn versus_cells(unit: FigureUnit, versus: &Against, noise: bool) -> Vec<String> {
    let mut cells = vec![
        versus.diff.map_or("-".to_owned(), |d| diff_text(unit, d)),
        versus
            .relative
            .map_or("-".to_owned(), |r| format!("{:+.2}%", r * 100.0)),
        versus
            .improvement
            .map_or("-".to_owned(), |x| format!("{x:.2}x")),
    ];
    if noise {
        cells.push(versus.noise.to_owned());
    }
    cells
}

fn held_text(held: Option<f64>) -> String {
    held.map_or("none".to_owned(), format_rate)
}

fn value_text(unit: FigureUnit, value: Option<f64>) -> String {
    let Some(value) = value else {
        return "-".to_owned();
    };
    match unit {
        FigureUnit::Count => format!("{value:.0}"),
        FigureUnit::PerSec => format!("{value:.1}"),
        FigureUnit::Ratio => format!("{:.2}%", value * 100.0),
        FigureUnit::Ms => format!("{value:.2}ms"),
    }
}

fn diff_text(unit: FigureUnit, diff: f64) -> String {
    match unit {
        FigureUnit::Ratio => format!("{:+.2}pp", diff * 100.0),
        FigureUnit::Count => format!("{diff:+.0}"),
        FigureUnit::PerSec => format!("{diff:+.1}"),
        FigureUnit::Ms => format!("{diff:+.2}ms"),
    }
}

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
    out.flush().map_err(write)?;
    Ok(threshold.map_or_else(Vec::new, |t| comparison.regressions(t)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::folder::VariantResult;
    use crate::plan::Mode;

    fn step(name: &str, variant: &str, rate: f64, p99_ms: f64) -> StepRow {
        StepRow {
            step: name.to_owned(),
            variant: variant.to_owned(),
            kind: StepKind::Sweep,
            repeat: 1,
            rate_asked: Some(rate),
            achieved_per_sec: rate,
            requests: rate as u64 * 10,
            success: 1.0,
            p50_ms: Some(p99_ms / 4.0),
            p99_ms: Some(p99_ms),
            verdict: StepVerdict::Pass,
            ..StepRow::default()
        }
    }

    fn side(
        name: &str,
        variant: Option<&str>,
        held: &[(&str, Option<f64>)],
        steps: Vec<StepRow>,
    ) -> Side {
        Side {
            name: name.to_owned(),
            dir: PathBuf::from(name),
            summary: RunSummary {
                mode: Mode::Sweep,
                variants: held
                    .iter()
                    .map(|(v, h)| VariantResult {
                        variant: (*v).to_owned(),
                        max_rate_held: *h,
                        how: "sweep".to_owned(),
                        ..VariantResult::default()
                    })
                    .collect(),
                steps,
                ..RunSummary::default()
            },
            variant: variant.map(str::to_owned),
        }
    }

    fn matched(comparison: &FolderComparison) -> Vec<(String, Vec<Option<String>>)> {
        comparison
            .steps
            .iter()
            .map(|s| (s.title(), s.steps.clone()))
            .collect()
    }

    fn names(names: &[Option<&str>]) -> Vec<Option<String>> {
        names.iter().map(|n| n.map(str::to_owned)).collect()
    }

    #[test]
    fn steps_match_by_variant_offer_params_kind_and_repeat() {
        let mut repeat2 = step("002-go-100-r2", "go", 100.0, 4.0);
        repeat2.repeat = 2;
        let mut probe = step("003-go-100", "go", 100.0, 4.0);
        probe.kind = StepKind::Probe;
        let mut replicas = step("004-go-100-replicas-2", "go", 100.0, 4.0);
        replicas
            .params
            .insert("replicas".to_owned(), "2".to_owned());
        let a = side(
            "a",
            None,
            &[("go", Some(100.0)), ("ruby", Some(50.0))],
            vec![
                step("000-go-100", "go", 100.0, 4.0),
                step("001-ruby-100", "ruby", 100.0, 9.0),
                repeat2.clone(),
                probe.clone(),
                replicas.clone(),
            ],
        );
        let b = side(
            "b",
            None,
            &[("go", Some(200.0)), ("ruby", Some(50.0))],
            vec![
                step("000-ruby-100", "ruby", 100.0, 8.0),
                step("001-go-100", "go", 100.0, 2.0),
                step("002-go-200", "go", 200.0, 3.0),
                repeat2,
                probe,
            ],
        );
        let comparison = compare_sides(&[a, b]);
        let want = vec![
            (
                "go 100/s".to_owned(),
                names(&[Some("000-go-100"), Some("001-go-100")]),
            ),
            (
                "ruby 100/s".to_owned(),
                names(&[Some("001-ruby-100"), Some("000-ruby-100")]),
            ),
            (
                "go 100/s r2".to_owned(),
                names(&[Some("002-go-100-r2"), Some("002-go-100-r2")]),
            ),
            (
                "go 100/s (probe)".to_owned(),
                names(&[Some("003-go-100"), Some("003-go-100")]),
            ),
            (
                "go 100/s replicas=2".to_owned(),
                names(&[Some("004-go-100-replicas-2"), None]),
            ),
        ];
        assert_eq!(matched(&comparison), want);
        assert_eq!(comparison.unmatched, ["b: 002-go-200"]);
        // Variants picked by name match across names; the other variants' steps stay out.
        let a = side(
            "a",
            Some("go"),
            &[("go", None), ("ruby", None)],
            comparison_steps(),
        );
        let b = side(
            "a",
            Some("ruby"),
            &[("go", None), ("ruby", None)],
            comparison_steps(),
        );
        let picked = compare_sides(&[a, b]);
        assert_eq!(
            matched(&picked),
            vec![(
                "go vs ruby 100/s".to_owned(),
                names(&[Some("000-go-100"), Some("001-ruby-100")])
            )]
        );
        assert!(picked.unmatched.is_empty(), "{:?}", picked.unmatched);
    }

    fn comparison_steps() -> Vec<StepRow> {
        vec![
            step("000-go-100", "go", 100.0, 4.0),
            step("001-ruby-100", "ruby", 100.0, 8.0),
        ]
    }

    #[test]
    fn differences_and_improvement_per_figure_and_variant() {
        let a = side(
            "a",
            None,
            &[("go", Some(100.0)), ("ruby", None)],
            vec![step("s", "go", 100.0, 4.0)],
        );
        let mut slower = step("s", "go", 100.0, 8.0);
        slower.success = 0.9;
        slower.errors.insert("503".to_owned(), 10);
        let b = side(
            "b",
            None,
            &[("go", Some(150.0)), ("ruby", Some(10.0))],
            vec![slower],
        );
        let comparison = compare_sides(&[a, b]);
        // (variant, held per side, diff, relative, x)
        let held: Vec<_> = comparison
            .variants
            .iter()
            .map(|v| {
                (
                    v.variant.as_str(),
                    v.held.clone(),
                    v.versus[0].diff,
                    v.versus[0].relative,
                    v.versus[0].improvement,
                )
            })
            .collect();
        assert_eq!(
            held,
            [
                (
                    "go",
                    vec![Some(100.0), Some(150.0)],
                    Some(50.0),
                    Some(0.5),
                    Some(1.5)
                ),
                ("ruby", vec![None, Some(10.0)], None, None, None),
            ]
        );
        let rows = &comparison.steps[0].rows;
        // (figure, diff, relative, improvement, noise)
        let want: [(&str, f64, Option<f64>, Option<f64>); 4] = [
            ("p99", 4.0, Some(1.0), Some(0.5)),
            ("success", -0.1, Some(-0.1), Some(0.9)),
            ("requests", 0.0, Some(0.0), None),
            ("errors 503", 10.0, None, None),
        ];
        for (name, diff, relative, x) in want {
            let row = rows
                .iter()
                .find(|r| r.row == name)
                .unwrap_or_else(|| panic!("{name}"));
            let versus = row.versus[0];
            assert!(
                (versus.diff.unwrap() - diff).abs() < 1e-9,
                "{name}: {versus:?}"
            );
            assert_eq!(
                versus.relative.map(|r| (r * 1e9).round() / 1e9),
                relative,
                "{name}"
            );
            assert_eq!(versus.improvement, x, "{name}");
            assert_eq!(versus.noise, "n/a", "{name}: no record files");
        }
        assert!(
            comparison.steps[0].noise.contains("no noise estimate"),
            "{}",
            comparison.steps[0].noise
        );
    }

    #[test]
    fn regressions_are_lower_rates_held_or_gated_figures_beyond_the_noise() {
        let a = side(
            "a",
            None,
            &[("go", Some(100.0))],
            vec![step("s", "go", 100.0, 4.0)],
        );
        let rows = [
            (Some(96.0), 0),
            (Some(90.0), 1),
            (None, 1),
            (Some(200.0), 0),
        ];
        for (held, want) in rows {
            // p99 twice as slow, but no record files: no noise estimate, no regression.
            let b = side(
                "b",
                None,
                &[("go", held)],
                vec![step("s", "go", 100.0, 8.0)],
            );
            let found = compare_sides(&[a.clone(), b]).regressions(0.05);
            assert_eq!(found.len(), want, "{held:?}: {found:?}");
            assert!(
                found
                    .iter()
                    .all(|r| r.what == "max rate held of go" && !r.beyond_noise)
            );
        }
    }

    #[test]
    fn inputs_are_sorted_into_files_and_folders() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("run");
        std::fs::create_dir(&run).unwrap();
        std::fs::write(run.join("summary.json"), "{}").unwrap();
        let file = dir.path().join("a.llr");
        std::fs::write(&file, "x").unwrap();
        let hashed = dir.path().join("b#c.llr");
        std::fs::write(&hashed, "x").unwrap();
        let path = |p: &Path| p.to_string_lossy().into_owned();
        let folder = |variant: Option<&str>| FolderInput {
            dir: run.clone(),
            variant: variant.map(str::to_owned),
        };
        let rows: Vec<(Vec<String>, Result<CompareArgs, &str>)> = vec![
            (
                vec![path(&file), path(&hashed)],
                Ok(CompareArgs::RecordFiles(vec![path(&file), path(&hashed)])),
            ),
            (
                vec![path(&run)],
                Ok(CompareArgs::Folders(vec![folder(None)])),
            ),
            (
                vec![
                    format!("{}#fast", path(&run)),
                    format!("{}#slow", path(&run)),
                ],
                Ok(CompareArgs::Folders(vec![
                    folder(Some("fast")),
                    folder(Some("slow")),
                ])),
            ),
            (vec![path(&run), path(&file)], Err("not both")),
            (vec![path(&run.join("fast"))], Err("#fast")),
        ];
        for (args, want) in rows {
            match (classify(&args), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{args:?}"),
                (Err(err), Err(want)) => assert!(err.to_string().contains(want), "{args:?}: {err}"),
                (got, want) => panic!("{args:?}: {got:?} want {want:?}"),
            }
        }
    }

    #[test]
    fn bad_summaries_name_the_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let rows = [
            (None, "summary.json: not found"),
            (
                Some("{\n  \"plan\": \"p\",\n  \"mode\": ,\n}"),
                "summary.json:3: expected value",
            ),
            (Some("{\"plan\": 1}"), "summary.json:1: invalid type"),
        ];
        for (text, want) in rows {
            if let Some(text) = text {
                std::fs::write(dir.path().join("summary.json"), text).unwrap();
            }
            let err = read_summary(dir.path()).unwrap_err().to_string();
            assert!(err.contains(want), "{err}");
        }
        let one = FolderInput {
            dir: dir.path().to_owned(),
            variant: None,
        };
        std::fs::write(
            dir.path().join("summary.json"),
            r#"{"plan":"p","plan_file":"p.toml","mode":"sweep","complete":true,"variants":[{"variant":"a","max_rate_held":null,"how":"sweep","probes":null,"seconds":null}],"steps":[]}"#,
        )
        .unwrap();
        let err = sides(std::slice::from_ref(&one)).unwrap_err().to_string();
        assert!(err.contains("has one variant (a)"), "{err}");
        let picked = FolderInput {
            variant: Some("b".to_owned()),
            ..one.clone()
        };
        let err = sides(&[picked.clone(), picked.clone()])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("no variant \"b\"") && err.contains("variants: a"),
            "{err}"
        );
        let err = sides(&[one, picked]).unwrap_err().to_string();
        assert!(err.contains("not both"), "{err}");
    }
}
