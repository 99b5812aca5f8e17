//! `loadlab encode` (being built).

use std::process::ExitCode;

/// (being built)
#[derive(clap::Args)]
pub struct EncodeArgs {}

pub fn run(_args: EncodeArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("encode: not built yet")
}
