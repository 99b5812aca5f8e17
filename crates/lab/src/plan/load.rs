//! `[load]` and its `[[load.scenario]]` tables, checked. The steps (`rates`, `users`,
//! `schedule`) and their timing are the plan's own keys; every other key is an
//! attack's ([`AttackFields`], as `attack -scenarios` tables take them) or the run's
//! ([`RunFields`], as `attack`'s run-wide flags), read by the same structs `attack`
//! reads, so a plan can set whatever an attack can. Each is checked here, with the
//! line it was written on, so a typo fails before anything runs.

use std::collections::BTreeMap;
use std::time::Duration;

use analysis::GeneratorHealth;
use serde::de::DeserializeOwned;
use toml::Spanned;
use workload::options::InPlan;
use workload::{AttackFields, Origin, RunFields, TextOrNumber};

use super::model::{Load, Mode, Plan, Scenario, Steps};
use super::slo::slo;
use super::syntax::{RawLoad, RawScenario, RawSlo, Spot};
use crate::LabError;

const DEFAULT_STEP: Duration = Duration::from_secs(10);

/// Attack keys a background scenario cannot take: it runs each step's whole length at
/// its own fixed `rate`.
const SET_BY_STEP_LENGTH: [(&str, &str); 5] = {
    const WHY: &str = "a background scenario runs for each step's whole length at its own fixed `rate`; give no duration, schedule, concurrency, think_time or max_requests";
    [
        ("duration", WHY),
        ("schedule", WHY),
        ("concurrency", WHY),
        ("think_time", WHY),
        ("max_requests", WHY),
    ]
};

/// Attack keys a step sets itself, refused in `[load]` with what to write instead
/// (their declarations say which, [`workload::options`]).
fn set_by_steps() -> Vec<(&'static str, &'static str)> {
    workload::options::OPTIONS
        .iter()
        .filter_map(|option| match option.in_plan {
            InPlan::SetBySteps(why) => Some((option.key?, why)),
            InPlan::Key => None,
        })
        .collect()
}

/// `[load]`, checked; `over_users`: a search over users, whose steps (none yet) are
/// closed-model ones, so the attack keys are checked as such (`think_time`).
pub(super) fn load(
    spot: &Spot<'_>,
    raw: &Spanned<RawLoad>,
    base_dir: &std::path::Path,
    over_users: bool,
) -> Result<Load, LabError> {
    let at = raw.span().start;
    let r = raw.get_ref();
    let steps = match steps(spot, raw)? {
        Steps::Rates(rates) if rates.is_empty() && over_users => Steps::Users(Vec::new()),
        steps => steps,
    };
    let step_duration =
        spot.duration_or(r.step_duration.as_ref(), "load.step_duration", DEFAULT_STEP)?;
    if step_duration.is_zero() {
        let offset = r.step_duration.as_ref().map_or(at, |s| s.span().start);
        return Err(spot.err(offset, "load.step_duration", "must be longer than zero"));
    }
    let mut table = Table::new(spot, raw.span(), "load.", base_dir);
    let (attack, run) = table.split(&r.fields, &set_by_steps())?;
    let settings = run.settings(&table.origin)?;
    check_attack(&steps, &attack, &table.origin)?;
    Ok(Load {
        steps,
        step_duration,
        warmup: spot.duration_or(r.warmup.as_ref(), "load.warmup", Duration::ZERO)?,
        cooldown: spot.duration_or(r.cooldown.as_ref(), "load.cooldown", Duration::ZERO)?,
        stop_after_failures: r.stop_after_failures.as_ref().map_or(0, |n| *n.get_ref()),
        check_targets: r.check_targets.unwrap_or(true),
        attack,
        attack_origin: table.origin,
        run,
        settings,
        line: spot.line(at),
        scenarios: Vec::new(),
        shards: None,
    })
}

/// `[load]`'s attack keys, checked with the offer each step gives: whatever is wrong
/// fails now, not at a step.
fn check_attack(steps: &Steps, attack: &AttackFields, origin: &Origin) -> Result<(), LabError> {
    let mut probe = attack.clone();
    match steps {
        Steps::Rates(_) => probe.rate = Some(TextOrNumber::Integer(1)),
        Steps::Users(_) => probe.concurrency = Some(TextOrNumber::Integer(1)),
        Steps::Schedule(schedule) => probe.schedule = Some(schedule.clone()),
    }
    probe.settings(origin)?;
    Ok(())
}

impl Plan {
    /// `run`'s request flags (`-timeout`, `-H`, ...) over `[load]` and every background
    /// scenario, by the one precedence rule ([`AttackFields::layered`]), checked again
    /// (an error names the flag); `words`, the flags as given, head the plan's text
    /// (the run folder's plan.toml) in a comment, so the copy says what ran.
    pub fn apply_flags(&mut self, flags: &AttackFields, words: &str) -> Result<(), LabError> {
        let given = flags.given_keys();
        if given.is_empty() {
            return Ok(());
        }
        let load = &mut self.load;
        load.attack = AttackFields::layered(&[flags, &load.attack]);
        name_as_flags(&mut load.attack_origin, &given);
        check_attack(&load.steps, &load.attack, &load.attack_origin)?;
        for scenario in &mut load.scenarios {
            scenario.attack = AttackFields::layered(&[flags, &scenario.attack]);
            name_as_flags(&mut scenario.origin, &given);
            scenario.attack.settings(&scenario.origin)?;
        }
        self.text = format!(
            "# Run as `loadlab run THIS_FILE {words}`: the flags override [load] and every\n\
             # [[load.scenario]] below.\n{}",
            self.text
        );
        Ok(())
    }
}

/// Errors about `keys` name the flags that gave them (`-timeout: ...`).
fn name_as_flags(origin: &mut Origin, keys: &[String]) {
    for key in keys {
        origin.from_flags.insert(key.clone());
        let flag = workload::options::flag_of(key);
        origin.field_labels.insert(key.clone(), flag);
    }
}

/// `rates`, `users` or `schedule`: at most one.
fn steps(spot: &Spot<'_>, raw: &Spanned<RawLoad>) -> Result<Steps, LabError> {
    let r = raw.get_ref();
    Ok(match (&r.rates, &r.users, &r.schedule) {
        (Some(rates), None, None) => {
            if let Some(bad) = rates
                .get_ref()
                .iter()
                .find(|r| !(**r > 0.0 && r.is_finite()))
            {
                return Err(spot.err(
                    rates.span().start,
                    "load.rates",
                    format!("every rate must be above 0, got {bad}"),
                ));
            }
            Steps::Rates(rates.get_ref().clone())
        }
        (None, Some(users), None) => {
            if let Some(bad) = users.get_ref().iter().find(|u| **u < 1) {
                return Err(spot.err(
                    users.span().start,
                    "load.users",
                    format!("every user count must be at least 1, got {bad}"),
                ));
            }
            Steps::Users(users.get_ref().iter().map(|&u| u as u64).collect())
        }
        (None, None, Some(schedule)) => {
            workload::Schedule::parse(schedule.get_ref())
                .map_err(|e| spot.err(schedule.span().start, "load.schedule", e))?;
            Steps::Schedule(schedule.get_ref().clone())
        }
        (None, None, None) => Steps::Rates(Vec::new()),
        _ => {
            return Err(spot.err(
                raw.span().start,
                "load",
                "give one of rates, users or schedule",
            ));
        }
    })
}

pub(super) fn check_steps(
    spot: &Spot<'_>,
    raw: &Spanned<RawLoad>,
    steps: &Steps,
    mode: Mode,
) -> Result<(), LabError> {
    let at = raw.span().start;
    match (steps, mode) {
        (Steps::Rates(rates), Mode::Sweep) if rates.is_empty() => {
            Err(spot.err(at, "load.rates", "a sweep needs rates, users or a schedule"))
        }
        (Steps::Users(users), Mode::Search) if users.is_empty() => Ok(()),
        (Steps::Users(_) | Steps::Schedule(_), Mode::Search) => Err(spot.err(
            at,
            "load",
            "search finds a rate (or users): give no users or schedule (the [search] table sets what it probes: start, max_rate, over)",
        )),
        _ => match &raw.get_ref().stop_after_failures {
            Some(n) if mode == Mode::Search && *n.get_ref() > 0 => Err(spot.err(
                n.span().start,
                "load.stop_after_failures",
                "a search stops by itself at the first failure: give it to sweep or matrix plans",
            )),
            _ => Ok(()),
        },
    }
}

/// `[[load.scenario]]` tables, checked so a typo fails before anything runs; `[load]`'s
/// request options fill in what a scenario gives none of (as a `-scenarios` file's
/// `[defaults]`).
pub(super) fn scenarios(
    spot: &Spot<'_>,
    raw: &Spanned<RawLoad>,
    load: &Load,
    generator: &GeneratorHealth,
    base_dir: &std::path::Path,
) -> Result<Vec<Scenario>, LabError> {
    let mut out: Vec<Scenario> = Vec::new();
    for spanned in &raw.get_ref().scenarios {
        let at = spanned.span().start;
        let r = spanned.get_ref();
        let name = scenario_name(spot, r, &out)?;
        let mut table = Table::new(spot, spanned.span(), "load.scenario.", base_dir);
        let (fields, run) = table.split(&r.fields, &SET_BY_STEP_LENGTH)?;
        if let Some(key) = r
            .fields
            .keys()
            .find(|k| RunFields::keys().contains(&k.as_str()))
        {
            let field = format!("load.scenario.{key}");
            return Err(table.err(key, &field, "a run-wide key: set it once, in [load]"));
        }
        debug_assert_eq!(run, RunFields::default());
        let rate = scenario_rate(spot, r, at, &name)?;
        match (&fields.targets, &fields.targets_file) {
            (Some(list), None) if !list.is_empty() => {}
            (None, Some(_)) => {}
            // A flow: its steps are checked with the attack's fields below.
            (None, None) if fields.step.is_some() => {}
            (Some(_), Some(_)) => {
                return Err(spot.err(
                    at,
                    "load.scenario.targets",
                    format!("scenario {name:?}: give targets or targets_file, not both"),
                ));
            }
            _ => {
                return Err(spot.err(
                    at,
                    "load.scenario.targets",
                    format!("scenario {name:?} has no targets: give targets, targets_file or [[load.scenario.step]] tables (a flow)"),
                ));
            }
        }
        let attack = AttackFields::layered(&[
            &AttackFields {
                name: Some(name.clone()),
                rate: Some(rate),
                ..fields
            },
            &request_options(&load.attack),
        ]);
        attack.settings(&table.origin)?;
        let slo = r
            .slo
            .as_ref()
            .map(|s| scenario_slo(spot, s, generator))
            .transpose()?;
        out.push(Scenario {
            name,
            line: spot.line(at),
            attack,
            origin: table.origin,
            slo,
        });
    }
    Ok(out)
}

/// What `[load]` gives a background scenario that gives none of its own.
fn request_options(load: &AttackFields) -> AttackFields {
    AttackFields {
        timeout: load.timeout.clone(),
        keepalive: load.keepalive,
        headers: load.headers.clone(),
        max_workers: load.max_workers,
        redirects: load.redirects,
        max_body: load.max_body.clone(),
        ..AttackFields::default()
    }
}

/// A scenario's name: a word fit for records and tables, and not taken.
fn scenario_name(spot: &Spot<'_>, r: &RawScenario, taken: &[Scenario]) -> Result<String, LabError> {
    let name = r.name.get_ref().trim().to_owned();
    let at = r.name.span().start;
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        return Err(spot.err(
            at,
            "load.scenario.name",
            format!("{name:?}: use letters, digits, '-', '_' or '.'"),
        ));
    }
    if taken.iter().any(|o| o.name == name) {
        return Err(spot.err(at, "load.scenario.name", format!("{name:?} is used twice")));
    }
    Ok(name)
}

fn scenario_rate(
    spot: &Spot<'_>,
    r: &RawScenario,
    at: usize,
    name: &str,
) -> Result<TextOrNumber, LabError> {
    let Some(rate) = &r.rate else {
        return Err(spot.err(
            at,
            "load.scenario.rate",
            format!("scenario {name:?} needs a rate (requests per second, like 1 or \"10/1s\")"),
        ));
    };
    let text = rate.get_ref().text();
    match units::Rate::parse(&text) {
        Ok(parsed) if !parsed.is_unpaced() && parsed.per_sec() > 0.0 => Ok(rate.get_ref().clone()),
        Ok(_) => Err(spot.err(
            rate.span().start,
            "load.scenario.rate",
            format!("must be above 0, got {text}: a background scenario runs at a fixed rate"),
        )),
        Err(e) => Err(spot.err(rate.span().start, "load.scenario.rate", e.to_string())),
    }
}

/// A scenario's own SLO: the fields of `[slo]` but the generator's health, which is
/// judged once for the whole generator (the plan's `[slo]` bounds apply to it too).
fn scenario_slo(
    spot: &Spot<'_>,
    raw: &Spanned<RawSlo>,
    generator: &GeneratorHealth,
) -> Result<analysis::Slo, LabError> {
    let r = raw.get_ref();
    if let Some(offset) = r
        .achieved
        .as_ref()
        .map(|a| a.span().start)
        .or(r.max_lag.as_ref().map(|l| l.span().start))
    {
        return Err(spot.err(
            offset,
            "load.scenario.slo",
            "the generator's health (achieved, max_lag) is set once, in [slo]",
        ));
    }
    if let Some(offset) = r.first_stream_bound() {
        return Err(spot.err(
            offset,
            "load.scenario.slo",
            "connections and messages are counted for the whole step, not by scenario: bound them once, in [slo]",
        ));
    }
    let mut slo = slo(spot, Some(r), "load.scenario.slo")?;
    slo.generator = *generator;
    Ok(slo)
}

/// A table whose attack and run keys are read by `workload`'s own structs: where its
/// keys were written, and how to split them.
struct Table<'a> {
    spot: &'a Spot<'a>,
    span: std::ops::Range<usize>,
    /// `load.` or `load.scenario.`: how its keys are named in errors.
    prefix: &'static str,
    origin: Origin,
}

impl<'a> Table<'a> {
    fn new(
        spot: &'a Spot<'a>,
        span: std::ops::Range<usize>,
        prefix: &'static str,
        base_dir: &std::path::Path,
    ) -> Table<'a> {
        let place = format!("{}:{}: {prefix}", spot.source_name, spot.line(span.start));
        Table {
            spot,
            span,
            prefix,
            origin: Origin::file(place, base_dir),
        }
    }

    fn key_line(&self, key: &str) -> u64 {
        self.spot.key_line(self.span.clone(), key)
    }

    fn err(&self, key: &str, field: &str, reason: impl Into<String>) -> LabError {
        self.spot.err_at_line(self.key_line(key), field, reason)
    }

    /// The attack keys and the run keys of `fields`; keys that are neither, values
    /// of the wrong type and attack keys in `refused` fail with their line. Each key's
    /// line goes into [`Table::origin`], so later errors name it.
    fn split(
        &mut self,
        fields: &BTreeMap<String, toml::Value>,
        refused: &[(&str, &str)],
    ) -> Result<(AttackFields, RunFields), LabError> {
        let mut attack = toml::Table::new();
        let mut run = toml::Table::new();
        for (key, value) in fields {
            let field = format!("{}{key}", self.prefix);
            let label = format!("{}:{}: {field}", self.spot.source_name, self.key_line(key));
            self.origin.field_labels.insert(key.clone(), label);
            if let Some((_, why)) = refused.iter().find(|(k, _)| k == key) {
                return Err(self.err(key, &field, *why));
            }
            let alone = toml::Table::from_iter([(key.clone(), value.clone())]);
            let typed = if AttackFields::keys().contains(&key.as_str()) {
                attack.insert(key.clone(), value.clone());
                read::<AttackFields>(alone).map(drop)
            } else if RunFields::keys().contains(&key.as_str()) {
                run.insert(key.clone(), value.clone());
                read::<RunFields>(alone).map(drop)
            } else {
                return Err(self.err(key, key, format!("unknown field `{key}`")));
            };
            typed.map_err(|reason| self.err(key, &field, reason))?;
        }
        let whole = |reason| {
            self.spot
                .err(self.span.start, self.prefix.trim_end_matches('.'), reason)
        };
        Ok((read(attack).map_err(whole)?, read(run).map_err(whole)?))
    }
}

/// A table of keys as a fields struct; the error is serde's message.
fn read<T: DeserializeOwned>(table: toml::Table) -> Result<T, String> {
    table.try_into().map_err(|err| err.message().to_owned())
}
