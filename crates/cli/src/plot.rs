//! `loadlab plot` (being built).

use std::process::ExitCode;

/// (being built)
#[derive(clap::Args, Debug)]
pub struct PlotArgs {}

pub fn run(_args: &PlotArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("plot: not built yet")
}
