//! One cell: setup and ready hooks, an attack through [`engine::run`] (a library call)
//! into `records.llr`, teardown, then the verdict of its window and its `report.txt`.
//! Whatever fails (a hook, a server that is down, a target that cannot be read) ends up
//! in the cell's row with its reason; only a run folder that cannot be written stops
//! the plan.

use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use analysis::{Miss, Verdict, judge};
use engine::{AttackConfig, RunConfig, StopHandle};
use report::TraceStoreHandle;
use workload::Pacing;

use crate::LabError;
use crate::cells::{Cell, substitute};
use crate::folder::{ScenarioRow, StepRow, StepVerdict, relative};
use crate::hooks::{note, run_hook, wait_ready};
use crate::options::{RunOptions, StepOutput};
use crate::plan::Plan;
use crate::step_fields::{measured, step_fields};
use crate::summarise::{Figures, Window, summarise};

/// What the runner learns from one cell.
pub struct StepResult {
    /// Its row in `summary.json`.
    pub row: StepRow,
    /// Whether Ctrl-C stopped it (its verdict then says nothing).
    pub interrupted: bool,
    /// Its targets did not answer a connect before it sent (`crate::reach`), and why:
    /// the plan stops.
    pub unreachable: Option<String>,
}

/// Runs one cell in `dir` (`steps/NNN-...`), judging it against the plan's SLO.
pub fn run_cell(
    plan: &Plan,
    cell: &Cell,
    dir: &Path,
    run_dir: &Path,
    stop: &StopHandle,
    options: &RunOptions,
) -> Result<StepResult, LabError> {
    std::fs::create_dir_all(dir).map_err(|cause| LabError::Io {
        path: dir.to_owned(),
        cause,
    })?;
    let variant = &plan.variants[cell.variant];
    let values = cell.values(plan);
    let hooks_log = dir.join("hooks.txt");
    let started = Instant::now();
    let mut row = StepRow::new(plan, cell, dir, run_dir);
    let setup = match &variant.setup {
        Some(command) => run_hook(
            "setup",
            &substitute(command, &values),
            variant.hook_timeout,
            &plan.base_dir,
            &hooks_log,
            stop,
        ),
        None => Ok(()),
    };
    let ready = setup.and_then(|()| match &variant.ready {
        Some(ready) => wait_ready(ready, &values, &plan.base_dir, &hooks_log, stop)
            .inspect_err(|why| note(&hooks_log, &format!("# ready: {why}"))),
        None => Ok(()),
    });
    let mut unreachable = None;
    let ready = ready.and_then(|()| {
        check_targets(plan, cell).inspect_err(|why| unreachable = Some(why.clone()))
    });
    let attack = ready.and_then(|()| match plan.load.shards {
        Some(_) => sharded_attack(plan, cell, dir, stop),
        None => attack(plan, cell, dir, stop, options),
    });
    if plan.load.shards.is_some() {
        // The step's records are its shards' files; there is no records.llr.
        row.records = None;
        if let Ok(attacked) = &attack {
            row.shards = attacked
                .records
                .iter()
                .map(|f| relative(Path::new(f), run_dir))
                .collect();
        }
    }
    // Teardown runs even after Ctrl-C (it may stop what setup started): its own handle.
    if let Some(command) = &variant.teardown
        && let Err(why) = run_hook(
            "teardown",
            &substitute(command, &values),
            variant.hook_timeout,
            &plan.base_dir,
            &hooks_log,
            &StopHandle::new(),
        )
    {
        row.notes.push(why);
    }
    row.seconds = started.elapsed().as_secs_f64();
    let interrupted = stop.is_stopping();
    match attack {
        Err(why) => {
            row.set_failed(why);
            // A cell whose attack never started has no record file to point at.
            if !dir.join("records.llr").is_file() {
                row.records = None;
            }
        }
        Ok(_) if interrupted => {
            row.verdict = StepVerdict::Interrupted;
            row.why = "stopped by Ctrl-C; not judged".to_owned();
        }
        Ok(outcome) => {
            let store = options.trace_store.as_ref();
            judge_cell(plan, (cell, store), dir, run_dir, &outcome, &mut row)?;
        }
    }
    if !row.notes.is_empty() {
        row.why = format!("{}; {}", row.why, row.notes.join("; "));
    }
    Ok(StepResult {
        row,
        interrupted,
        unreachable,
    })
}

/// Connects to the step's targets before it sends ([`crate::reach`]), unless the plan
/// says not to; a sharded step's shards may run elsewhere, so they are not checked here.
fn check_targets(plan: &Plan, cell: &Cell) -> Result<(), String> {
    if !plan.load.check_targets || plan.load.shards.is_some() {
        return Ok(());
    }
    let config = run_config(plan, cell)?;
    crate::reach::check(&crate::reach::addresses(&config))
}

/// What an attack left behind.
struct Attacked {
    /// The record files: the step's `records.llr`, or its shards' files.
    records: Vec<String>,
    /// A sharded step: each shard that did not deliver its share, and why.
    failures: Vec<String>,
    /// Each attack's plan: the step's main load, then its background scenarios.
    plans: Vec<workload::Plan>,
    /// A stop rule that ended the step early: what it said, and when (ns from the start).
    fired: Option<(String, u64)>,
}

fn judge_cell(
    plan: &Plan,
    (cell, store): (&Cell, Option<&TraceStoreHandle>),
    dir: &Path,
    run_dir: &Path,
    outcome: &Attacked,
    row: &mut StepRow,
) -> Result<(), LabError> {
    let load = &plan.load;
    let start_ns = load.warmup.as_nanos() as u64;
    let planned_end_ns = (load.warmup + measured(plan, cell)).as_nanos() as u64;
    // A step a stop rule ended is judged on what it sent, up to the rule's firing.
    let end_ns = outcome.fired.as_ref().map_or(planned_end_ns, |(_, at_ns)| {
        (*at_ns).clamp(start_ns + 1, planned_end_ns)
    });
    let mut window = Window { start_ns, end_ns };
    let users = cell.offer.users();
    let asked = |attack: usize, from: u64, to: u64| {
        let plan = outcome.plans.get(attack)?;
        Some(plan.asked_by(to)?.saturating_sub(plan.asked_by(from)?))
    };
    let mut figures = summarise(
        &outcome.records,
        window,
        (outcome.plans.len(), users),
        &asked,
    );
    // A shard's own stop rule ends the step's window where it fired, as one process's.
    let shard_rule = figures.as_ref().ok().and_then(shard_rule);
    if let Some((_, at_ns)) = &shard_rule {
        window.end_ns = (*at_ns).clamp(start_ns + 1, planned_end_ns);
        figures = summarise(
            &outcome.records,
            window,
            (outcome.plans.len(), users),
            &asked,
        );
    }
    let figures = match figures {
        Ok(figures) => figures,
        Err(err) => {
            let mut why = format!("cannot read the records: {err}");
            if !outcome.failures.is_empty() {
                why = format!("{}; {why}", outcome.failures.join("; "));
            }
            row.set_failed(why);
            return Ok(());
        }
    };
    let fired = outcome.fired.as_ref().or(shard_rule.as_ref());
    let verdict = with_stop_rule(
        judge_step(plan, &figures, &mut row.scenarios),
        fired.map(|(rule, _)| rule.as_str()),
    );
    row.fill(&figures.summary, &verdict);
    if !outcome.failures.is_empty() {
        // A share of the load that was never sent says nothing about the server:
        // the step failed, whatever the shards that ran measured.
        let count = plan.load.shards.as_ref().map_or(0, |s| s.count);
        row.set_failed(format!(
            "{}; the figures are those of {} of {count} shards",
            outcome.failures.join("; "),
            outcome.records.len()
        ));
    }
    // The report and the page judge by the plan's bounds, as the verdict.
    let bounds = (plan.slo.generator, plan.slo.min_success_ratio);
    // The report (and so the diagnosis) reads the verdict's window; with a trace
    // store it also judges, once, where the slow traced requests' time went.
    let judged = write_report(
        &outcome.records,
        &dir.join("report.txt"),
        (plan.load.shards.is_some(), store),
        bounds,
        window,
    );
    if let Some(outcome) = judged {
        row.diagnosis = (outcome.diagnosis.as_ref())
            .map(report::words::diagnosis::lines)
            .unwrap_or_default();
        row.spans = (outcome.spans.as_ref())
            .map(report::words::spans::lines)
            .unwrap_or_default();
    }
    row.report = Some(relative(&dir.join("report.txt"), run_dir));
    let title = format!("{}: step {}", plan.name, row.step);
    let plot = dir.join("plot.html");
    match write_plot(&outcome.records, &title, &plot, bounds, window) {
        Ok(()) => row.plot = Some(relative(&dir.join("plot.html"), run_dir)),
        Err(why) => row.notes.push(why),
    }
    Ok(())
}

/// The first stop rule that ended a shard: `shard I/N: RULE`, and when (ns from the
/// shards' time zero).
fn shard_rule(figures: &Figures) -> Option<(String, u64)> {
    let start_unix_ns = figures.sources.first()?.header.start_unix_ns;
    figures
        .sources
        .iter()
        .filter_map(|source| {
            let end = source.end.as_ref()?;
            let shard = source.header.shard.as_ref()?;
            (end.reason == record::StopReason::StopRule).then(|| {
                let rule = format!("shard {}/{}: {}", shard.index, shard.count, end.detail);
                (rule, end.at_unix_ns.saturating_sub(start_unix_ns))
            })
        })
        .min_by_key(|(_, at_ns)| *at_ns)
}

/// The plan's bounds a step's report and page judge by: the generator's health and the
/// least success ratio.
type Bounds = (analysis::GeneratorHealth, Option<f64>);

/// `plot.html` as `loadlab plot` makes it, of the verdict's `window` (so its figures,
/// charts and diagnosis are the verdict's, and it says the warm-up is left out). A plot
/// that cannot be made is the step's note, not its failure (the verdict does not depend
/// on it), and leaves no file.
fn write_plot(
    records: &[String],
    title: &str,
    path: &Path,
    (health, min_success_ratio): Bounds,
    window: Window,
) -> Result<(), String> {
    let mut config = plot::PlotConfig::new(
        Some(title.to_owned()),
        plot::DEFAULT_THRESHOLD,
        plot::DEFAULT_EVERY_NS,
    )
    .map_err(|e| format!("no plot: {e}"))?;
    config.health = health;
    config.min_success_ratio = min_success_ratio;
    config.window_ns = Some((window.start_ns, window.end_ns));
    let html = plot::RunPlot::read(records, &config)
        .map_err(|e| format!("no plot: {e}"))?
        .html();
    std::fs::write(path, html).map_err(|e| {
        let _ = std::fs::remove_file(path);
        format!("no plot: {}: {e}", path.display())
    })
}

/// The step's verdict: the plan's SLO on its main load, and each background scenario
/// with an SLO on its own figures (a step passes only if every one holds; one the
/// generator could not deliver makes it inconclusive). Fills `scenarios` with each
/// background scenario's figures.
fn judge_step(plan: &Plan, figures: &Figures, scenarios: &mut Vec<ScenarioRow>) -> Verdict {
    let mut verdicts = vec![judge(&figures.summary, &plan.slo)];
    scenarios.clear();
    // A window with none of the main load's requests (a stop rule fired in the
    // warm-up) is the main verdict's alone to explain.
    let judged = figures.summary.requests > 0;
    for (scenario, summary) in plan.load.scenarios.iter().zip(&figures.scenarios) {
        let verdict = scenario.slo.as_ref().filter(|_| judged).map(|slo| {
            let named = |misses: Vec<Miss>| -> Vec<Miss> {
                let name = &scenario.name;
                (misses.into_iter())
                    .map(|miss| Miss::Scenario {
                        name: name.clone(),
                        miss: Box::new(miss),
                    })
                    .collect()
            };
            match judge(summary, slo) {
                Verdict::Pass => Verdict::Pass,
                Verdict::Fail(reasons) => Verdict::Fail(named(reasons)),
                Verdict::Inconclusive(reasons) => Verdict::Inconclusive(named(reasons)),
            }
        });
        scenarios.push(ScenarioRow::new(&scenario.name, summary, verdict.as_ref()));
        verdicts.extend(verdict);
    }
    combine(verdicts)
}

/// Inconclusive if any is (with every reason), else fail if any fails, else pass.
fn combine(verdicts: Vec<Verdict>) -> Verdict {
    let mut fails = Vec::new();
    let mut inconclusive = Vec::new();
    for verdict in verdicts {
        match verdict {
            Verdict::Pass => {}
            Verdict::Fail(reasons) => fails.extend(reasons),
            Verdict::Inconclusive(reasons) => inconclusive.extend(reasons),
        }
    }
    match (inconclusive.is_empty(), fails.is_empty()) {
        (false, _) => Verdict::Inconclusive(inconclusive.into_iter().chain(fails).collect()),
        (true, false) => Verdict::Fail(fails),
        (true, true) => Verdict::Pass,
    }
}

/// No monitor: nothing sampled.
struct NoSamples;

impl engine::SampleFeed for NoSamples {
    fn start(&mut self, _clock: engine::Clock) {}
    fn ready(&mut self, _frames: &mut Vec<record::SampleFrame>) {}
    fn finish(&mut self, _frames: &mut Vec<record::SampleFrame>) {}
}

/// A step a stop rule ended has clearly failed, unless the generator was at fault
/// (then it stays inconclusive); a rule that fired during the warm-up leaves no window,
/// and the rule alone is the reason.
fn with_stop_rule(verdict: Verdict, fired: Option<&str>) -> Verdict {
    let Some(rule) = fired else { return verdict };
    let early = Miss::StoppedEarly(rule.to_owned());
    match verdict {
        Verdict::Pass => Verdict::Fail(vec![early]),
        Verdict::Fail(reasons) => Verdict::Fail(std::iter::once(early).chain(reasons).collect()),
        Verdict::Inconclusive(reasons) if reasons == [Miss::NoRequests] => {
            Verdict::Fail(vec![early])
        }
        inconclusive => inconclusive,
    }
}

/// `report.txt` as `loadlab report` prints it, of the verdict's `window` (so its
/// figures and diagnosis are the verdict's); a report that cannot be made is noted
/// in the file instead (the verdict does not depend on it). Returns what it judged
/// (its diagnosis, where the slow traced requests' time went, read from `store`). A
/// sharded step's report ends with the warnings `report` prints on stderr about its
/// shards (one missing, one that ended early, their start skews).
fn write_report(
    records: &[String],
    path: &Path,
    (sharded, store): (bool, Option<&TraceStoreHandle>),
    (health, min_success_ratio): Bounds,
    window: Window,
) -> Option<report::ReportOutcome> {
    let file = std::fs::File::create(path).ok()?;
    let mut out = BufWriter::new(file);
    let mut warnings: Vec<u8> = Vec::new();
    let result =
        report::ReportConfig::new(report::ReportType::Text, None, None).and_then(|mut config| {
            config.health = health;
            config.min_success_ratio = min_success_ratio;
            config.window_ns = Some((window.start_ns, window.end_ns));
            config.trace_store = store.cloned();
            report::run_report(records, &config, &mut out, &mut warnings)
        });
    if sharded && !warnings.is_empty() {
        let _ = writeln!(out);
        let _ = out.write_all(&warnings);
    }
    result
        .inspect_err(|err| {
            let _ = writeln!(out, "no report: {err}");
        })
        .ok()
}

/// Builds the cell's attack and runs it into `records.llr`.
fn attack(
    plan: &Plan,
    cell: &Cell,
    dir: &Path,
    stop: &StopHandle,
    options: &RunOptions,
) -> Result<Attacked, String> {
    let config = run_config(plan, cell)?;
    let settings = &plan.load.settings;
    let variant = &plan.variants[cell.variant];
    let specs: Vec<String> = settings
        .monitor
        .iter()
        .chain(&variant.monitor)
        .cloned()
        .collect();
    let mut samples: Box<dyn engine::SampleFeed> = match &options.monitor {
        Some(factory) if !specs.is_empty() => (factory.0)(&specs, settings.monitor_interval)
            .map_err(|e| format!("load.monitor, variant.monitor: {e}"))?,
        _ => Box::new(NoSamples),
    };
    let path = dir.join("records.llr");
    let file = std::fs::File::create(&path)
        .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    let out: StepOutput = Box::new(BufWriter::with_capacity(1 << 16, file));
    let (out, watch) = match &options.watch {
        Some(factory) => (factory.0)(&config, stop, out, &path.display().to_string()),
        None => (out, None),
    };
    let (mut observer, finish) = match watch {
        Some(watch) => (Some(watch.observer), Some(watch.finish)),
        None => (None, None),
    };
    let result = run_forwarding_stop(
        &config,
        out,
        stop,
        samples.as_mut(),
        observer.as_deref_mut(),
    )
    .map_err(|e| format!("{e} (into {})", path.display()))
    .and_then(|(mut out, outcome)| {
        out.flush()
            .map_err(|e| format!("writing {}: {e}", path.display()))?;
        Ok(outcome)
    });
    // The output is closed here: a dashboard reads the end of the step.
    if let Some(finish) = finish {
        finish(result.is_ok());
    }
    let outcome = result?;
    Ok(Attacked {
        records: vec![path.display().to_string()],
        failures: Vec::new(),
        plans: plans(&config),
        fired: outcome.fired.map(|f| (f.describe(), f.at_ns)),
    })
}

/// The cell's attack as the plan's shards ([`crate::sharded`]): its run is built here
/// too, so a bad field fails before any shard starts, and its plans give the asked
/// rate of the whole run.
fn sharded_attack(
    plan: &Plan,
    cell: &Cell,
    dir: &Path,
    stop: &StopHandle,
) -> Result<Attacked, String> {
    let config = run_config(plan, cell)?;
    let sharded = crate::sharded::run_shards(plan, cell, dir, stop)?;
    if sharded.files.is_empty() && !stop.is_stopping() {
        return Err(format!(
            "no shard left records: {}",
            sharded.failures.join("; ")
        ));
    }
    Ok(Attacked {
        records: sharded
            .files
            .iter()
            .map(|f| f.display().to_string())
            .collect(),
        failures: sharded.failures,
        plans: plans(&config),
        fired: None,
    })
}

/// Each attack's plan, the step's main load first: what gives the asked rate.
fn plans(config: &RunConfig) -> Vec<workload::Plan> {
    (config.attacks.iter())
        .map(|attack| attack.settings.plan.clone())
        .collect()
}

/// [`engine::run`] on a handle of its own: a stop rule that fires drains the handle it
/// is given, and that must end this step only, not the plan. Ctrl-C on the plan's
/// handle is forwarded to the step's.
fn run_forwarding_stop(
    config: &RunConfig,
    out: StepOutput,
    stop: &StopHandle,
    samples: &mut dyn engine::SampleFeed,
    observer: Option<&mut (dyn engine::RunObserver + 'static)>,
) -> Result<(StepOutput, engine::RunOutcome), String> {
    let step_stop = StopHandle::new();
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                if stop.is_stopping() {
                    step_stop.drain();
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        let result = match observer {
            Some(observer) => engine::run_with_observer(config, out, &step_stop, samples, observer),
            None => engine::run_with_samples(config, out, &step_stop, samples),
        }
        .map_err(|e| format!("attack: {}", units::error_chain(&e)));
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        result
    })
}

/// The cell's run: its attacks ([`step_fields`]) built as `attack` builds its runs.
fn run_config(plan: &Plan, cell: &Cell) -> Result<RunConfig, String> {
    let load = &plan.load;
    // The run-wide settings first: gRPC reflection over TLS reads them.
    let mut config = RunConfig::from_fields(Vec::new(), &load.run, &load.attack_origin)
        .map_err(|e| e.to_string())?;
    let attacks = step_fields(plan, cell)
        .iter()
        .map(|(fields, origin)| AttackConfig::from_fields(fields, origin, &config.settings.tls))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    let closed = attacks
        .first()
        .is_some_and(|main| matches!(main.settings.plan.pacing, Pacing::Closed { .. }));
    if closed && cell.offer.rate().is_some() {
        return Err("internal: a rate step ran the closed model".to_owned());
    }
    config.attacks = attacks;
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;
    use units::GoDuration;

    #[test]
    fn a_fired_stop_rule_fails_the_step_unless_the_generator_was_at_fault() {
        let rule = Some("'errors > 50% for 1s' fired at 1s (value 1)");
        let early = Miss::StoppedEarly("'errors > 50% for 1s' fired at 1s (value 1)".to_owned());
        let short = Miss::SentShort {
            sent_per_sec: 1.0,
            asked_per_sec: 2.0,
            min_ratio: 0.99,
        };
        let low = Miss::Success {
            ratio: 0.01,
            min: 0.99,
        };
        let inconclusive = Verdict::Inconclusive(vec![short]);
        let rows = [
            (Verdict::Pass, None, Verdict::Pass),
            (Verdict::Pass, rule, Verdict::Fail(vec![early.clone()])),
            (
                Verdict::Fail(vec![low.clone()]),
                rule,
                Verdict::Fail(vec![early.clone(), low]),
            ),
            (
                Verdict::Inconclusive(vec![Miss::NoRequests]),
                rule,
                Verdict::Fail(vec![early]),
            ),
            (inconclusive.clone(), rule, inconclusive),
        ];
        for (verdict, fired, want) in rows {
            assert_eq!(
                with_stop_rule(verdict.clone(), fired),
                want,
                "{verdict:?} {fired:?}"
            );
        }
    }

    #[test]
    fn a_step_whose_records_cannot_be_read_gets_no_plot_and_a_note() {
        let dir = tempfile::tempdir().expect("tempdir");
        let records = dir.path().join("records.llr");
        let plot = dir.path().join("plot.html");
        // Missing, not a record file, empty: each a note naming the file, no page.
        let rows: [Option<&[u8]>; 3] = [None, Some(b"not a record file\n"), Some(b"")];
        for content in rows {
            let _ = std::fs::remove_file(&records);
            if let Some(bytes) = content {
                std::fs::write(&records, bytes).expect("write");
            }
            let why = write_plot(
                &[records.display().to_string()],
                "t",
                &plot,
                (analysis::GeneratorHealth::default(), None),
                Window {
                    start_ns: 0,
                    end_ns: u64::MAX,
                },
            )
            .expect_err("no plot from unreadable records");
            assert!(
                why.starts_with("no plot: ") && why.contains("records.llr"),
                "{content:?}: {why}"
            );
            assert!(!plot.exists(), "{content:?}: a plot.html was left");
        }
    }

    fn shard_source(index: u64, end: Option<(record::StopReason, u64)>) -> record::SourceSummary {
        record::SourceSummary {
            name: format!("shard-{index}.llr"),
            format: record::InputFormat::Binary,
            header: record::RunHeader {
                start_unix_ns: 1_000_000_000,
                shard: Some(record::ShardInfo {
                    index,
                    count: 2,
                    ..record::ShardInfo::default()
                }),
                ..record::RunHeader::default()
            },
            stats: Vec::new(),
            end: end.map(|(reason, at_unix_ns)| record::RunEnd {
                reason,
                at_unix_ns,
                detail: format!("rule of shard {index}"),
                ..record::RunEnd::default()
            }),
            torn: None,
            records: 0,
            samples: record::SampleSummary::default(),
            logged: 0,
        }
    }

    #[test]
    fn the_first_shard_rule_that_fired_ends_the_window() {
        use record::StopReason::{Completed, Interrupted, StopRule};
        let rows = [
            (vec![None, None], None),
            (
                vec![
                    Some((Completed, 9_000_000_000)),
                    Some((Interrupted, 2_000_000_000)),
                ],
                None,
            ),
            (
                vec![
                    Some((StopRule, 4_000_000_000)),
                    Some((StopRule, 3_000_000_000)),
                ],
                Some(("shard 1/2: rule of shard 1".to_owned(), 2_000_000_000)),
            ),
            (
                vec![Some((StopRule, 5_000_000_000)), None],
                Some(("shard 0/2: rule of shard 0".to_owned(), 4_000_000_000)),
            ),
        ];
        for (ends, want) in rows {
            let figures = Figures {
                sources: ends
                    .iter()
                    .enumerate()
                    .map(|(i, end)| shard_source(i as u64, *end))
                    .collect(),
                ..Figures::default()
            };
            assert_eq!(shard_rule(&figures), want, "{ends:?}");
        }
    }

    #[test]
    fn a_step_passes_only_if_every_judged_scenario_does() {
        // Each reason stands for itself by the rule it names.
        let why = |rule: &str| Miss::StoppedEarly(rule.to_owned());
        let fail = |rule: &str| Verdict::Fail(vec![why(rule)]);
        let unsure = |rule: &str| Verdict::Inconclusive(vec![why(rule)]);
        let rows = [
            (vec![Verdict::Pass, Verdict::Pass], Verdict::Pass),
            (vec![Verdict::Pass, fail("news: p99")], fail("news: p99")),
            (
                vec![fail("success"), fail("news: p99")],
                Verdict::Fail(vec![why("success"), why("news: p99")]),
            ),
            (
                vec![fail("success"), unsure("news: generator")],
                Verdict::Inconclusive(vec![why("news: generator"), why("success")]),
            ),
        ];
        for (verdicts, want) in rows {
            assert_eq!(combine(verdicts.clone()), want, "{verdicts:?}");
        }
    }

    /// A step of 2 s at 1000/s, watched by a host sampler: its first second (the
    /// warm-up) with a send lag of 5 ms, its second 3 ms, answers in 100 µs.
    fn lagging_step(start_unix_ns: u64) -> Vec<u8> {
        use record::{Compression, RecordWriter, RunHeader, SampleBatch, SampleFrame};
        use record::{SamplerInfo, SeriesInfo, SeriesKind};
        const MS: u64 = 1_000_000;
        let header = RunHeader {
            tool: "loadlab test".to_owned(),
            start_unix_ns,
            attacks: vec![record::AttackInfo::default()],
            targets: vec![record::TargetInfo {
                method: "GET".to_owned(),
                url: "http://127.0.0.1:8080/".to_owned(),
                ..record::TargetInfo::default()
            }],
            ..RunHeader::default()
        };
        let mut writer = RecordWriter::new(Vec::new(), &header, Compression::Raw).unwrap();
        for n in 0..2000u64 {
            writer.push(&record::Record {
                intended_unix_ns: start_unix_ns + n * MS,
                send_lag_ns: if n < 1000 { 5 * MS } else { 3 * MS },
                latency_ns: MS / 10,
                status: 200,
                ..record::Record::default()
            });
        }
        let mut frame = SampleFrame {
            samplers: vec![SamplerInfo {
                kind: "host".into(),
                name: "host".to_owned(),
            }],
            series: vec![SeriesInfo {
                sampler: 0,
                name: "host.cpu_percent".to_owned(),
                labels: [("cpu".to_owned(), "all".to_owned())].into_iter().collect(),
                unit: "percent".to_owned(),
                kind: SeriesKind::Gauge,
            }],
            ..SampleFrame::default()
        };
        for second in 0..3 {
            frame.batch = SampleBatch::dense(start_unix_ns + second * 1000 * MS, &[40.0]);
            writer.write_samples(&frame).unwrap();
            frame.first_sampler += frame.samplers.len() as u32;
            frame.first_series += frame.series.len() as u32;
            frame.samplers.clear();
            frame.series.clear();
        }
        writer.close().unwrap()
    }

    /// The write-up's "What ran out first" (the step's diagnosis) and its verdict read
    /// one window: the lag the diagnosis quotes is the verdict's (3 ms), not the whole
    /// file's with its warm-up (5 ms).
    #[test]
    fn the_diagnosis_quotes_the_lag_of_the_verdicts_window() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("records.llr");
        std::fs::write(&path, lagging_step(1_000_000_000_000)).expect("write");
        let records = [path.display().to_string()];
        let window = Window {
            start_ns: 1_000_000_000,
            end_ns: 2_000_000_000,
        };
        let figures = summarise(&records, window, (1, None), &|_, _, _| None).expect("figures");
        let verdict = judge(&figures.summary, &analysis::Slo::default());
        let [Miss::Lag(lag)] = verdict.misses() else {
            panic!("want the lag alone: {verdict:?}");
        };
        let health = analysis::GeneratorHealth::default();
        let report = dir.path().join("report.txt");
        let outcome = write_report(&records, &report, (false, None), (health, None), window);
        let diagnosis = outcome.and_then(|o| o.diagnosis).expect("a diagnosis");
        let lines = report::words::diagnosis::lines(&diagnosis);
        let quoted = format!("send lag p99 {}", GoDuration::report_ns(lag.p99_ns));
        let said = lines.first().map(String::as_str).unwrap_or_default();
        assert!(said.contains(&quoted), "{said:?} does not say {quoted:?}");
        assert_eq!(lag.p99_ns, 3_000_000);

        // The page reads the same window, and says the warm-up is left out of it.
        let page = dir.path().join("plot.html");
        write_plot(&records, "t", &page, (health, None), window).expect("plot");
        let html = std::fs::read_to_string(&page).expect("page");
        let report = std::fs::read_to_string(&report).expect("report");
        let requests = |text: &str| {
            let line = (text.lines().map(|l| l.trim_start_matches("<pre>")))
                .find(|l| l.starts_with("Requests"))
                .unwrap_or_default();
            line.split_whitespace()
                .nth(4)
                .unwrap_or_default()
                .to_owned()
        };
        assert_eq!(requests(&html), requests(&report), "{report}");
        assert_eq!(requests(&report), format!("{},", figures.summary.requests));
        assert!(html.contains("the warm-up before it was sent but is left out of this page"));
        assert!(
            html.contains(&quoted),
            "the page's panel quotes the verdict's lag"
        );
    }
}
