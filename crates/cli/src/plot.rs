//! `loadlab plot`: flags -> [`plot::PlotConfig`] -> [`plot::RunPlot`] -> one HTML page,
//! or one SVG or PNG file per chart.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, bail};
use plot::{ChartFiles, Format, PlotConfig, RunPlot};

use crate::report::{is_stdout, open_output};

/// What the page shows and how the flags work; shown under the options by
/// `loadlab plot --help` (the one-line summary is the arguments struct's doc).
const HELP: &str = "\
Reads record files from `loadlab attack`, monitor files from `loadlab monitor`, and vegeta
or loadlab JSON/CSV results, any mix; stdin when no file is given. All inputs share one
time axis from the earliest request (or, for monitor files alone, the first sample).

-format html (the default) writes one self-contained page: it fetches nothing, so it opens
offline from file:// and can be attached or published as is. At the top: the report's text
summary (as `loadlab report` prints it, with the generator's send lag and CPU) and any
warning; then the charts: latency over time (every request, OK and failed per attack),
latency percentiles per second (p50, p90, p99, max), requests per second asked vs sent vs
successful, status codes per second, the latency distribution as a percentile curve, and
the generator's send lag, CPU and queue. Hover shows values; drag across a time chart to
zoom all of them; latency charts switch between log and linear.

For flows (scenarios with steps and checks, docs/FLOWS.md) the page adds a checks panel
(the pass rate of every check together, the worst failing check, and a table of each
check's runs, passes, failures and pass rate), a chart of each check's failures per
second as a share of its runs (on the same time axis; the 8 that failed most, the rest
as one line) and the latency distribution by step; the targets are named by their step.

When the inputs hold resource samples (`attack -monitor`, or a `loadlab monitor` file
given beside the run: `loadlab plot run.llr run.mon`), the system under test's charts
follow the request charts on the same time axis: CPU (process groups in % of one core,
the host in % of all its cores), CPU per core, memory (RSS per group, host memory in
use, in binary units), connections and file descriptors against their limit, TCP
errors, network traffic, database transactions/s and connections, and every other
series (Prometheus metrics, ...) in one chart per unit. Each chart draws the 8 series
with the highest peaks and says how many it left out. Gaps (a process gone, an endpoint
down) break the lines and are shaded, their reason on hover. The axis grows to show
samples taken before the first request or after the last.

Traced runs (attack -trace): the slowest traced requests and each error's first are
dark dots on the latency chart, named by trace id on hover; -trace-link rings each with
a link to its trace, and a panel lists them. -trace-store also says there where the slow
requests' time went (docs/TRACES.md).

-format svg|png writes one file per chart, for Markdown reports: -output names a
directory (one that exists, or a path ending in /) for DIR/latency.png, DIR/rate.png,
..., or a file prefix for PREFIX-latency.png, PREFIX-rate.png, ... The files written are
listed on stdout. PNGs are the SVGs rasterised, drawn with the system's fonts.

Large runs are downsampled, keeping the extremes: a latency series with more points than
-threshold keeps, in each cell of a time x log-latency grid, its slowest request (so the
slowest request of every column is drawn); failed requests keep 4x as many points and
are drawn on top. Per-second series longer than -threshold keep each series' lowest and
highest second of every stretch; resource series longer than 1,500 points (or -threshold,
when lower) keep each stretch's lowest and highest value and its gaps. Legends and
captions say how much is shown.

Examples:
  loadlab attack -targets=t.txt -rate=500 -duration=1m | loadlab plot > run.html
  loadlab plot -title='search at 1000/s' run.llr -output run.html
  loadlab plot -format png -output charts/ run.llr
  loadlab plot -format svg -output report/step-64 step-64.llr
  loadlab plot run.llr run.mon -output run.html        # with `loadlab monitor -output run.mon`
  loadlab plot -trace-link 'http://127.0.0.1:16686/trace/{trace_id}' run.llr > run.html
  loadlab plot old-vegeta-results.json > old.html";

/// Plot record files: one self-contained HTML page, or SVG/PNG charts.
#[derive(clap::Args, Debug)]
#[command(after_help = HELP)]
pub struct PlotArgs {
    /// Title of the page (and of chart files) [default: loadlab plot]
    #[arg(long, value_name = "TITLE")]
    title: Option<String>,
    /// Points per series above which it is downsampled
    #[arg(long, default_value_t = plot::DEFAULT_THRESHOLD, value_name = "N")]
    threshold: usize,
    /// Output: html: a file ("stdout" or "-" for standard output); svg, png: a
    /// directory or a file prefix
    #[arg(long, default_value = "stdout", value_name = "PATH")]
    output: String,
    /// Output format: html (one page), svg or png (one file per chart)
    #[arg(long, default_value = "html", value_name = "FORMAT")]
    format: String,
    /// Interval of the per-interval charts (rates, status codes, percentiles)
    #[arg(long, default_value = "1s", value_name = "DURATION")]
    every: String,
    #[command(flatten)]
    traces: crate::report::TraceArgs,
    /// Input files: record files, monitor files, vegeta/loadlab JSON or CSV ("-" for
    /// stdin; default stdin)
    #[arg(value_name = "FILE")]
    files: Vec<String>,
}

pub fn run(args: &PlotArgs) -> anyhow::Result<ExitCode> {
    let format: Format = args.format.parse()?;
    let to_stdout = is_stdout(&args.output);
    if format != Format::Html && to_stdout {
        bail!(
            "-format {}: writes one file per chart: name a directory or a file prefix with \
             -output (e.g. -output charts/)",
            args.format
        );
    }
    let every = units::parse_duration(&args.every).context("-every")?;
    let every_ns = u64::try_from(every.as_nanos()).unwrap_or(u64::MAX);
    let mut config = PlotConfig::new(args.title.clone(), args.threshold, every_ns)?;
    (config.trace_link, config.trace_store) = args.traces.parse()?;
    crate::signals::outlive_first_interrupt(&args.files)?;
    let run = RunPlot::read(&args.files, &config)?;
    for warning in run.torn_warnings().into_iter().chain(run.shard_warnings()) {
        eprintln!("{warning}");
    }
    if format == Format::Html {
        let mut out = open_output(&args.output)?;
        run.write_html(&mut out)?;
        out.flush().context("writing the page")?;
        return Ok(ExitCode::SUCCESS);
    }
    let written = run.write_chart_files(&ChartFiles::new(&args.output), format)?;
    let mut stdout = std::io::stdout().lock();
    for path in written {
        writeln!(stdout, "{}", path.display())?;
    }
    Ok(ExitCode::SUCCESS)
}
