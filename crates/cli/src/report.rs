//! `loadlab report`: flags -> [`report::ReportConfig`] -> [`report::run_report`].

use std::fs::File;
use std::io::{BufWriter, Write};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use report::{
    GroupBy, ReportConfig, ReportType, TraceLink, TraceStore, TraceStoreHandle, run_report,
};

/// How the report reads and what it adds to vegeta's; shown under the options by
/// `loadlab report --help` (the one-line summary is the arguments struct's doc).
const HELP: &str = "\
Reads record files from `loadlab attack`, and vegeta or loadlab JSON/CSV results
(`vegeta encode -to json|csv`), any mix; stdin when no file is given. Many inputs are
merged as one run, in send-time order.

The text and json layouts are vegeta's, with exact percentiles (3 significant digits
beyond 262144 requests). Below vegeta's rows come loadlab's: send lag, asked vs achieved
rate, the generator's own CPU, the run's model and stop reason, for a rising open-model
load its saturation point (where throughput stopped following the offered rate, latency
turned, errors started; always under \"saturation\" in json), and a plain WARNING when
the generator fell behind (send lag p99 > 1ms, or achieved rate < 99% of asked), so its
delay is never mistaken for the server's. Rows without data (vegeta imports) are left out.
When some requests went over HTTP/2, a Protocols row gives the count per protocol
(\"protocols\" in json); -by protocol then reports h2 and http/1.1 apart.

Runs of flows (docs/FLOWS.md) get a Checks table after the error set: each check by its
full name, STEP: CHECK (after SCENARIO: when the input has several attacks), in step
order, with its passes, failures and pass rate (rounded down, so a check that failed
never reads 100.00%), then the total. A request without an answer fails every check of
its step. In json it is a \"checks\" array (name, scenario, step, check, passes, fails,
pass_rate). Inputs without checks print neither, as vegeta would. -by step reports each
step apart (within its scenario); a target that is no flow step is its own group,
named METHOD URL. -by method reports each gRPC method (package.Service/Method, its
statuses by name) and each HTTP method and path (GET /items, host and query left out)
apart, across targets and attacks.

Unlike vegeta, latency counts from the *intended* send time (no coordinated omission),
and -every prints one row per interval instead of cumulative reprints. Single-dash
flags work as in vegeta (-type=json).

Runs recorded with attack -trace add a Traced requests block (\"traces\" in json): the
slowest traced requests and each error's first, with the trace id each sent and, with
-trace-link, the link to its trace (docs/TRACES.md). With -trace-store (Jaeger's query
API), it reads back the traces of the 20 slowest traced requests and of 20 typical ones
(at most 20s, 3s a trace) and says where the slow ones' time went: the (service,
operation) whose self time grew most, with its share and medians (\"spans\" in json);
traces the store lacks are counted; a store that is down or answers garbage gives a
\"not judged\" line naming why, the report otherwise unchanged.

Examples:
  loadlab report run.llr
  loadlab attack -targets=t.txt -rate=500 -duration=1m | loadlab report -every 1s
  loadlab report -type json a.llr b.llr | jq .latencies
  loadlab report -type 'hist[0,1ms,5ms,10ms]' run.llr
  loadlab report -by status old-vegeta-results.json
  loadlab report -by protocol h2-run.llr
  loadlab report -by step flow-run.llr
  loadlab report -by method grpc-run.llr
  loadlab report -type json flow-run.llr | jq '.checks[] | select(.fails > 0)'
  loadlab report -trace-link 'http://127.0.0.1:16686/trace/{trace_id}' traced.llr
  loadlab report -trace-store http://127.0.0.1:16686 traced.llr";

/// Summarize record files: text, JSON, histograms, HDR plots, per-interval rows.
#[derive(clap::Args, Debug)]
#[command(after_help = HELP)]
pub struct ReportArgs {
    /// Report type: text, json, hist[BUCKETS] (e.g. 'hist[0,1ms,5ms]') or hdrplot
    #[arg(long = "type", default_value = "text", value_name = "TYPE")]
    report_type: String,
    /// Histogram buckets, e.g. "[0,1ms,10ms]" (with -type hist; adds "buckets" to json)
    #[arg(long, value_name = "BUCKETS")]
    buckets: Option<String>,
    /// Print one row per interval of this length (requests, rate, throughput, success,
    /// p50/p90/p99/max), live as the input streams in, then the whole-run report; 0 = off
    #[arg(long, value_name = "DURATION")]
    every: Option<String>,
    /// One report per group: attack, target, step (a flow's), method (a gRPC call's
    /// package.Service/Method, an HTTP method and path), status or protocol (http/1.1, h2)
    #[arg(long, value_name = "GROUP")]
    by: Option<GroupBy>,
    #[command(flatten)]
    traces: TraceArgs,
    /// Output file ("stdout" or "-" for standard output)
    #[arg(long, default_value = "stdout", value_name = "FILE")]
    output: String,
    /// Input files: record files, vegeta/loadlab JSON or CSV ("-" for stdin; default stdin)
    #[arg(value_name = "FILE")]
    files: Vec<String>,
}

pub fn run(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let ReportArgs {
        report_type,
        buckets,
        every,
        by,
        traces,
        output,
        files,
    } = args;
    let report_type = ReportType::parse(&report_type, buckets.as_deref())?;
    let every_ns = every
        .as_deref()
        .map(units::parse_duration)
        .transpose()
        .context("-every")?
        .map(|every| u64::try_from(every.as_nanos()).unwrap_or(u64::MAX));
    let mut config = ReportConfig::new(report_type, every_ns, by)?;
    (config.trace_link, config.trace_store) = traces.parse()?;
    crate::signals::outlive_first_interrupt(&files)?;
    let mut out = open_output(&output)?;
    run_report(&files, &config, &mut out, &mut std::io::stderr().lock())?;
    out.flush().context("writing the report")?;
    Ok(ExitCode::SUCCESS)
}

/// `-trace-link` and `-trace-store`, for `report` and `plot` alike.
#[derive(clap::Args, Debug)]
pub struct TraceArgs {
    /// Link each traced request (attack -trace) to its trace: a URL with {trace_id},
    /// e.g. 'http://127.0.0.1:16686/trace/{trace_id}' (Jaeger's UI)
    #[arg(long, value_name = "URL")]
    trace_link: Option<String>,
    #[command(flatten)]
    store: TraceStoreArg,
}

impl TraceArgs {
    /// The link template and the store, checked.
    pub fn parse(&self) -> anyhow::Result<(Option<TraceLink>, Option<TraceStoreHandle>)> {
        Ok((
            self.trace_link
                .as_deref()
                .map(TraceLink::parse)
                .transpose()?,
            self.store.parse()?,
        ))
    }
}

/// `-trace-store`, for `report`, `plot` and `compare`.
#[derive(clap::Args, Debug)]
pub struct TraceStoreArg {
    /// Read the traced requests' traces back from this trace store's query API (Jaeger's,
    /// e.g. http://127.0.0.1:16686) and say where the slow requests' time went
    #[arg(long, value_name = "URL")]
    trace_store: Option<String>,
}

impl TraceStoreArg {
    /// The store, checked.
    pub fn parse(&self) -> anyhow::Result<Option<TraceStoreHandle>> {
        self.trace_store.as_deref().map(jaeger).transpose()
    }
}

/// `-trace-store URL`: Jaeger's query API, read by the monitor's client.
pub fn jaeger(base: &str) -> anyhow::Result<TraceStoreHandle> {
    Ok(TraceStoreHandle(Arc::new(Jaeger(
        monitor::TraceStoreClient::new(base, https_config(base)?)?,
    ))))
}

/// The engine's TLS client configuration for an `https://` URL (the system's roots);
/// none for any other.
pub fn https_config(url: &str) -> anyhow::Result<Option<Arc<rustls::ClientConfig>>> {
    if !url.starts_with("https://") {
        return Ok(None);
    }
    Ok(Some(engine::tool_client_config()?))
}

struct Jaeger(monitor::TraceStoreClient);

impl TraceStore for Jaeger {
    fn name(&self) -> &str {
        self.0.base()
    }

    fn fetch(&self, trace_ids: &[String]) -> Result<analysis::Fetched, String> {
        self.0.fetch(trace_ids)
    }
}

/// Whether an `-output` value names standard output ("stdout" or "-").
pub fn is_stdout(path: &str) -> bool {
    path == "stdout" || path == "-"
}

/// Standard output or a new file, buffered.
pub fn open_output(path: &str) -> anyhow::Result<BufWriter<Box<dyn Write>>> {
    let out: Box<dyn Write> = if is_stdout(path) {
        Box::new(std::io::stdout().lock())
    } else {
        Box::new(File::create(path).with_context(|| format!("cannot create -output {path:?}"))?)
    };
    Ok(BufWriter::with_capacity(1 << 16, out))
}
