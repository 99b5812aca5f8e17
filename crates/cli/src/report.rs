//! `loadlab report` (being built).

use std::process::ExitCode;

/// (being built)
#[derive(clap::Args)]
pub struct ReportArgs {}

pub fn run(_args: ReportArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("report: not built yet")
}
