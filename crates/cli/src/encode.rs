//! `loadlab encode`: flags -> [`report::EncodeFormat`] -> [`report::run_encode`].

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use anyhow::{Context, bail};
use report::{EncodeFormat, run_encode};

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

Examples:
  loadlab encode -to json run.llr > run.json
  loadlab encode -to record vegeta-results.json > old-run.llr
  vegeta encode -to csv results.gob | loadlab encode -to record -output run.llr
  loadlab encode -to csv a.llr b.llr -output merged.csv
  loadlab encode -to record run.llr server.mon -output run-and-server.llr
  loadlab encode -to json run.llr | vegeta encode -to gob > run.gob";

/// Convert records to and from JSON, CSV and record files; import vegeta results.
#[derive(clap::Args, Debug)]
#[command(after_help = HELP)]
pub struct EncodeArgs {
    /// Output format: json, csv or record
    #[arg(long, default_value = "json", value_name = "FORMAT")]
    to: EncodeFormat,
    /// Output file ("stdout" or "-" for standard output)
    #[arg(long, default_value = "stdout", value_name = "FILE")]
    output: String,
    /// Input files: record files, vegeta/loadlab JSON or CSV ("-" for stdin; default stdin)
    #[arg(value_name = "FILE")]
    files: Vec<String>,
}

pub fn run(args: EncodeArgs) -> anyhow::Result<ExitCode> {
    let EncodeArgs { to, output, files } = args;
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
