//! [`Plan::read`] and [`Plan::parse`]: a plan file to a checked [`Plan`]. Unknown keys
//! are rejected and every error names the plan file, the line and the field
//! (`plan.toml:12: slo.success: must be between 0 and 1, got 1.5`), so a typo never
//! runs an hour-long experiment with a bound silently missing.

use std::path::Path;

use toml::Spanned;

use super::load::{check_steps, load, scenarios};
use super::model::{Load, Matrix, Mode, Plan, SearchOver, Steps, TraceStoreKey};
use super::modes::{ignored_by_mode, matrix, search};
use super::shards::sharding;
use super::slo::slo;
use super::syntax::{RawPlan, Spot, field_of, key_at};
use super::variants::variants;
use crate::LabError;

impl Plan {
    /// Reads and checks a plan file.
    pub fn read(path: &Path) -> Result<Plan, LabError> {
        let text = std::fs::read_to_string(path).map_err(|cause| LabError::Io {
            path: path.to_owned(),
            cause,
        })?;
        let base_dir = path.parent().map(Path::to_owned).unwrap_or_default();
        let mut plan = Plan::parse(&text, &path.display().to_string(), &base_dir)?;
        if plan.name.is_empty() {
            plan.name = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
        }
        Ok(plan)
    }

    /// Parses and checks a plan's text; errors name `source_name`, the line and the field.
    pub fn parse(text: &str, source_name: &str, base_dir: &Path) -> Result<Plan, LabError> {
        let spot = Spot { text, source_name };
        let raw: RawPlan = toml::from_str(text).map_err(|err| {
            let offset = err.span().map_or(0, |span| span.start);
            let message = err.message().to_owned();
            let field = field_of(&message)
                .or_else(|| key_at(text, offset))
                .unwrap_or_default();
            spot.err(offset, &field, message)
        })?;
        let mode = match raw.mode.get_ref().as_str() {
            "sweep" => Mode::Sweep,
            "search" => Mode::Search,
            "matrix" => Mode::Matrix,
            other => {
                return Err(spot.err(
                    raw.mode.span().start,
                    "mode",
                    format!("unknown mode {other:?} (want sweep, search or matrix)"),
                ));
            }
        };
        ignored_by_mode(&spot, &raw, mode)?;
        let slo = slo(&spot, raw.slo.as_ref(), "slo")?;
        let search = search(&spot, raw.search.as_ref().map(Spanned::get_ref))?;
        let over_users = mode == Mode::Search && search.over == SearchOver::Users;
        let mut load = load(&spot, &raw.load, base_dir, over_users)?;
        load.scenarios = scenarios(&spot, &raw.load, &load, &slo.generator, base_dir)?;
        let variants = variants(&spot, raw.variants, &load)?;
        load.shards = sharding(&spot, &raw.load, &load, &variants)?;
        if let Some((scenario, variant)) = load.scenarios.iter().find_map(|s| {
            let variant = variants.iter().find(|v| v.name == s.name)?;
            Some((s, variant))
        }) {
            return Err(spot.err_at_line(
                scenario.line,
                "load.scenario.name",
                format!(
                    "{:?} is the name of the variant on line {}: records name both, so use another",
                    scenario.name, variant.line
                ),
            ));
        }
        let matrix = match (&raw.matrix, mode) {
            (Some(m), _) => matrix(&spot, m)?,
            (None, Mode::Matrix) => {
                return Err(spot.err(
                    0,
                    "matrix",
                    "mode = \"matrix\" needs a [matrix] table with axes",
                ));
            }
            (None, _) => Matrix {
                repeat: 1,
                ..Matrix::default()
            },
        };
        if mode == Mode::Matrix {
            let has_rate_axis = matrix.axes.iter().any(|(name, _)| name == "rate");
            if !has_rate_axis && load.steps == Steps::Rates(Vec::new()) {
                return Err(spot.err(
                    raw.load.span().start,
                    "load.rates",
                    "a matrix needs a rate axis, or rates or users in [load]",
                ));
            }
        } else {
            check_steps(&spot, &raw.load, &load.steps, mode)?;
        }
        let trace_store = trace_store(&spot, raw.trace_store.as_ref(), &load)?;
        Ok(Plan {
            name: raw.name.unwrap_or_default(),
            mode,
            source_name: source_name.to_owned(),
            base_dir: base_dir.to_owned(),
            text: text.to_owned(),
            variants,
            load,
            slo,
            search,
            matrix,
            trace_store,
            hook_values: Vec::new(),
        })
    }
}

/// `trace_store`: an http(s) URL, for steps that send trace context (`trace = true`).
fn trace_store(
    spot: &Spot<'_>,
    key: Option<&Spanned<String>>,
    load: &Load,
) -> Result<Option<TraceStoreKey>, LabError> {
    let Some(key) = key else { return Ok(None) };
    let url = key.get_ref();
    let at = key.span().start;
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(spot.err(
            at,
            "trace_store",
            format!("{url:?}: want the trace store's query API, like http://127.0.0.1:16686"),
        ));
    }
    if load.settings.trace.is_none() {
        return Err(spot.err(
            at,
            "trace_store",
            "reads back the traces of the steps' traced requests: give trace = true in [load]",
        ));
    }
    Ok(Some(TraceStoreKey {
        url: url.clone(),
        line: spot.line(at),
    }))
}
