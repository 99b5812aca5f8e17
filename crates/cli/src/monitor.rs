//! `loadlab monitor` (being built).

use std::process::ExitCode;

/// (being built)
#[derive(clap::Args, Debug)]
pub struct MonitorArgs {}

pub fn run(_args: &MonitorArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("monitor: not built yet")
}
