//! The `loadlab` binary: a thin shell over the library crates.
//!
//! Each subcommand lives in its own file and follows one shape: clap arguments
//! (their doc comments are the `--help` text) -> a validated library config -> one
//! library call. vegeta's single-dash long flags (`-rate=100`) are accepted by
//! [`flags::normalize_long_flags`] before clap sees them.

// Doc comments here are `--help` text, where `[;metric=RE]` and `[[variant]]` are what
// the user types, not links.
#![allow(rustdoc::broken_intra_doc_links)]

mod attack;
mod ci;
mod compare;
mod completions;
mod dashboard;
mod demo;
mod encode;
mod flags;
mod help;
mod kube;
mod kube_shard;
mod kube_steer;
mod live_view;
mod monitor;
mod plot;
mod prometheus;
mod replay_args;
mod report;
mod request_args;
mod run;
mod search;
mod signals;
mod simulate;
mod steer;
mod steer_shard;
mod watch;

use std::process::ExitCode;

/// mimalloc, not glibc's malloc: the importers and report's fold allocate and free
/// millions of small strings, where glibc's free and consolidation cost a quarter of the
/// time (bench/flows/har_import.py); the engine's per-request path does not allocate.
/// Its transparent huge pages are turned off in `main`.
#[global_allocator]
static GLOBAL_ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// loadlab: load testing and capacity lab.
///
/// Flags are written -rate=500 or -rate 500 (vegeta's spelling) or --rate 500. Pipes work
/// as with vegeta. `loadlab COMMAND -h` gives a command's options on one screen,
/// `loadlab COMMAND --help` what each does and examples to paste.
///
/// Examples:
///
///   echo "GET http://127.0.0.1:8080/" | loadlab attack -rate=500 -duration=10s | loadlab report
///
///   loadlab search http://127.0.0.1:8080/ -slo 'p99 < 200ms' -slo 'success > 99%'
///
///   loadlab demo
#[derive(Parser)]
#[command(
    name = "loadlab",
    version,
    about,
    propagate_version = true,
    verbatim_doc_comment
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Each subcommand's help text is the doc comment of its arguments struct.
#[derive(Subcommand)]
// Parsed once per process; boxing the largest variant would buy nothing.
#[allow(clippy::large_enum_variant)]
enum Command {
    Attack(attack::AttackArgs),
    Report(report::ReportArgs),
    Compare(compare::CompareArgs),
    Encode(encode::EncodeArgs),
    Demo(demo::DemoArgs),
    Plot(plot::PlotArgs),
    Monitor(monitor::MonitorArgs),
    Simulate(simulate::SimulateArgs),
    Run(run::RunArgs),
    Search(search::SearchArgs),
    Kube(kube::KubeArgs),
    Steer(steer::SteerArgs),
    Completions(completions::CompletionsArgs),
    Man(completions::ManArgs),
}

fn main() -> ExitCode {
    // mimalloc asks for transparent huge pages, then purges and refaults them, so the
    // kernel zeroed 2 MiB at a time: a third of a HAR import's CPU went to clearing pages.
    // Best effort: a kernel without the flag keeps its huge pages.
    let _ = rustix::thread::disable_transparent_huge_pages(true);
    let args = match flags::normalize_long_flags(&Cli::command(), std::env::args_os().collect()) {
        Ok(args) => args,
        Err(usage) => {
            // A usage error, as clap's own: exit 2, nothing on stdout.
            eprintln!("loadlab: {usage}");
            return ExitCode::from(2);
        }
    };
    let root = Cli::command();
    if let Some(request) = help::request(&root, &args) {
        return print_help(&root, &request);
    }
    let matches = root.get_matches_from(args);
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(err) => err.exit(),
    };
    let outcome = match cli.command {
        Command::Attack(args) => attack::run(&args),
        Command::Report(args) => report::run(args),
        Command::Compare(args) => compare::run(args),
        Command::Encode(args) => encode::run(args),
        Command::Demo(args) => demo::run(&args),
        Command::Plot(args) => plot::run(&args),
        Command::Monitor(args) => monitor::run(&args),
        Command::Simulate(args) => simulate::run(args),
        Command::Run(args) => run::run(&args),
        Command::Search(args) => search::run(&args),
        Command::Kube(args) => kube::run(args),
        Command::Steer(args) => steer::run(&args),
        Command::Completions(args) => completions::completions(&args),
        Command::Man(args) => completions::man(&args),
    };
    match outcome {
        Ok(code) => code,
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("loadlab: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// `-h`, `--help` and `help CMD`: printed on stdout, exit 0, as clap does; a reader
/// that goes away (`| head`) is not an error.
fn print_help(root: &clap::Command, request: &help::HelpRequest) -> ExitCode {
    use std::io::Write;
    let text = help::render(root, request);
    match std::io::stdout().write_all(text.as_bytes()) {
        Err(err) if err.kind() != std::io::ErrorKind::BrokenPipe => {
            eprintln!("loadlab: {err}");
            ExitCode::FAILURE
        }
        _ => ExitCode::SUCCESS,
    }
}

/// A reader that went away (`loadlab report | head`) is not an error.
fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
