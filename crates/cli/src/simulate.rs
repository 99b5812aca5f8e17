//! `loadlab simulate`: placeholder until the simulator crate lands.

use std::process::ExitCode;

/// Serve an origin / downstream / system-under-test simulator.
#[derive(clap::Args)]
pub struct SimulateArgs {}

pub fn run(_args: SimulateArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("simulate: not built yet")
}
