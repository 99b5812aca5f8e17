//! `loadlab search URL... -slo EXPR`: a capacity search of one server from flags alone.
//! The flags are written out as the plan a user would write ([`plan_text`]), that text
//! is checked by [`Plan::parse`] like any plan file and run by `loadlab run`'s code, so
//! the run folder's plan.toml is exactly what ran and `loadlab run DIR/plan.toml`
//! repeats it.

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use lab::Plan;

use crate::request_args::RequestArgs;
use crate::watch::WatchArgs;

/// What `-slo` accepts, for its errors and its help.
const SLO_FORMS: &str = "p50, p90, p95, p99, p99.9, max or mean < DURATION (p99 < 200ms); \
                         success > PERCENT (success > 99%); lag < DURATION (the generator's \
                         send lag p99, lag < 25ms)";

/// Find the highest rate your server holds within an SLO, in one command
///
/// The rate grows x2 from -start-rate until a step misses the SLO, then bisects to
/// -precision, then confirms the rate found (docs/PLANS.md, search mode). Each step is
/// an attack of -step-duration after a -warmup; a step the generator could not deliver
/// is "inconclusive", never "the server failed".
///
/// -rates R1,R2,... makes it a step sweep instead: one step at each rate, each judged.
/// -vs URL runs the same targets at a second base URL too, side by side (an A/B).
///
/// Targets: the URLs given (each a GET), else -targets FILE, else stdin, in vegeta's
/// http format. The run folder (-output, default runs/search-HOST) is the one
/// `loadlab run` writes, with plan.toml: the plan this search ran, to edit or rerun.
///
/// Examples:
///
///   loadlab search http://127.0.0.1:8080/ -slo 'p99 < 200ms' -slo 'success > 99%'
///
///   loadlab search http://127.0.0.1:8080/ -slo 'p99 < 50ms' -max-rate 20000 -output runs/nginx
///
///   loadlab search -targets targets.txt -step-duration 5s -monitor process=nginx
///
///   loadlab search http://127.0.0.1:8080/ -rates 100,200,400,800 -slo 'p99 < 200ms'
///
///   loadlab search http://127.0.0.1:8080/api -vs http://127.0.0.1:8081 -slo 'p99 < 50ms'
///
///   loadlab run runs/nginx/plan.toml -output runs/nginx-again
///
/// A step whose send lag p99 is over 1 ms and over the answers' median latency is
/// "inconclusive"; on a busy generator, allow more with -slo 'lag < 25ms'.
///
/// Exit status: 0 when the search ran (whatever it found); 1 on a bad flag or an I/O
/// error; 130 when interrupted.
#[derive(clap::Args, Debug)]
// Verbatim: the examples keep their indentation (help.rs prints them unwrapped).
#[command(verbatim_doc_comment)]
pub struct SearchArgs {
    /// URLs to search with (each a GET) [default: -targets FILE, else stdin]
    #[arg(value_name = "URL")]
    urls: Vec<String>,
    /// A bound every step must hold (repeatable): p50, p90, p95, p99, p99.9, max or
    /// mean < DURATION; success > PERCENT; lag < DURATION [default: success > 99%]
    #[arg(help_heading = "Load model", long, value_name = "EXPR")]
    slo: Vec<String>,
    /// Never probe above this rate, requests per second [default: 100000]
    #[arg(help_heading = "Load model", long, value_name = "RATE")]
    max_rate: Option<f64>,
    /// The first probe's rate, requests per second [default: 100, or -max-rate if lower]
    #[arg(help_heading = "Load model", long, value_name = "RATE")]
    start_rate: Option<f64>,
    /// Stop bisecting when the failing rate is within this share above the passing one
    /// [default: 0.02]
    #[arg(help_heading = "Load model", long, value_name = "SHARE")]
    precision: Option<f64>,
    /// A step sweep instead of a search: one step at each rate, each judged against
    /// the SLO (e.g. -rates 100,200,400,800)
    #[arg(
        help_heading = "Load model",
        long,
        value_name = "RATE,...",
        value_delimiter = ','
    )]
    rates: Vec<f64>,
    /// Also run the same targets at this base URL (scheme://host:port), side by side:
    /// an A/B of two servers (repeatable)
    #[arg(help_heading = "Targets", long, value_name = "URL")]
    vs: Vec<String>,
    /// Measured time per step, after the warm-up
    #[arg(
        help_heading = "Load model",
        long,
        value_name = "DURATION",
        default_value = "10s"
    )]
    step_duration: String,
    /// Sent at the start of each step and not judged
    #[arg(
        help_heading = "Load model",
        long,
        value_name = "DURATION",
        default_value = "1s"
    )]
    warmup: String,
    /// Targets file in vegeta's http format (default: the URLs, else stdin)
    #[arg(help_heading = "Targets", long, value_name = "FILE")]
    targets: Option<PathBuf>,
    /// Request body file for targets without their own
    #[arg(help_heading = "Targets", long, value_name = "FILE")]
    body: Option<PathBuf>,
    #[command(flatten)]
    request: RequestArgs,
    /// Open connections per target host at most
    #[arg(help_heading = "Protocols", long, value_name = "N")]
    connections: Option<u64>,
    /// Do not connect to each target before each step sends (written into the plan as
    /// `check_targets = false`)
    #[arg(help_heading = "Targets", long)]
    no_check_targets: bool,
    /// End a step early when a rule holds, e.g. "errors > 20% for 1s" (repeatable)
    #[arg(help_heading = "Load model", long, value_name = "RULE")]
    stop_when: Vec<String>,
    /// Sample the server beside each step: host, process=NAME, prom=URL, ... (repeatable;
    /// see `loadlab monitor --help`); the summary says what ran out first
    #[arg(help_heading = "Monitoring", long, value_name = "SPEC")]
    monitor: Vec<String>,
    /// The plan's name [default: search-HOST]
    #[arg(help_heading = "Output", long)]
    name: Option<String>,
    /// The run folder [default: runs/NAME]
    #[arg(help_heading = "Output", long, value_name = "DIR")]
    output: Option<PathBuf>,
    #[command(flatten)]
    watch: WatchArgs,
    #[command(flatten)]
    ci: crate::ci::CiArgs,
}

pub fn run(args: &SearchArgs) -> anyhow::Result<ExitCode> {
    let targets = targets(args)?;
    let text = plan_text(args, &targets)?;
    let base_dir = std::env::current_dir().context("the current folder")?;
    let plan = Plan::parse(&text, "loadlab search", &base_dir).map_err(flag_error)?;
    let settings = &plan.load.settings;
    crate::monitor::AttachedMonitor::new(&settings.monitor, settings.monitor_interval)
        .context("-monitor")?;
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from("runs").join(crate::run::folder_name(&plan.name)));
    let code = crate::run::run_checked(
        plan,
        (Some(output.clone()), false, None),
        &args.watch,
        &args.ci,
        "search",
    )?;
    // `loadlab run` will not write over this folder: the rerun needs its own.
    eprintln!(
        "loadlab search: rerun with `loadlab run {} -output {}-again`",
        output.join("plan.toml").display(),
        output.display()
    );
    Ok(code)
}

/// Where a search's requests come from.
#[derive(Debug, PartialEq)]
enum Targets {
    /// Targets in vegeta's http format, one string each.
    Inline(Vec<String>),
    /// A targets file, by its absolute path (the plan may be rerun from elsewhere).
    File(PathBuf),
}

fn targets(args: &SearchArgs) -> anyhow::Result<Targets> {
    match (&args.urls[..], &args.targets) {
        ([], Some(file)) => Ok(Targets::File(absolute(file, "-targets")?)),
        ([], None) => {
            let mut stdin = std::io::stdin();
            if stdin.is_terminal() {
                bail!("no targets: give URLs, -targets FILE, or targets on stdin");
            }
            let mut text = String::new();
            stdin.read_to_string(&mut text).context("stdin")?;
            let targets = split_targets(&text);
            if targets.is_empty() {
                bail!("no targets: stdin held none (give URLs, or -targets FILE)");
            }
            Ok(Targets::Inline(targets))
        }
        (urls, None) => {
            if let Some(bad) = urls
                .iter()
                .find(|u| !(u.starts_with("http://") || u.starts_with("https://")))
            {
                bail!("{bad:?}: want an http:// or https:// URL");
            }
            Ok(Targets::Inline(
                urls.iter().map(|u| format!("GET {u}")).collect(),
            ))
        }
        (_, Some(_)) => bail!("give URLs or -targets FILE, not both"),
    }
}

/// vegeta http-format text split into its targets: each starts at a request line
/// (`METHOD URL`); the header, `@body` lines and blank lines after it are its own.
fn split_targets(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let starts = line.split_once(' ').is_some_and(|(method, _)| {
            !method.is_empty() && method.chars().all(|c| c.is_ascii_uppercase())
        });
        match out.last_mut() {
            Some(target) if !starts => {
                target.push('\n');
                target.push_str(line);
            }
            _ if line.trim_start().starts_with('#') => {}
            _ => out.push(line.to_owned()),
        }
    }
    out
}

fn absolute(path: &Path, flag: &str) -> anyhow::Result<PathBuf> {
    std::fs::canonicalize(path).with_context(|| format!("{flag} {}", path.display()))
}

/// One `-slo` expression as a `[slo]` key and its TOML value.
fn slo_entry(expr: &str) -> anyhow::Result<(String, String)> {
    let bad = |why: &str| anyhow::anyhow!("-slo {expr:?}: {why}; accepted: {SLO_FORMS}");
    let (name, op, value) = ["<=", ">=", "<", ">"]
        .iter()
        .find_map(|op| {
            let (name, value) = expr.split_once(op)?;
            Some((name.trim(), op.trim_end_matches('='), value.trim()))
        })
        .ok_or_else(|| bad("no < or >"))?;
    match (name, op) {
        ("success", ">") => {
            let share = match value.strip_suffix('%') {
                Some(percent) => percent.trim().parse::<f64>().map(|p| p / 100.0),
                None => value.parse::<f64>(),
            }
            .ok()
            .filter(|s| (0.0..=1.0).contains(s))
            .ok_or_else(|| bad("want a percent from 0% to 100%, like 99%"))?;
            Ok(("success".to_owned(), share.to_string()))
        }
        ("p50" | "p90" | "p95" | "p99" | "p99.9" | "max" | "mean" | "lag", "<") => {
            let bound = units::parse_duration(value).map_err(|e| bad(&e.to_string()))?;
            if bound.is_zero() {
                return Err(bad("a bound must be longer than zero"));
            }
            let key = match name {
                "lag" => "max_lag".to_owned(),
                "p99.9" => "\"p99.9\"".to_owned(),
                _ => name.to_owned(),
            };
            Ok((key, quote(value)))
        }
        ("success", _) => Err(bad("success is bounded from below: success > 99%")),
        (_, ">") if name.starts_with('p') || ["max", "mean", "lag"].contains(&name) => {
            Err(bad("a latency is bounded from above: p99 < 200ms"))
        }
        _ => Err(bad(&format!("unknown measure {name:?}"))),
    }
}

/// A TOML string: JSON's escapes are TOML's.
fn quote(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_default()
}

fn quote_all<S: AsRef<str>>(items: &[S]) -> String {
    let items: Vec<String> = items.iter().map(|s| quote(s.as_ref())).collect();
    format!("[{}]", items.join(", "))
}

/// The plan the flags ask for, as a plan file's text (checked by [`Plan::parse`]).
fn plan_text(args: &SearchArgs, targets: &Targets) -> anyhow::Result<String> {
    let sweep = !args.rates.is_empty();
    if sweep && (args.max_rate.is_some() || args.start_rate.is_some() || args.precision.is_some()) {
        bail!(
            "-rates: a sweep runs one step at each of its rates; -max-rate, -start-rate \
             and -precision are a search's"
        );
    }
    let max_rate = args.max_rate.unwrap_or(100_000.0);
    if !(max_rate > 0.0 && max_rate.is_finite()) {
        bail!("-max-rate: must be above 0 requests per second, got {max_rate}");
    }
    let mut slo = Vec::new();
    for expr in &args.slo {
        let (key, value) = slo_entry(expr)?;
        if slo.iter().any(|(k, _)| *k == key) {
            bail!("-slo {expr:?}: {key} is bounded twice; give it once");
        }
        slo.push((key, value));
    }
    let mode = if sweep { "sweep" } else { "search" };
    let name = args.name.clone().unwrap_or_else(|| {
        host_port(targets).map_or_else(|| mode.to_owned(), |h| format!("{mode}-{h}"))
    });
    let servers = if args.vs.is_empty() {
        "one server"
    } else {
        "servers side by side"
    };
    let mut out = format!(
        "# Written by `loadlab search`: a capacity {mode} of {servers}, no hooks.\n\
         # Rerun with `loadlab run THIS_FILE`; every key is in docs/PLANS.md.\n\
         name = {}\nmode = \"{mode}\"\n",
        quote(&name),
    );
    variants(&mut out, args, targets)?;
    out.push_str("\n[load]\n");
    let mut key = |k: &str, v: String| out.push_str(&format!("{k} = {v}\n"));
    if sweep {
        // Debug prints a float list as TOML writes it: [100.0, 200.0].
        key("rates", format!("{:?}", args.rates));
    }
    match targets {
        Targets::Inline(list) => key("targets", quote_all(list)),
        Targets::File(path) => key("targets_file", quote(&path.display().to_string())),
    }
    key("step_duration", quote(&args.step_duration));
    key("warmup", quote(&args.warmup));
    // -timeout, -H, ...: each under its declared key, as TOML writes its value.
    for (name, value) in args.request.fields().written() {
        key(&name, value);
    }
    if let Some(body) = &args.body {
        key(
            "body_file",
            quote(&absolute(body, "-body")?.display().to_string()),
        );
    }
    if let Some(n) = args.connections {
        key("connections", n.to_string());
    }
    if args.no_check_targets {
        key("check_targets", "false".to_owned());
    }
    if !args.stop_when.is_empty() {
        key("stop_when", quote_all(&args.stop_when));
    }
    if !args.monitor.is_empty() {
        key("monitor", quote_all(&args.monitor));
    }
    out.push_str("\n[slo]\n");
    for (k, v) in &slo {
        out.push_str(&format!("{k} = {v}\n"));
    }
    if !sweep {
        let start = args.start_rate.unwrap_or(max_rate.min(100.0));
        out.push_str(&format!(
            "\n[search]\nstart = {start:?}\nmax_rate = {max_rate:?}\nprecision = {:?}\n",
            args.precision.unwrap_or(0.02)
        ));
    }
    Ok(out)
}

/// The `[[variant]]`s: one server, or with -vs each base URL beside the targets' own
/// origin, named by host and port.
fn variants(out: &mut String, args: &SearchArgs, targets: &Targets) -> anyhow::Result<()> {
    if args.vs.is_empty() {
        out.push_str("\n[[variant]]\nname = \"server\"\n");
        return Ok(());
    }
    let own = host_port(targets).unwrap_or_else(|| "targets".to_owned());
    out.push_str(&format!("\n[[variant]]\nname = {}\n", quote(&own)));
    for url in &args.vs {
        let name = url::Url::parse(url)
            .ok()
            .and_then(|u| url_host_port(&u))
            .ok_or_else(|| {
                anyhow::anyhow!("-vs {url:?}: want scheme://host:port, like http://127.0.0.1:8081")
            })?;
        if name == own {
            bail!("-vs {url:?}: is the targets' own server; give another one");
        }
        out.push_str(&format!(
            "\n[[variant]]\nname = {}\nbase_url = {}\n",
            quote(&name),
            quote(url)
        ));
    }
    Ok(())
}

/// The flag each of the plan's own keys comes from, for errors found by
/// [`Plan::parse`]; an attack's or a run's key (`load.timeout`) is named as
/// [`workload::options`] declares its flag.
const FLAG_OF_KEY: [(&str, &str); 10] = [
    ("name", "-name"),
    ("load.targets", "URL"),
    ("load.step_duration", "-step-duration"),
    ("load.warmup", "-warmup"),
    ("search.start", "-start-rate"),
    ("search.max_rate", "-max-rate"),
    ("search.precision", "-precision"),
    ("load.rates", "-rates"),
    ("variant.base_url", "-vs"),
    ("variant.name", "-vs"),
];

/// A plan error about a key the flags wrote, named as the flag. Both kinds of error
/// (the plan's keys, the attack's fields) read `loadlab search:LINE: FIELD: reason`.
fn flag_error(err: lab::LabError) -> anyhow::Error {
    let text = err.to_string();
    let field_and_reason = text
        .strip_prefix("loadlab search:")
        .and_then(|rest| rest.split_once(": "))
        .and_then(|(_line, rest)| rest.split_once(": "));
    if let Some((field, reason)) = field_and_reason {
        let flag = FLAG_OF_KEY
            .iter()
            .find(|(key, _)| *key == field)
            .map(|(_, flag)| (*flag).to_owned())
            .or_else(|| field.starts_with("slo.").then(|| "-slo".to_owned()))
            .or_else(|| {
                let key = field.strip_prefix("load.")?;
                workload::options::by_key(key).map(|_| workload::options::flag_of(key))
            });
        if let Some(flag) = flag {
            return anyhow::anyhow!("{flag}: {reason}");
        }
    }
    anyhow::Error::new(err).context("the plan built from the flags")
}

/// `HOST-PORT` of the first target's URL, if the targets are inline.
fn host_port(targets: &Targets) -> Option<String> {
    match targets {
        Targets::Inline(list) => list
            .first()
            .and_then(|t| t.lines().next())
            .and_then(|line| line.split_whitespace().nth(1))
            .and_then(|u| url::Url::parse(u).ok())
            .and_then(|u| url_host_port(&u)),
        Targets::File(_) => None,
    }
}

fn url_host_port(url: &url::Url) -> Option<String> {
    url.host_str().map(|h| match url.port() {
        Some(port) => format!("{h}-{port}"),
        None => h.to_owned(),
    })
}

#[cfg(test)]
mod tests;
