//! `loadlab compare A B [C ...]`: record files -> [`report::run_compare`]; run folders
//! (`DIR`, `DIR#VARIANT`) -> [`lab::compare::run_compare_folders`].

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use lab::compare::CompareArgs as Inputs;
use report::{CompareFormat, CompareInput, TraceStoreHandle, parse_threshold, run_compare};

/// The exit code when an input regressed beyond `-threshold` and the noise.
pub const REGRESSION_EXIT: u8 = 7;
/// The exit code of a usage error, as clap's.
const USAGE_EXIT: u8 = 2;

/// How compare judges the noise; shown under the options by `loadlab compare --help`.
const HELP: &str = "\
Reads record files from `loadlab attack` (A first) and prints every report row side by
side: requests, rate, throughput, success, latency mean/p50/p90/p95/p99/max, bytes,
send lag and errors by kind. For each input after A: the absolute and relative
difference against A, the improvement factor x (direction-aware: >1 is better, so half
the latency is 2.00x) and whether the difference is beyond the noise.

Noise: each run is cut into one-second windows, and a seeded bootstrap of the
difference of the windows' means gives a 95% interval; a difference is beyond the
noise when the interval excludes 0. Why a bootstrap: it assumes no distribution
(latencies are skewed, so a t-test's normality is a poor bet) and works with the few
samples a short run or a few repeats give. Why blocks: a slow second follows a slow
second (windows are autocorrelated), so windows are resampled in blocks of about the
cube root of their number. Whole-run figures without per-second samples (request
totals, max latency, bytes, send lag p99) say n/a. The same inputs always give the
same intervals.

Run folders of `loadlab run` (docs/PLANS.md) compare the same way:
  DIR DIR ...         whole runs of a plan (before/after a change): per variant, the
                      max rate held (most users held, when its steps were users)
                      side by side with the improvement x; per matching step (same
                      variant, kind, rate or users, axis values, repeat), every
                      summary.json figure with its differences. A step is beyond
                      the noise by the bootstrap above over both steps' record files
                      (their windows, the warm-up left out); without them it is a single
                      run and says so. A max rate held is one result per side.
  DIR#VARIANT ...     one variant of a run folder per input, so two variants of one plan
                      (or of two runs) compare step by step. `#` because a variant is
                      not a folder of the run (steps are steps/NNN-VARIANT-RATE) and `#`
                      is the usual \"part of\" mark that paths rarely hold (`:` is in
                      Windows paths and host:port). A path that exists is never split.
  DIR                 alone: every variant against the plan's first (its baseline).
Record files and run folders do not mix.

With -trace-store URL (inputs recorded with attack -trace, or a plan's trace = true),
text and Markdown end with where each run's slow requests' time went and, for each
input after A, the span whose slow median moved most from A; JSON has the same under
\"traces\" and \"span_shift\". A run folder's variant is judged in its step where the
limit shows (as \"What ran out first\" picks it; else its last step) (docs/TRACES.md).

With -threshold, compare exits with code 7 when an input is worse than A on
throughput, success or latency p99 (run folders: achieved/s, success, p99 of a step)
by more than the threshold (of A's whole-run value) *and* beyond the noise, or when a
variant's max rate held (or most users held) is lower than A's by more than the
threshold, and names each such row on stderr: a CI gate. Other failures (an
unreadable input, a file that is not a record file, a folder without summary.json)
exit 1.

Examples:
  loadlab compare before.llr after.llr
  loadlab compare -format markdown fixed-pool.llr overflow-pool.llr >> write-up.md
  loadlab compare -format json a.llr b.llr c.llr | jq '.rows[] | select(.row == \"latency p99\")'
  loadlab compare runs/before runs/after
  loadlab compare runs/001                      # every variant against the first
  loadlab compare runs/001#fixed-pool runs/001#overflow-pool
  loadlab compare -threshold 5% runs/main runs/branch || echo regression
  loadlab compare -threshold 5% main.llr branch.llr || echo regression";

/// Compare runs side by side: differences, improvement x, and whether each is beyond the noise.
#[derive(clap::Args, Debug)]
#[command(after_help = HELP)]
pub struct CompareArgs {
    /// Output format: text, markdown or json
    #[arg(long, default_value = "text", value_name = "FORMAT")]
    format: String,
    /// Exit 7 when an input regresses on throughput, success or latency p99 by more
    /// than this share of A (e.g. 5%) and beyond the noise
    #[arg(long, value_name = "PERCENT")]
    threshold: Option<String>,
    #[command(flatten)]
    trace_store: crate::report::TraceStoreArg,
    /// Output file ("stdout" or "-" for standard output)
    #[arg(long, default_value = "stdout", value_name = "FILE")]
    output: String,
    /// Record files, or run folders (DIR, or DIR#VARIANT for one variant of a run):
    /// A (the baseline), then B, C, ...; a single run folder compares its variants
    #[arg(value_name = "INPUT", num_args = 1.., required = true)]
    files: Vec<String>,
}

pub fn run(args: CompareArgs) -> anyhow::Result<ExitCode> {
    let CompareArgs {
        format,
        threshold: threshold_text,
        trace_store,
        output,
        files,
    } = args;
    let format = CompareFormat::parse(&format)?;
    let threshold = threshold_text.as_deref().map(parse_threshold).transpose()?;
    let threshold_text = threshold_text.unwrap_or_default();
    let inputs = lab::compare::classify(&files)?;
    let store = trace_store.parse()?;
    let folders = match inputs {
        Inputs::Folders(folders) => folders,
        Inputs::RecordFiles(files) if files.len() < 2 => {
            eprintln!(
                "loadlab: compare needs at least two record files (a single run folder compares its variants)"
            );
            return Ok(ExitCode::from(USAGE_EXIT));
        }
        Inputs::RecordFiles(files) => {
            let threshold = (threshold, &*threshold_text, store.as_ref());
            return compare_records(files, format, threshold, &output);
        }
    };
    let mut out = crate::report::open_output(&output)?;
    let regressions =
        lab::compare::run_compare_folders(&folders, format, (threshold, store.as_ref()), &mut out)?;
    out.flush().context("writing the comparison")?;
    let baseline = regressions_baseline(&folders);
    let found: Vec<String> = regressions
        .iter()
        .map(|r| {
            let why = if r.beyond_noise {
                " and the noise"
            } else {
                "; one result per side, no noise estimate"
            };
            format!(
                "{} is {:.2}% worse in {} than in {baseline} (beyond -threshold {}{why})",
                r.what,
                r.worse_by * 100.0,
                r.input,
                threshold_text,
            )
        })
        .collect();
    report_regressions(&found)
}

/// A's name: the first input, or a single folder's first variant.
fn regressions_baseline(folders: &[lab::compare::FolderInput]) -> String {
    match folders {
        [only] if only.variant.is_none() => lab::compare::read_summary(&only.dir)
            .ok()
            .and_then(|s| {
                s.variants
                    .first()
                    .map(|v| format!("{}#{}", only.dir.display(), v.variant))
            })
            .unwrap_or_else(|| only.name()),
        _ => folders.first().map(|f| f.name()).unwrap_or_default(),
    }
}

/// Record files side by side; `(threshold, as typed, -trace-store)`.
fn compare_records(
    files: Vec<String>,
    format: CompareFormat,
    (threshold, threshold_text, store): (Option<f64>, &str, Option<&TraceStoreHandle>),
    output: &str,
) -> anyhow::Result<ExitCode> {
    let inputs: Vec<CompareInput> = files.into_iter().map(CompareInput::RecordFile).collect();
    let mut out = crate::report::open_output(output)?;
    let regressions = run_compare(&inputs, format, (threshold, store), &mut out)?;
    out.flush().context("writing the comparison")?;
    let found: Vec<String> = regressions
        .iter()
        .map(|regression| {
            format!(
                "{} is {:.2}% worse in {} than in {} (beyond -threshold {} and the noise)",
                regression.row,
                regression.worse_by * 100.0,
                regression.input,
                inputs[0].name(),
                threshold_text,
            )
        })
        .collect();
    report_regressions(&found)
}

/// Names each regression on stderr: exit 7 when there is one.
fn report_regressions(found: &[String]) -> anyhow::Result<ExitCode> {
    if found.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    let mut stderr = std::io::stderr().lock();
    for line in found {
        writeln!(stderr, "loadlab: regression: {line}").context("writing to stderr")?;
    }
    Ok(ExitCode::from(REGRESSION_EXIT))
}
