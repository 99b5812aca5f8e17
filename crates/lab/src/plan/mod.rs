//! Plan files: the TOML model ([`Plan`]) and its checks. `docs/PLANS.md` documents
//! every field. By job, in the order they depend on each other:
//!
//! - `model`: the checked plan, what the runner reads;
//! - `syntax`: the TOML shape as serde reads it, and `Spot`, offsets to lines;
//! - `slo`, `modes`, `variants`, `load`: each table checked, with its messages;
//! - `shards`: `[load] shards`, `via` and `[load.kube]`, checked against the rest;
//! - `parse`: [`Plan::read`] and [`Plan::parse`], the tables in order.

mod load;
mod model;
mod modes;
mod parse;
mod shards;
mod slo;
mod syntax;
mod variants;

#[cfg(test)]
mod tests;

pub use model::{
    KubeOptions, Load, Matrix, Mode, Plan, Ready, ReadyProbe, Scenario, SearchOver, SearchSettings,
    Sharding, Steps, TargetSource, TraceStoreKey, Variant, Via,
};
pub use slo::DEFAULT_SUCCESS;
