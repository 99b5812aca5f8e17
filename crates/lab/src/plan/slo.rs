//! `[slo]` (and a background scenario's `slo`): the bounds that judge a step.

use analysis::{GeneratorHealth, Percentile, Slo, StreamBounds};
use toml::Spanned;

use super::syntax::{RawChecks, RawSlo, Spot};
use crate::LabError;

/// The `[slo.checks]` key that bounds every check not named beside it.
const EVERY_CHECK: &str = "*";

/// The default success bound: a step where more than 1% fail does not pass.
pub const DEFAULT_SUCCESS: f64 = 0.99;

fn ratio(spot: &Spot<'_>, value: &Spanned<f64>, field: &str) -> Result<f64, LabError> {
    ratio_at(spot, *value.get_ref(), value.span().start, field)
}

fn ratio_at(spot: &Spot<'_>, v: f64, offset: usize, field: &str) -> Result<f64, LabError> {
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(spot.err(
            offset,
            field,
            format!("must be between 0 and 1 (a share, 0.99 = 99%), got {v}"),
        ))
    }
}

/// `checks`: a share for every check, or shares by check name (`"*"`: every check not
/// named). A key that cannot be a check's full name (`STEP: CHECK`) is refused here,
/// with its line; a well-formed name that no step has fails the steps judged by it
/// (`analysis::judge`), as plans are checked before any flow has run.
fn check_bounds(
    spot: &Spot<'_>,
    checks: &Spanned<RawChecks>,
    prefix: &str,
    slo: &mut Slo,
) -> Result<(), LabError> {
    let field = format!("{prefix}.checks");
    let shares = match checks.get_ref() {
        RawChecks::Every(share) => {
            slo.min_check_pass_ratio = Some(ratio_at(spot, *share, checks.span().start, &field)?);
            return Ok(());
        }
        RawChecks::ByName(shares) => shares,
    };
    if shares.is_empty() {
        return Err(spot.err(
            checks.span().start,
            &field,
            "bounds no check: give \"STEP: CHECK\" = share, or checks = share for every check",
        ));
    }
    for (name, share) in shares {
        let field = format!("{field}.{name:?}");
        let bound = ratio(spot, share, &field)?;
        if name == EVERY_CHECK {
            slo.min_check_pass_ratio = Some(bound);
        } else if is_full_name(name) {
            slo.min_pass_ratio_by_check.push((name.clone(), bound));
        } else {
            return Err(spot.err(
                share.span().start,
                &field,
                "want a check's full name, \"STEP: CHECK\" (like \"login: status 200\"), or \"*\" for every check not named",
            ));
        }
    }
    Ok(())
}

/// `connections_held`, `messages_in_per_sec`, `messages_out_per_sec` and
/// `message_p50` .. `message_max`: the names of the stream stop rules.
fn stream_bounds(spot: &Spot<'_>, r: &RawSlo, prefix: &str) -> Result<StreamBounds, LabError> {
    let mut bounds = StreamBounds::default();
    if let Some(held) = &r.connections_held {
        bounds.min_held_ratio = Some(ratio(spot, held, &format!("{prefix}.connections_held"))?);
    }
    let rates = [
        (
            "messages_in_per_sec",
            &r.messages_in_per_sec,
            &mut bounds.min_messages_in_per_sec,
        ),
        (
            "messages_out_per_sec",
            &r.messages_out_per_sec,
            &mut bounds.min_messages_out_per_sec,
        ),
    ];
    for (key, value, slot) in rates {
        let Some(value) = value else { continue };
        let per_sec = *value.get_ref();
        if !(per_sec.is_finite() && per_sec > 0.0) {
            return Err(spot.err(
                value.span().start,
                &format!("{prefix}.{key}"),
                format!("must be a rate above 0 (messages per second, at least), got {per_sec}"),
            ));
        }
        *slot = Some(per_sec);
    }
    // Named as the stop rules name them: `message_p999`.
    let field =
        |stat: Percentile| format!("{prefix}.message_{}", stat.to_string().replace('.', ""));
    bounds.max_message_latency_ns = duration_bounds(spot, r.message_latencies(), &field)?;
    Ok(bounds)
}

/// The latency bounds written, in nanoseconds, each longer than zero; `field` names a
/// statistic's key for errors.
fn duration_bounds<'a>(
    spot: &Spot<'_>,
    written: impl IntoIterator<Item = (Percentile, &'a Option<Spanned<String>>)>,
    field: &dyn Fn(Percentile) -> String,
) -> Result<Vec<(Percentile, u64)>, LabError> {
    let mut bounds = Vec::new();
    for (stat, value) in written {
        let Some(value) = value else { continue };
        let field = field(stat);
        let bound = spot.duration(value, &field)?;
        if bound.is_zero() {
            return Err(spot.err(value.span().start, &field, "must be longer than zero"));
        }
        bounds.push((stat, bound.as_nanos() as u64));
    }
    Ok(bounds)
}

/// `STEP: CHECK`, both parts given.
fn is_full_name(name: &str) -> bool {
    name.split_once(": ")
        .is_some_and(|(step, check)| !step.trim().is_empty() && !check.trim().is_empty())
}

pub(super) fn slo(spot: &Spot<'_>, raw: Option<&RawSlo>, prefix: &str) -> Result<Slo, LabError> {
    let Some(r) = raw else {
        return Ok(Slo {
            min_success_ratio: Some(DEFAULT_SUCCESS),
            ..Slo::default()
        });
    };
    let mut slo = Slo {
        min_success_ratio: Some(r.success.as_ref().map_or(Ok(DEFAULT_SUCCESS), |s| {
            ratio(spot, s, &format!("{prefix}.success"))
        })?),
        ..Slo::default()
    };
    let bounds = [
        (Percentile::P50, &r.p50),
        (Percentile::P90, &r.p90),
        (Percentile::P95, &r.p95),
        (Percentile::P99, &r.p99),
        (Percentile::P999, &r.p999),
        (Percentile::Max, &r.max),
        (Percentile::Mean, &r.mean),
    ];
    slo.max_latency_ns = duration_bounds(spot, bounds, &|stat| format!("{prefix}.{stat}"))?;
    for (kind, value) in &r.errors {
        let known = record::ErrorKind::from_name(kind).is_some()
            || kind.parse::<u16>().is_ok_and(|s| (100..600).contains(&s));
        if !known {
            return Err(spot.err(value.span().start, &format!("{prefix}.errors.{kind}"), "want an error kind (timeout, connect, reset, closed, ...) or an HTTP status like \"503\""));
        }
        slo.max_error_ratio_by_kind.push((
            kind.clone(),
            ratio(spot, value, &format!("{prefix}.errors.{kind}"))?,
        ));
    }
    let mut generator = GeneratorHealth::default();
    if let Some(achieved) = &r.achieved {
        generator.min_achieved_ratio = ratio(spot, achieved, "slo.achieved")?;
    }
    if let Some(lag) = &r.max_lag {
        generator.max_lag_p99_ns = spot.duration(lag, "slo.max_lag")?.as_nanos() as u64;
        if generator.max_lag_p99_ns == 0 {
            return Err(spot.err(
                lag.span().start,
                "slo.max_lag",
                "must be longer than zero: every generator sends a little late, so every step would be inconclusive",
            ));
        }
    }
    if let Some(checks) = &r.checks {
        check_bounds(spot, checks, prefix, &mut slo)?;
    }
    slo.streams = stream_bounds(spot, r, prefix)?;
    slo.generator = generator;
    Ok(slo)
}
