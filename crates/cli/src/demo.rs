//! `loadlab demo` (being built).

use std::process::ExitCode;

/// (being built)
#[derive(clap::Args)]
pub struct DemoArgs {}

pub fn run(_args: DemoArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("demo: not built yet")
}
