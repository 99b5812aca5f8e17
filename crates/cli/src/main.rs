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
mod compare;
mod dashboard;
mod demo;
mod encode;
mod flags;
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

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// loadlab: load testing and capacity lab.
///
/// Pipes work as with vegeta:
///
///   echo "GET http://127.0.0.1:8080/" | loadlab attack -rate=500 -duration=10s | loadlab report
#[derive(Parser)]
#[command(name = "loadlab", version, about, long_about = None, propagate_version = true)]
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
}

fn main() -> ExitCode {
    let args = match flags::normalize_long_flags(&Cli::command(), std::env::args_os().collect()) {
        Ok(args) => args,
        Err(usage) => {
            // A usage error, as clap's own: exit 2, nothing on stdout.
            eprintln!("loadlab: {usage}");
            return ExitCode::from(2);
        }
    };
    let matches = Cli::command().get_matches_from(args);
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

/// A reader that went away (`loadlab report | head`) is not an error.
fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
