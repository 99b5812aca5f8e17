//! `loadlab encode`: flags -> [`report::EncodeFormat`] -> [`report::run_encode`]; with
//! `-from har`, a HAR file -> [`workload::HarOptions`] -> [`workload::har_to_flow`].

use std::io::{IsTerminal, Read, Write};
use std::process::ExitCode;
use std::str::FromStr;

use anyhow::{Context, bail};
use report::{EncodeFormat, run_encode};
use workload::{HarOptions, har_to_flow};

use crate::report::{is_stdout, open_output};

/// What the conversion reads and writes; shown under the options by
/// `loadlab encode --help` (the one-line summary is the arguments struct's doc).
const HELP: &str = "\
Inputs are detected by their content: record files, vegeta's `encode -to json|csv`
results, or loadlab's own JSON/CSV; stdin when no file is given. Many inputs are merged
in send-time order. JSON and CSV keep vegeta's fields (vegeta's tools read our JSON) and
add send_lag, ttfb, error_kind and protocol (in JSON only when not http/1.1; resource
samples are left out); -to record writes a record file that every loadlab command
reads, samples included, so old vegeta runs get loadlab's reports and a run can be
merged with its monitor file. In our JSON and CSV,
latency counts from the intended send time and timestamp is the actual send time.

From a browser, -from har turns a HAR file (developer tools, Network tab, \"Save all as
HAR\") into a flow: a scenarios file (docs/FLOWS.md) with one step per request, in the
order they started. Left out: static assets (images, CSS, JavaScript, fonts, media, by
the answer's type and the URL's extension; -har-keep-static keeps them), what the
browser served from its cache, hosts -har-host does not name or -har-skip-host names,
and the requests following a redirect (the engine follows it itself). Each request keeps
its headers less those the engine or the cookie jar write (Host, Content-Length, Cookie,
HTTP/2's), Accept-Encoding, and the browser's own (User-Agent, Accept-Language, Referer,
caching, Sec-*): -har-keep-header NAME keeps one. Each step checks the recorded status
and thinks for the recorded pause before the next request (under 250 ms: none). Where a
value an answer gave (a JSON string or id, a header) comes back in a later request, the
value becomes {{NAME}} there and the answer's step extracts it (json $.token, header
X-Token); cookies are left to the jar. The file's header comment lists what was left
out, the extractions proposed, and what to review (recorded passwords, cookies no
answer set). The scenario runs one user for a minute: set the load you want.
-base-url URL sends the steps to URL instead of where they were recorded, the recorded
path after URL's own and the query kept; without -har-host only the recording's main
origin (the one most steps went to) is kept, its third parties (analytics, CDNs) left
out; with -har-host every host it keeps goes to URL.

Examples:
  loadlab encode -to json run.llr > run.json
  loadlab encode -to record vegeta-results.json > old-run.llr
  vegeta encode -to csv results.gob | loadlab encode -to record -output run.llr
  loadlab encode -to csv a.llr b.llr -output merged.csv
  loadlab encode -to record run.llr server.mon -output run-and-server.llr
  loadlab encode -to json run.llr | vegeta encode -to gob > run.gob
  loadlab encode -from har session.har > flow.toml
  loadlab encode -from har -har-host 127.0.0.1:8080 -name shop session.har -output shop.toml
  loadlab encode -from har -har-keep-static -har-keep-header user-agent session.har
  loadlab encode -from har -base-url http://127.0.0.1:8080 session.har -output local.toml";

/// Convert records to and from JSON, CSV and record files; import vegeta results; turn
/// a browser's HAR file into a flow.
#[derive(clap::Args, Debug)]
#[command(after_help = HELP)]
pub struct EncodeArgs {
    /// Output format: json, csv or record [default: json]
    #[arg(long, value_name = "FORMAT")]
    to: Option<EncodeFormat>,
    /// Read something other than records: har, a browser's HAR file, written out as a
    /// flow (TOML)
    #[arg(long, value_name = "KIND")]
    from: Option<InputKind>,
    /// Output file ("stdout" or "-" for standard output)
    #[arg(long, default_value = "stdout", value_name = "FILE")]
    output: String,
    /// -from har: the scenario's name [default: the file's name without its extension]
    #[arg(long, value_name = "NAME")]
    name: Option<String>,
    /// -from har: keep only entries to this host (HOST: any port; HOST:PORT); repeatable
    #[arg(long, value_name = "HOST[:PORT]")]
    har_host: Vec<String>,
    /// -from har: leave out entries to this host (HOST or HOST:PORT); repeatable
    #[arg(long, value_name = "HOST[:PORT]")]
    har_skip_host: Vec<String>,
    /// -from har: keep static assets (images, CSS, JavaScript, fonts, media)
    #[arg(long)]
    har_keep_static: bool,
    /// -from har: keep this request header although the rule drops it (user-agent,
    /// accept-encoding, ...); repeatable
    #[arg(long, value_name = "NAME")]
    har_keep_header: Vec<String>,
    /// -from har: send the steps to this URL (scheme://host:port, its path a prefix)
    /// instead of the recorded origin; others left out unless -har-host keeps them
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,
    /// Input files: record files, vegeta/loadlab JSON or CSV; with -from har one HAR
    /// file ("-" for stdin; default stdin)
    #[arg(value_name = "FILE")]
    files: Vec<String>,
}

/// What `-from` reads instead of records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum InputKind {
    Har,
}

impl FromStr for InputKind {
    type Err = String;

    fn from_str(text: &str) -> Result<InputKind, String> {
        match text {
            "har" => Ok(InputKind::Har),
            "json" | "csv" | "record" => Err(format!(
                "records are recognised by their content: drop -from {text}"
            )),
            _ => Err(format!("{text:?}: -from reads har (a browser's HAR file)")),
        }
    }
}

pub fn run(args: EncodeArgs) -> anyhow::Result<ExitCode> {
    if args.from == Some(InputKind::Har) {
        return run_har(args);
    }
    if let Some(flag) = har_flag_given(&args) {
        bail!("{flag} goes with -from har");
    }
    let EncodeArgs {
        to, output, files, ..
    } = args;
    let to = to.unwrap_or(EncodeFormat::Json);
    let to_stdout = is_stdout(&output);
    if to == EncodeFormat::Record && to_stdout && std::io::stdout().is_terminal() {
        bail!("-to record writes binary data: redirect it to a file or use -output FILE");
    }
    crate::signals::outlive_first_interrupt(&files)?;
    let mut out = open_output(&output)?;
    run_encode(&files, to, &mut out, &mut std::io::stderr().lock())?;
    out.flush().context("writing the output")?;
    Ok(ExitCode::SUCCESS)
}

/// The first `-from har` option given without it.
fn har_flag_given(args: &EncodeArgs) -> Option<&'static str> {
    [
        ("-name", args.name.is_some()),
        ("-har-host", !args.har_host.is_empty()),
        ("-har-skip-host", !args.har_skip_host.is_empty()),
        ("-har-keep-static", args.har_keep_static),
        ("-har-keep-header", !args.har_keep_header.is_empty()),
        ("-base-url", args.base_url.is_some()),
    ]
    .into_iter()
    .find_map(|(flag, given)| given.then_some(flag))
}

/// `-from har`: one HAR file (or stdin) -> a flow, written only once it is whole, so a
/// bad input never truncates an existing -output file.
fn run_har(args: EncodeArgs) -> anyhow::Result<ExitCode> {
    if args.to.is_some() {
        bail!("-from har writes a flow (TOML): drop -to");
    }
    let file = match args.files.as_slice() {
        [] => "-",
        [file] => file.as_str(),
        _ => bail!("-from har reads one HAR file at a time"),
    };
    let (source_name, text) = read_text(file)?;
    let options = HarOptions {
        source_name: source_name.clone(),
        name: args.name,
        keep_static: args.har_keep_static,
        hosts: args.har_host,
        skip_hosts: args.har_skip_host,
        keep_headers: args.har_keep_header,
        base_url: args.base_url,
    };
    let flow = har_to_flow(&text, &options)?;
    let mut out = open_output(&args.output)?;
    out.write_all(flow.toml.as_bytes())
        .and_then(|()| out.flush())
        .context("writing the flow")?;
    eprintln!(
        "loadlab: {source_name}: {} steps from {} entries, {} extractions proposed (the file's header lists them)",
        flow.steps, flow.entries, flow.extractions
    );
    Ok(ExitCode::SUCCESS)
}

/// A file's (or stdin's, for "-") text and its name for messages.
fn read_text(file: &str) -> anyhow::Result<(String, String)> {
    let (name, bytes) = if file == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .lock()
            .read_to_end(&mut bytes)
            .context("reading stdin")?;
        ("stdin".to_owned(), bytes)
    } else {
        let bytes = std::fs::read(file).with_context(|| format!("reading {file}"))?;
        (file.to_owned(), bytes)
    };
    match String::from_utf8(bytes) {
        Ok(text) => Ok((name, text)),
        Err(err) => bail!(
            "{name}: not UTF-8 text at byte {} (a HAR file is JSON)",
            err.utf8_error().valid_up_to()
        ),
    }
}
