//! Judgements in words: the one place sentences are written for the typed judgements
//! of `analysis`: a step's [`analysis::Miss`]es, the [`analysis::Diagnosis`], where
//! the slow requests' time went ([`analysis::SpanJudgement`]). Every renderer (text, JSON,
//! Markdown, HTML, live) words them through here, and each `match` is exhaustive, so a
//! judgement's new case is named by the compiler here first.

pub mod diagnosis;
mod percent;
pub mod saturation;
pub mod spans;
mod step;

pub use percent::{floor_percent, pass_rate};
pub use step::{miss, verdict_why};

use units::GoDuration;

/// What else a heavy lag was over: half the gap between sends when the asked rate was
/// delivered (` nor half the 10ms gap between sends`), or between one user's sends in
/// a closed model, else nothing.
pub fn lag_gap(lag: &analysis::Lag) -> String {
    let (gap_ns, whose) = match lag.send_gap {
        None => return String::new(),
        Some(analysis::SendGap::Run(ns)) => (ns, "sends"),
        Some(analysis::SendGap::User(ns)) => (ns, "a user's sends"),
    };
    format!(
        " nor half the {} gap between {whose}",
        GoDuration::report_ns(gap_ns)
    )
}
