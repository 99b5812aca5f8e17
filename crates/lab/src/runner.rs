//! [`run_plan`]: a plan's cells in order (sweep, matrix) or one capacity search per
//! variant ([`analysis::Search`]), each cell judged on its own window, the run folder
//! rewritten after every step. `-resume` keeps the rows a previous run finished; Ctrl-C
//! (the caller drains the [`StopHandle`]) stops the current step and leaves the summary
//! marked incomplete.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use analysis::{Next, Outcome, Search};
use engine::StopHandle;

use crate::LabError;
use crate::cells::{Cell, Offer, cells, format_rate};
use crate::folder::held_rows::HeldAnswer;
use crate::folder::{
    RunSummary, StepKind, StepRow, StepVerdict, VariantResult, cell_stats, log_line, redact,
    started_now,
};
use crate::options::RunOptions;
use crate::plan::{Mode, Plan, SearchOver};
use crate::step::run_cell;

/// The state of a run in progress.
struct Run<'a> {
    plan: &'a Plan,
    options: &'a RunOptions,
    dir: &'a Path,
    stop: &'a StopHandle,
    progress: &'a mut dyn Write,
    summary: RunSummary,
    /// Rows of the run being resumed, by step folder.
    done: Vec<StepRow>,
    next_index: usize,
    interrupted: bool,
    /// A step's targets did not answer a connect: why the plan stopped.
    unreachable: Option<String>,
}

/// Runs a plan into its run folder, returning the summary written there. Cells that
/// fail (hooks, a server that is down) are rows with their reason; only a folder that
/// cannot be written is an error.
pub fn run_plan(
    plan: &Plan,
    options: &RunOptions,
    stop: &StopHandle,
    progress: &mut dyn Write,
) -> Result<RunSummary, LabError> {
    let dir = options.output.as_path();
    let previous = RunSummary::read(dir)?;
    if previous.is_some() && !options.resume {
        return Err(LabError::Folder(format!(
            "{} holds a run already: give -resume to continue it, or another -output",
            dir.display()
        )));
    }
    let steps_dir = dir.join("steps");
    std::fs::create_dir_all(&steps_dir).map_err(|cause| LabError::Io {
        path: steps_dir,
        cause,
    })?;
    let plan_copy = dir.join("plan.toml");
    std::fs::write(&plan_copy, redact(&plan.text)).map_err(|cause| LabError::Io {
        path: plan_copy,
        cause,
    })?;
    let started = previous
        .as_ref()
        .and_then(|p| p.started.clone())
        .unwrap_or_else(started_now);
    let done: Vec<StepRow> = previous
        .map(|p| {
            p.steps
                .into_iter()
                .filter(|s| s.verdict != StepVerdict::Interrupted)
                .collect()
        })
        .unwrap_or_default();
    let mut run = Run {
        plan,
        options,
        dir,
        stop,
        progress,
        summary: RunSummary {
            plan: plan.name.clone(),
            plan_file: plan.source_name.clone(),
            mode: plan.mode,
            started: Some(started),
            ..RunSummary::default()
        },
        done,
        next_index: 0,
        interrupted: false,
        unreachable: None,
    };
    log_line(
        dir,
        &format!(
            "start: plan {:?} ({}), {} variants",
            plan.name,
            plan.mode.word(),
            plan.variants.len()
        ),
    )?;
    match plan.mode {
        Mode::Sweep | Mode::Matrix => run.cells()?,
        Mode::Search => run.searches()?,
    }
    if run.plan.mode != Mode::Search {
        run.summary.variants = held_by_sweep(plan, &run.summary.steps);
    }
    if run.plan.mode == Mode::Matrix {
        run.summary.cells = cell_stats(&run.summary.steps);
        run.summary.cells.sort_by(|a, b| {
            plan_order(plan, a).cmp(&plan_order(plan, b)).then(
                a.rate_asked
                    .unwrap_or(0.0)
                    .total_cmp(&b.rate_asked.unwrap_or(0.0)),
            )
        });
    }
    run.summary.complete = !run.interrupted;
    run.summary.write(dir)?;
    if let Some(why) = run.unreachable {
        log_line(dir, &format!("end: stopped before sending: {why}"))?;
        return Err(LabError::Unreachable(why));
    }
    log_line(
        dir,
        if run.interrupted {
            "end: interrupted; summary marked incomplete"
        } else {
            "end: complete"
        },
    )?;
    Ok(run.summary)
}

impl Run<'_> {
    fn cells(&mut self) -> Result<(), LabError> {
        for cell in cells(self.plan) {
            if let Some(why) = self.skip_reason(&cell) {
                self.skip(&cell, why)?;
                continue;
            }
            self.step(&cell, StepKind::of(self.plan.mode))?;
            if self.interrupted {
                break;
            }
        }
        Ok(())
    }

    /// With `load.stop_after_failures = N`, why `cell` is not worth running: N steps
    /// of its variant (with the same matrix values) at a lower offer did not pass, so
    /// a higher one would only push a saturated server further.
    fn skip_reason(&self, cell: &Cell) -> Option<String> {
        let limit = self.plan.load.stop_after_failures;
        if limit == 0 {
            return None;
        }
        let level = offer_level(&cell.offer)?;
        let variant = &self.plan.variants[cell.variant].name;
        let params: std::collections::BTreeMap<String, String> =
            cell.params.iter().cloned().collect();
        let below = self
            .summary
            .steps
            .iter()
            .filter(|row| &row.variant == variant && row.params == params)
            .filter(|row| {
                !matches!(
                    row.verdict,
                    StepVerdict::Pass | StepVerdict::Skipped | StepVerdict::Interrupted
                )
            })
            .filter(|row| row_level(row).is_some_and(|l| l < level))
            .count();
        (below >= limit as usize).then(|| {
            format!(
                "skipped: {below} lower step(s) did not pass (load.stop_after_failures = {limit})"
            )
        })
    }

    /// Records a skipped cell (keeping the folder numbering of a full run, so that
    /// `-resume` finds the same names).
    fn skip(&mut self, cell: &Cell, why: String) -> Result<(), LabError> {
        let index = self.next_index;
        self.next_index += 1;
        let folder = cell.folder(self.plan, index);
        let mut row = StepRow::new(
            self.plan,
            cell,
            &self.dir.join("steps").join(&folder),
            self.dir,
        );
        (row.verdict, row.why, row.records, row.hooks) = (StepVerdict::Skipped, why, None, None);
        let line = format!("step {folder}: {}", row.why);
        let _ = writeln!(self.progress, "loadlab run: {line}");
        log_line(self.dir, &line)?;
        self.summary.steps.push(row);
        self.summary.write(self.dir)
    }

    /// Runs (or, resuming, recalls) one cell; returns its row.
    fn step(&mut self, cell: &Cell, kind: StepKind) -> Result<StepRow, LabError> {
        let index = self.next_index;
        self.next_index += 1;
        let folder = cell.folder(self.plan, index);
        if let Some(row) = self.done.iter().find(|r| r.step == folder).cloned() {
            log_line(
                self.dir,
                &format!(
                    "step {folder}: kept from the resumed run: {}: {}",
                    row.verdict, row.why
                ),
            )?;
            self.summary.steps.push(row.clone());
            return Ok(row);
        }
        let _ = writeln!(self.progress, "loadlab run: step {folder} ...");
        let step_dir = self.dir.join("steps").join(&folder);
        let result = run_cell(
            self.plan,
            cell,
            &step_dir,
            self.dir,
            self.stop,
            self.options,
        )?;
        let mut row = result.row;
        row.kind = kind;
        self.interrupted |= result.interrupted;
        if let Some(why) = result.unreachable {
            // Every later step would find the same: the plan stops here, naming them.
            self.interrupted = true;
            self.unreachable = Some(why);
        }
        let line = format!(
            "step {folder} ({}, {}): {}: {}",
            row.variant,
            offer_text(&cell.offer),
            row.verdict,
            row.why
        );
        let _ = writeln!(self.progress, "loadlab run: {line}");
        log_line(self.dir, &line)?;
        self.summary.steps.push(row.clone());
        self.summary.write(self.dir)?;
        if !self.interrupted {
            self.cool_down();
        }
        Ok(row)
    }

    /// The pause between steps; Ctrl-C cuts it short.
    fn cool_down(&mut self) {
        let until = Instant::now() + self.plan.load.cooldown;
        while Instant::now() < until && !self.stop.is_stopping() {
            std::thread::sleep(
                until
                    .saturating_duration_since(Instant::now())
                    .min(Duration::from_millis(50)),
            );
        }
        self.interrupted |= self.stop.is_stopping();
    }

    fn searches(&mut self) -> Result<(), LabError> {
        for variant in 0..self.plan.variants.len() {
            let result = self.search(variant)?;
            self.summary.variants.push(result);
            self.summary.write(self.dir)?;
            if self.interrupted {
                break;
            }
        }
        Ok(())
    }

    /// One variant's capacity search: probes until [`Search`] is done, the probe budget
    /// or the wall-time budget is spent, or a probe cannot run. Its answer is the
    /// highest level (rate, or users) that passed, with what that step held when it had
    /// connections.
    fn search(&mut self, variant: usize) -> Result<VariantResult, LabError> {
        let started = Instant::now();
        let (how, held, probes) = self.probe_until_done(variant, started)?;
        let name = self.plan.variants[variant].name.clone();
        let users = self.plan.search.over == SearchOver::Users;
        let held_row = held.and_then(|level| {
            (self.summary.steps.iter())
                .filter(|row| row.variant == name && row_level(row) == Some(level))
                .rfind(|row| row.verdict == StepVerdict::Pass)
        });
        Ok(VariantResult {
            variant: name.clone(),
            max_rate_held: held.filter(|_| !users),
            max_users_held: held.filter(|_| users).map(|level| level as u64),
            how,
            probes: Some(probes),
            seconds: Some(started.elapsed().as_secs_f64()),
            held: held_row.and_then(HeldAnswer::of),
        })
    }

    /// Runs a variant's probes; how the search ended, the level it found held and the
    /// probes run.
    fn probe_until_done(
        &mut self,
        variant: usize,
        started: Instant,
    ) -> Result<(String, Option<f64>, usize), LabError> {
        let settings = self.plan.search;
        let mut search =
            Search::new(settings.config).map_err(|e| LabError::Folder(format!("search: {e}")))?;
        let level = Level(settings.over);
        let end = |how: String, held: Option<f64>, search: &Search| {
            Ok((how, held, search.probes().len()))
        };
        loop {
            let (rate, kind) = match search.next() {
                Next::Probe(rate) => (rate, StepKind::Probe),
                Next::Confirm(rate) => (rate, StepKind::Confirm),
                done => {
                    let (how, held) = describe_end(&done, &search, started.elapsed(), level);
                    return end(how, held, &search);
                }
            };
            if let Some(max) = settings.max_time
                && started.elapsed() >= max
            {
                let held = highest_pass(&search);
                let how = format!(
                    "stopped: wall-time budget {} spent after {} probes",
                    units::GoDuration(max),
                    search.probes().len()
                );
                return end(how, held, &search);
            }
            let cell = Cell {
                variant,
                offer: level.offer(rate),
                params: Vec::new(),
                repeat: 1,
            };
            let row = self.step(&cell, kind)?;
            if let Some(why) = &self.unreachable {
                return end(format!("stopped: {why}"), None, &search);
            }
            if self.interrupted {
                return end("interrupted".to_owned(), highest_pass(&search), &search);
            }
            let outcome = match row.verdict {
                StepVerdict::Pass => Outcome::Pass,
                StepVerdict::Fail => Outcome::Fail,
                StepVerdict::Inconclusive => Outcome::Inconclusive,
                StepVerdict::Failed | StepVerdict::Skipped | StepVerdict::Interrupted => {
                    let how = format!(
                        "stopped: the probe at {} could not run: {}",
                        level.words(rate),
                        row.why
                    );
                    return end(how, highest_pass(&search), &search);
                }
            };
            search.record(rate, outcome);
        }
    }
}

/// What a search's levels are: rates or user counts.
#[derive(Clone, Copy)]
struct Level(SearchOver);

impl Level {
    /// The step a probe at `level` runs.
    fn offer(self, level: f64) -> Offer {
        match self.0 {
            SearchOver::Rates => Offer::Rate(level),
            SearchOver::Users => Offer::Users(level as u64),
        }
    }

    /// `500/s` or `500 users`.
    fn words(self, level: f64) -> String {
        match self.0 {
            SearchOver::Rates => format!("{}/s", format_rate(level)),
            SearchOver::Users => format!("{} users", level as u64),
        }
    }
}

fn highest_pass(search: &Search) -> Option<f64> {
    search
        .probes()
        .iter()
        .filter(|p| p.outcome == Outcome::Pass)
        .map(|p| p.rate_per_sec)
        .reduce(f64::max)
}

/// How a search ended, in words, and the level (rate, or users) it found held.
fn describe_end(
    done: &Next,
    search: &Search,
    took: Duration,
    level: Level,
) -> (String, Option<f64>) {
    let probes = search.probes().len();
    let took = units::round_for_report(took);
    let rate = |r: f64| level.words(r);
    match *done {
        Next::Found { capacity_per_sec } => (
            format!(
                "search: found and confirmed in {probes} probes, {}",
                units::GoDuration(took)
            ),
            Some(capacity_per_sec),
        ),
        Next::BelowMinimum { failed_per_sec } => (
            format!("search: even the minimum, {}, failed", rate(failed_per_sec)),
            None,
        ),
        Next::AboveMaximum { held_per_sec } => (
            format!(
                "search: the maximum, {}, held; the capacity is higher",
                rate(held_per_sec)
            ),
            Some(held_per_sec),
        ),
        Next::GeneratorLimited {
            held_per_sec,
            inconclusive_per_sec,
        } => (
            // Nothing is known about the server at that rate: the step says why (its
            // verdict's reasons), not a guess that the server held.
            format!(
                "search: the generator could not deliver {} (inconclusive): nothing is known \
                 about the server from there up",
                rate(inconclusive_per_sec)
            ),
            held_per_sec,
        ),
        Next::BudgetSpent {
            held_per_sec,
            failed_per_sec,
        } => (
            format!(
                "search: probe budget ({probes}) spent; the capacity is between {} and {}",
                held_per_sec.map_or("none".to_owned(), rate),
                failed_per_sec.map_or("?".to_owned(), rate)
            ),
            held_per_sec,
        ),
        Next::Probe(_) | Next::Confirm(_) => {
            ("search: unfinished".to_owned(), highest_pass(search))
        }
    }
}

/// A matrix cell's place in the plan as written (variant, then each axis value), so a
/// shuffled run's table still reads in plan order.
fn plan_order(plan: &Plan, cell: &crate::folder::CellStats) -> Vec<Option<usize>> {
    let variant = plan.variants.iter().position(|v| v.name == cell.variant);
    let values = plan.matrix.axes.iter().map(|(axis, values)| {
        let value = cell.params.get(axis)?;
        values.iter().position(|v| v == value)
    });
    std::iter::once(variant).chain(values).collect()
}

/// Where an offer stands on its variant's ladder (a rate, or users); a schedule is a
/// step of its own.
fn offer_level(offer: &Offer) -> Option<f64> {
    match offer {
        Offer::Rate(rate) => Some(*rate),
        Offer::Users(users) => Some(*users as f64),
        Offer::Schedule(_) => None,
    }
}

fn row_level(row: &StepRow) -> Option<f64> {
    row.rate_asked.or(row.users.map(|u| u as f64))
}

fn offer_text(offer: &Offer) -> String {
    match offer {
        Offer::Rate(rate) => format!("{}/s", format_rate(*rate)),
        Offer::Users(users) => format!("{users} users"),
        Offer::Schedule(schedule) => schedule.clone(),
    }
}

/// Per variant, the highest asked rate (or user count) that passed below the variant's
/// first step that did not (field report 000's "maximum sustainable rate"), with what
/// that step held when it had connections.
fn held_by_sweep(plan: &Plan, steps: &[StepRow]) -> Vec<VariantResult> {
    plan.variants
        .iter()
        .map(|variant| {
            let mut rows: Vec<&StepRow> = steps
                .iter()
                .filter(|s| s.variant == variant.name && row_level(s).is_some())
                .collect();
            rows.sort_by(|a, b| {
                row_level(a)
                    .partial_cmp(&row_level(b))
                    .unwrap_or(std::cmp::Ordering::Equal)
            });
            let first_miss = rows.iter().position(|s| s.verdict != StepVerdict::Pass);
            let held = rows[..first_miss.unwrap_or(rows.len())].last();
            let how = match first_miss.map(|i| rows[i]) {
                None if rows.is_empty() => "no rate or users steps".to_owned(),
                None => "every step passed".to_owned(),
                Some(miss) => format!("highest pass below {} ({})", miss.offer(), miss.verdict),
            };
            VariantResult {
                variant: variant.name.clone(),
                max_rate_held: held.and_then(|s| s.rate_asked),
                max_users_held: held.and_then(|s| s.users),
                how,
                held: held.and_then(|s| HeldAnswer::of(s)),
                ..VariantResult::default()
            }
        })
        .collect()
}
