//! `[search]` and `[matrix]`: how a search probes and which axes a matrix crosses;
//! and the keys a mode would ignore, refused.

use analysis::SearchConfig;
use toml::Spanned;

use super::model::{Matrix, Mode, SearchOver, SearchSettings};
use super::syntax::{RawMatrix, RawPlan, RawSearch, Spot};
use crate::LabError;

/// A key or table the plan's mode would ignore is an error naming it and the mode:
/// what a plan says is what runs.
pub(super) fn ignored_by_mode(spot: &Spot<'_>, raw: &RawPlan, mode: Mode) -> Result<(), LabError> {
    const AXIS: &str = "the [matrix] rate axis sets each cell's rate";
    let load = raw.load.get_ref();
    let at = |span: Option<std::ops::Range<usize>>| span.map(|s| s.start);
    let rate_axis = raw
        .matrix
        .as_ref()
        .is_some_and(|m| m.get_ref().axes.get_ref().contains_key("rate"));
    let matrix_with_axis = mode == Mode::Matrix && rate_axis;
    // (the key, where it is written if it is, whether the mode ignores it, why)
    let rows = [
        (
            "load.rates",
            at(load.rates.as_ref().map(Spanned::span)),
            mode == Mode::Search,
            "the [search] table sets the rates a search probes (start, max_rate)",
        ),
        (
            "load.rates",
            at(load.rates.as_ref().map(Spanned::span)),
            matrix_with_axis,
            AXIS,
        ),
        (
            "load.users",
            at(load.users.as_ref().map(Spanned::span)),
            matrix_with_axis,
            AXIS,
        ),
        (
            "load.schedule",
            at(load.schedule.as_ref().map(Spanned::span)),
            matrix_with_axis,
            AXIS,
        ),
        (
            "search",
            at(raw.search.as_ref().map(Spanned::span)),
            mode != Mode::Search,
            "only a search probes: [search] is for mode = \"search\"",
        ),
        (
            "matrix",
            at(raw.matrix.as_ref().map(Spanned::span)),
            mode != Mode::Matrix,
            "only a matrix crosses axes: [matrix] is for mode = \"matrix\"",
        ),
    ];
    match rows
        .iter()
        .find(|(_, at, ignored, _)| at.is_some() && *ignored)
    {
        Some((key, at, _, why)) => Err(spot.err(
            at.unwrap_or_default(),
            key,
            format!("mode = {:?} ignores it: {why}", mode.word()),
        )),
        None => Ok(()),
    }
}

pub(super) fn search(spot: &Spot<'_>, raw: Option<&RawSearch>) -> Result<SearchSettings, LabError> {
    let mut config = SearchConfig::default();
    let Some(r) = raw else {
        return Ok(SearchSettings {
            config,
            over: SearchOver::Rates,
            max_time: None,
        });
    };
    let over = match r
        .over
        .as_ref()
        .map(|o| (o.get_ref().as_str(), o.span().start))
    {
        None | Some(("rates", _)) => SearchOver::Rates,
        Some(("users", _)) => SearchOver::Users,
        Some((other, at)) => {
            return Err(spot.err(
                at,
                "search.over",
                format!("{other:?}: want \"rates\" (arrivals a second) or \"users\" (a count of users, each holding its connection)"),
            ));
        }
    };
    config.whole = over == SearchOver::Users;
    let set = |value: &Option<Spanned<f64>>, slot: &mut f64| {
        if let Some(v) = value {
            *slot = *v.get_ref();
        }
    };
    set(&r.start, &mut config.start_per_sec);
    set(&r.growth, &mut config.growth);
    set(&r.precision, &mut config.precision);
    set(&r.min_rate, &mut config.min_per_sec);
    set(&r.max_rate, &mut config.max_per_sec);
    if let Some(max) = &r.max_probes {
        config.max_probes = *max.get_ref();
    }
    if let Err(analysis::AnalysisError::BadSearch { field, want, got }) = config.validate() {
        let (name, offset) = match field {
            "start" => ("start", r.start.as_ref().map(|s| s.span().start)),
            "growth" => ("growth", r.growth.as_ref().map(|s| s.span().start)),
            "precision" => ("precision", r.precision.as_ref().map(|s| s.span().start)),
            "max_probes" => ("max_probes", r.max_probes.as_ref().map(|s| s.span().start)),
            _ => (
                "max_rate",
                r.max_rate
                    .as_ref()
                    .or(r.min_rate.as_ref())
                    .map(|s| s.span().start),
            ),
        };
        return Err(spot.err(
            offset.unwrap_or(0),
            &format!("search.{name}"),
            format!("must be {want}, got {got}"),
        ));
    }
    let max_time = r
        .max_time
        .as_ref()
        .map(|t| spot.duration(t, "search.max_time"))
        .transpose()?;
    Ok(SearchSettings {
        config,
        over,
        max_time,
    })
}

pub(super) fn matrix(spot: &Spot<'_>, raw: &Spanned<RawMatrix>) -> Result<Matrix, LabError> {
    let r = raw.get_ref();
    if r.axes.get_ref().is_empty() {
        return Err(spot.err(
            r.axes.span().start,
            "matrix.axes",
            "no axes: name at least one, like rate = [100, 500]",
        ));
    }
    let mut axes = Vec::new();
    for (name, values) in r.axes.get_ref() {
        let field = format!("matrix.axes.{name}");
        if values.get_ref().is_empty() {
            return Err(spot.err(values.span().start, &field, "an empty axis makes no cells"));
        }
        let texts: Vec<String> = values
            .get_ref()
            .iter()
            .map(|v| match v {
                toml::Value::String(s) => Ok(s.clone()),
                toml::Value::Integer(i) => Ok(i.to_string()),
                toml::Value::Float(f) => Ok(f.to_string()),
                toml::Value::Boolean(b) => Ok(b.to_string()),
                other => Err(spot.err(
                    values.span().start,
                    &field,
                    format!("want strings or numbers, got {}", other.type_str()),
                )),
            })
            .collect::<Result<_, _>>()?;
        if name == "rate"
            && let Some(bad) = texts
                .iter()
                .find(|t| !t.parse::<f64>().is_ok_and(|r| r > 0.0))
        {
            return Err(spot.err(
                values.span().start,
                &field,
                format!("every rate must be a number above 0, got {bad}"),
            ));
        }
        if name == "variant" {
            return Err(spot.err(
                values.span().start,
                &field,
                "variants are always an axis: list them as [[variant]] tables",
            ));
        }
        axes.push((name.clone(), texts));
    }
    let repeat = match &r.repeat {
        Some(n) if *n.get_ref() < 1 => {
            return Err(spot.err(
                n.span().start,
                "matrix.repeat",
                format!("must be at least 1, got {}", n.get_ref()),
            ));
        }
        Some(n) => *n.get_ref() as u32,
        None => 1,
    };
    let shuffle_seed = match r
        .order
        .as_ref()
        .map(|o| (o.span().start, o.get_ref().as_str()))
    {
        None | Some((_, "as-written")) => None,
        Some((_, "shuffled")) => Some(r.seed.unwrap_or(1)),
        Some((offset, other)) => {
            return Err(spot.err(
                offset,
                "matrix.order",
                format!("unknown order {other:?} (want as-written or shuffled)"),
            ));
        }
    };
    Ok(Matrix {
        axes,
        repeat,
        shuffle_seed,
    })
}
