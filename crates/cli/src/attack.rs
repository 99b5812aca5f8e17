//! `loadlab attack` (being built).

use std::process::ExitCode;

/// (being built)
#[derive(clap::Args)]
pub struct AttackArgs {}

pub fn run(_args: AttackArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("attack: not built yet")
}
