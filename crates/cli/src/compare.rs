//! `loadlab compare A B [C ...]`: flags -> [`report::CompareInput`]s -> [`report::run_compare`].

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use report::{CompareFormat, CompareInput, parse_threshold, run_compare};

/// The exit code when an input regressed beyond `-threshold` and the noise.
pub const REGRESSION_EXIT: u8 = 7;

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

With -threshold, compare exits with code 7 when an input is worse than A on
throughput, success or latency p99 by more than the threshold (of A's whole-run value)
*and* beyond the noise, and names each such row on stderr: a CI gate. Other failures
(an unreadable input, a file that is not a record file) exit 1.

Examples:
  loadlab compare before.llr after.llr
  loadlab compare -format markdown fixed-pool.llr overflow-pool.llr >> write-up.md
  loadlab compare -format json a.llr b.llr c.llr | jq '.rows[] | select(.row == \"latency p99\")'
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
    /// Output file ("stdout" or "-" for standard output)
    #[arg(long, default_value = "stdout", value_name = "FILE")]
    output: String,
    /// Record files: A (the baseline), then B, C, ...
    #[arg(value_name = "FILE", num_args = 2.., required = true)]
    files: Vec<String>,
}

pub fn run(args: CompareArgs) -> anyhow::Result<ExitCode> {
    let format = CompareFormat::parse(&args.format)?;
    let threshold = args.threshold.as_deref().map(parse_threshold).transpose()?;
    let inputs: Vec<CompareInput> = args
        .files
        .into_iter()
        .map(CompareInput::RecordFile)
        .collect();
    let mut out = crate::report::open_output(&args.output)?;
    let regressions = run_compare(&inputs, format, threshold, &mut out)?;
    out.flush().context("writing the comparison")?;
    if regressions.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    let mut stderr = std::io::stderr().lock();
    for regression in &regressions {
        writeln!(
            stderr,
            "loadlab: regression: {} is {:.2}% worse in {} than in {} (beyond -threshold {} and the noise)",
            regression.row,
            regression.worse_by * 100.0,
            regression.input,
            inputs[0].name(),
            args.threshold.as_deref().unwrap_or_default(),
        )
        .context("writing to stderr")?;
    }
    Ok(ExitCode::from(REGRESSION_EXIT))
}
