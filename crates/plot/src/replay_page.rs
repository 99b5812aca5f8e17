//! What a replay (`attack -replay`) shows on the page, from [`RunData::replay`] and the
//! rows' per-interval figures (`replay_gather.rs`): the "Replay vs original" panel
//! ([`panel`]: the logs read, the status mix and latency of the original beside the
//! replay's, the busiest path groups' p99 and 5xx share, as `loadlab report` gives
//! them). The chart of the original's p99 against the replay's per interval and the
//! original's line on the rate chart are built with the other charts (`charts.rs`).
//! A page without a replay has none of it, byte for byte.

use std::fmt::Write as _;

use report::{GroupFigures, LatencyFigures, ReplayFigures, SideFigures, StatusMix};

use crate::format;
use crate::svg::escape;

/// The panel's style, only on pages that have one.
const REPLAY_STYLE: &str = include_str!("replay.css");

/// The "Replay vs original" panel, one block per replay attack; nothing without one.
pub fn panel(out: &mut String, replays: &[ReplayFigures]) {
    if replays.is_empty() {
        return;
    }
    let _ = write!(
        out,
        "<style>\n{REPLAY_STYLE}</style>\n<section class=\"replay\" aria-labelledby=\"replay-title\">\n\
         <h2 id=\"replay-title\">Replay vs original</h2>\n"
    );
    for replay in replays {
        let _ = writeln!(
            out,
            "<p class=\"headline\">{}</p>",
            escape(&headline(replay))
        );
        if let Some(log) = &replay.log {
            let _ = writeln!(
                out,
                "<p>{} lines = {} requests + {} bad + {} filtered + {} skipped, {} loops{}</p>",
                format::grouped(log.lines),
                format::grouped(log.requests),
                format::grouped(log.bad_lines),
                format::grouped(log.filtered),
                format::grouped(log.skipped()),
                format::grouped(log.loops),
                escape(&reorder_text(log.reordered, log.max_reorder_ns))
            );
            for example in &log.bad_examples {
                let _ = writeln!(
                    out,
                    "<p class=\"bad-line\"><code>{}</code></p>",
                    escape(example)
                );
            }
        }
        out.push_str("<div class=\"tables\">\n");
        versus_table(out, replay);
        groups_table(out, replay);
        out.push_str("</div>\n");
    }
    out.push_str("</section>\n");
}

/// `incident: logs/access.log.gz (nginx) at 2x`.
fn headline(replay: &ReplayFigures) -> String {
    match &replay.info {
        Some(info) => format!(
            "{}: {} ({}) at {}x",
            replay.attack,
            info.files.join(", "),
            info.format,
            info.speed
        ),
        None => replay.attack.clone(),
    }
}

fn reorder_text(reordered: u64, max_reorder_ns: u64) -> String {
    if reordered == 0 {
        return String::new();
    }
    format!(
        "; {} of the requests logged out of order put back, at most {}",
        format::grouped(reordered),
        format::duration_ns(max_reorder_ns as f64)
    )
}

/// Requests, rate, status mix and latency percentiles: original beside replay.
fn versus_table(out: &mut String, replay: &ReplayFigures) {
    out.push_str(
        "<table class=\"versus\">\n<thead><tr><th></th><th>original</th><th>replay</th></tr>\
         </thead>\n<tbody>\n",
    );
    let mut row = |name: &str, cell: &dyn Fn(&SideFigures) -> String| {
        let _ = writeln!(
            out,
            "<tr><td>{name}</td><td>{}</td><td>{}</td></tr>",
            escape(&cell(&replay.original)),
            escape(&cell(&replay.replay))
        );
    };
    row("requests", &|side| format::grouped(side.requests));
    row("rate /s", &|side| {
        side.rate_per_sec
            .map_or_else(|| "n/a".to_owned(), |rate| format!("{rate:.2}"))
    });
    for (index, name) in StatusMix::NAMES.iter().enumerate() {
        let seen = |side: &SideFigures| side.status.and_then(|s| s.count(index)).unwrap_or(0);
        if index == StatusMix::NAMES.len() - 1 && seen(&replay.original) + seen(&replay.replay) == 0
        {
            continue;
        }
        row(name, &|side| status_cell(side.status, index));
    }
    for (index, name) in LatencyFigures::NAMES.iter().enumerate() {
        row(name, &|side| {
            duration_cell(side.latency.map(|l| l.values()[index]))
        });
    }
    out.push_str("</tbody>\n</table>\n");
}

fn status_cell(status: Option<StatusMix>, index: usize) -> String {
    match status.map(|s| (s.count(index), s.share(index))) {
        Some((Some(count), Some(share))) => {
            format!("{} ({:.2}%)", format::grouped(count), share * 100.0)
        }
        Some((Some(count), None)) => format::grouped(count),
        _ => "n/a".to_owned(),
    }
}

fn duration_cell(ns: Option<u64>) -> String {
    ns.map_or_else(|| "n/a".to_owned(), |ns| format::duration_ns(ns as f64))
}

fn share_cell(share: Option<f64>) -> String {
    share.map_or_else(|| "n/a".to_owned(), |s| format!("{:.2}%", s * 100.0))
}

/// The busiest path groups, then the rest as one row.
fn groups_table(out: &mut String, replay: &ReplayFigures) {
    if replay.groups.is_empty() {
        return;
    }
    out.push_str(
        "<table class=\"groups\">\n<thead><tr><th>path group</th><th>requests</th>\
         <th>original p99</th><th>replay p99</th><th>original 5xx</th><th>replay 5xx</th>\
         </tr></thead>\n<tbody>\n",
    );
    let row = |out: &mut String, group: &GroupFigures, class: &str| {
        let _ = writeln!(
            out,
            "<tr{class}><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&group.name),
            format::grouped(group.requests),
            duration_cell(group.original_p99_ns),
            duration_cell(group.replay_p99_ns),
            share_cell(group.original_5xx),
            share_cell(group.replay_5xx)
        );
    };
    for group in &replay.groups {
        row(out, group, "");
    }
    if let Some(rest) = &replay.rest {
        row(out, rest, " class=\"rest\"");
    }
    out.push_str("</tbody>\n</table>\n");
}
