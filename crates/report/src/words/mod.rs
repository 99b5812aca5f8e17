//! Judgements in words: the one place sentences are written for the typed judgements
//! of `analysis`: a step's [`analysis::Miss`]es, the [`analysis::Diagnosis`]. Every renderer (text, JSON,
//! Markdown, HTML, live) words them through here, and each `match` is exhaustive, so a
//! judgement's new case is named by the compiler here first.

pub mod diagnosis;
mod percent;
mod step;

pub use percent::{floor_percent, pass_rate};
pub use step::{miss, verdict_why};
