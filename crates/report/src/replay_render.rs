//! [`ReplayFigures`] as the text report's "Replay vs original" section
//! ([`write_replay_text`]) and the JSON report's `loadlab.replay` array
//! ([`write_replay_json`]).

use std::fmt::Write as _;

use units::GoDuration;

use crate::json_write::{push_float, push_list, push_string, push_strings};
use crate::replay::{GroupFigures, LatencyFigures, ReplayFigures, SideFigures, StatusMix};
use crate::tabwriter::align;

/// Appends one section per replay attack: the logs read and how reading went, the
/// original against the replay, and the busiest path groups.
///
/// ```text
/// Replay "search": access.log.gz (nginx) at 2x
/// Log: 310 lines = 300 requests + 2 bad + 8 filtered + 0 skipped, 0 loops
///   access.log.gz:7: no request line
/// 12 of the requests logged out of order put back, at most 2.1s
///
/// Replay vs original  Original      Replay
/// requests            300           300
/// ...
/// ```
pub fn write_replay_text(out: &mut String, replays: &[ReplayFigures]) {
    for replay in replays {
        out.push('\n');
        write_log(out, replay);
        out.push('\n');
        out.push_str(&align(&versus_rows(replay), &[]));
        if !replay.groups.is_empty() {
            out.push('\n');
            out.push_str(&align(&group_rows(replay), &[]));
        }
    }
}

/// What was read: the logs, their format, the speed, then the end block's counts.
fn write_log(out: &mut String, replay: &ReplayFigures) {
    if replay.attack.is_empty() {
        out.push_str("Replay");
    } else {
        let _ = write!(out, "Replay {:?}", replay.attack);
    }
    if let Some(info) = &replay.info {
        let _ = write!(
            out,
            ": {} ({}) at {}x",
            info.files.join(", "),
            info.format,
            info.speed
        );
    }
    out.push('\n');
    let Some(log) = &replay.log else {
        out.push_str("Log: no end block, so no counts of lines read\n");
        return;
    };
    // The terms add up to the lines (docs/REPLAY.md defines each).
    let _ = writeln!(
        out,
        "Log: {} lines = {} requests + {} bad + {} filtered + {} skipped, {} {}",
        log.lines,
        log.requests,
        log.bad_lines,
        log.filtered,
        log.skipped(),
        log.loops,
        plural(log.loops, "loop", "loops")
    );
    for example in &log.bad_examples {
        let _ = writeln!(out, "  {example}");
    }
    if log.reordered > 0 {
        let _ = writeln!(
            out,
            "{} of the requests logged out of order put back, at most {}",
            log.reordered,
            GoDuration::report_ns(log.max_reorder_ns)
        );
    }
}

fn plural(count: u64, one: &'static str, many: &'static str) -> &'static str {
    if count == 1 { one } else { many }
}

/// The `Original` / `Replay` table: requests, rate, status mix, latency percentiles.
fn versus_rows(replay: &ReplayFigures) -> String {
    let (original, replayed) = (&replay.original, &replay.replay);
    let mut rows = String::from("Replay vs original\tOriginal\tReplay\n");
    let mut row = |name: &str, cell: &dyn Fn(&SideFigures) -> String| {
        let _ = writeln!(rows, "{name}\t{}\t{}", cell(original), cell(replayed));
    };
    row("requests", &|side| side.requests.to_string());
    row("rate", &|side| {
        side.rate_per_sec
            .map_or_else(|| "n/a".to_owned(), |rate| format!("{rate:.2}"))
    });
    for (index, name) in StatusMix::NAMES.iter().enumerate() {
        let seen = |side: &SideFigures| side.status.and_then(|s| s.count(index)).unwrap_or(0);
        // "other status" (1xx, 600 and up) only when some request had one.
        if index == StatusMix::NAMES.len() - 1 && seen(original) + seen(replayed) == 0 {
            continue;
        }
        row(name, &|side| status_cell(side.status, index));
    }
    for (index, name) in LatencyFigures::NAMES.iter().enumerate() {
        row(name, &|side| {
            duration_cell(side.latency.map(|l| l.values()[index]))
        });
    }
    rows
}

/// `270 (90.00%)`, or `n/a` where the log does not say.
fn status_cell(status: Option<StatusMix>, index: usize) -> String {
    let Some(status) = status else {
        return "n/a".to_owned();
    };
    match (status.count(index), status.share(index)) {
        (Some(count), Some(share)) => format!("{count} ({:.2}%)", share * 100.0),
        (Some(count), None) => count.to_string(),
        (None, _) => "n/a".to_owned(),
    }
}

fn duration_cell(ns: Option<u64>) -> String {
    ns.map_or_else(
        || "n/a".to_owned(),
        |ns| GoDuration::report_ns(ns).to_string(),
    )
}

fn share_cell(share: Option<f64>) -> String {
    share.map_or_else(|| "n/a".to_owned(), |s| format!("{:.2}%", s * 100.0))
}

/// The busiest path groups, then the rest as one line.
fn group_rows(replay: &ReplayFigures) -> String {
    let mut rows =
        String::from("Path group\tRequests\tOriginal p99\tReplay p99\tOriginal 5xx\tReplay 5xx\n");
    for group in replay.groups.iter().chain(&replay.rest) {
        let _ = writeln!(
            rows,
            "{}\t{}\t{}\t{}\t{}\t{}",
            group.name,
            group.requests,
            duration_cell(group.original_p99_ns),
            duration_cell(group.replay_p99_ns),
            share_cell(group.original_5xx),
            share_cell(group.replay_5xx)
        );
    }
    rows
}

/// `,"replay":[...]`, one object per replay attack (nothing without one).
pub fn write_replay_json(out: &mut String, replays: &[ReplayFigures]) {
    if replays.is_empty() {
        return;
    }
    out.push_str(",\"replay\":");
    push_list(out, replays, |out, replay| {
        out.push_str("{\"attack\":");
        push_string(out, &replay.attack);
        if let Some(info) = &replay.info {
            out.push_str(",\"files\":");
            push_list(out, &info.files, |out, file| push_string(out, file));
            out.push_str(",\"format\":");
            push_string(out, &info.format);
            out.push_str(",\"speed\":");
            push_float(out, info.speed);
        }
        if let Some(log) = &replay.log {
            let _ = write!(
                out,
                ",\"log\":{{\"lines\":{},\"requests\":{},\"bad_lines\":{},\"bad_examples\":[",
                log.lines, log.requests, log.bad_lines
            );
            push_strings(out, &log.bad_examples);
            let _ = write!(
                out,
                "],\"filtered\":{},\"skipped\":{},\"reordered\":{},\"max_reorder\":{},\"loops\":{}}}",
                log.filtered,
                log.skipped(),
                log.reordered,
                log.max_reorder_ns,
                log.loops
            );
        }
        out.push_str(",\"original\":");
        side_json(out, &replay.original);
        out.push_str(",\"replay\":");
        side_json(out, &replay.replay);
        out.push_str(",\"groups\":");
        push_list(out, &replay.groups, group_json);
        if let Some(rest) = &replay.rest {
            out.push_str(",\"rest\":");
            group_json(out, rest);
        }
        out.push('}');
    });
}

/// `{"requests","rate","status":{"2xx",...},"latency":{"50th",...}}`; `null` where
/// the log does not say (an original's status has no `transport` key).
fn side_json(out: &mut String, side: &SideFigures) {
    let _ = write!(out, "{{\"requests\":{},\"rate\":", side.requests);
    push_optional_float(out, side.rate_per_sec);
    out.push_str(",\"status\":");
    match side.status {
        None => out.push_str("null"),
        Some(status) => {
            out.push('{');
            let mut first = true;
            for (index, key) in StatusMix::KEYS.iter().enumerate() {
                if let Some(count) = status.count(index) {
                    let comma = if first { "" } else { "," };
                    let _ = write!(out, "{comma}\"{key}\":{count}");
                    first = false;
                }
            }
            out.push('}');
        }
    }
    out.push_str(",\"latency\":");
    match &side.latency {
        None => out.push_str("null"),
        Some(l) => {
            let _ = write!(
                out,
                "{{\"50th\":{},\"90th\":{},\"99th\":{},\"max\":{}}}",
                l.p50_ns, l.p90_ns, l.p99_ns, l.max_ns
            );
        }
    }
    out.push('}');
}

fn group_json(out: &mut String, group: &GroupFigures) {
    out.push_str("{\"name\":");
    push_string(out, &group.name);
    let _ = write!(out, ",\"requests\":{}", group.requests);
    let optional_ns = |out: &mut String, key: &str, ns: Option<u64>| {
        let _ = write!(out, ",\"{key}\":");
        match ns {
            Some(ns) => {
                let _ = write!(out, "{ns}");
            }
            None => out.push_str("null"),
        }
    };
    optional_ns(out, "original_99th", group.original_p99_ns);
    optional_ns(out, "replay_99th", group.replay_p99_ns);
    out.push_str(",\"original_5xx\":");
    push_optional_float(out, group.original_5xx);
    out.push_str(",\"replay_5xx\":");
    push_optional_float(out, group.replay_5xx);
    out.push('}');
}

fn push_optional_float(out: &mut String, value: Option<f64>) {
    match value {
        Some(value) => push_float(out, value),
        None => out.push_str("null"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use record::{ReplayEnd, ReplayInfo};

    fn side(requests: u64) -> SideFigures {
        SideFigures {
            requests,
            rate_per_sec: None,
            status: None,
            latency: None,
        }
    }

    fn figures(info: bool, log: Option<ReplayEnd>) -> ReplayFigures {
        ReplayFigures {
            attack: "incident".to_owned(),
            info: info.then(|| ReplayInfo {
                files: vec!["a.log".to_owned(), "b.log".to_owned()],
                format: "apache".to_owned(),
                speed: 0.5,
                log_start_unix_ns: 0,
            }),
            log,
            original: side(0),
            replay: side(3),
            groups: Vec::new(),
            rest: None,
        }
    }

    #[test]
    fn the_log_lines_say_what_was_read_or_that_nothing_says() {
        let one = ReplayEnd {
            lines: 3,
            requests: 1,
            bad_lines: 1,
            reordered: 1,
            max_reorder_ns: 1_500_000,
            loops: 1,
            ..ReplayEnd::default()
        };
        let rows = [
            (
                true,
                None,
                "Replay \"incident\": a.log, b.log (apache) at 0.5x\nLog: no end block",
            ),
            (false, None, "Replay \"incident\"\nLog: no end block"),
            (
                false,
                Some(one),
                "Log: 3 lines = 1 requests + 1 bad + 0 filtered + 1 skipped, 1 loop\n\
                 1 of the requests logged out of order put back, at most 1.5ms\n",
            ),
            (
                false,
                Some(ReplayEnd::default()),
                "0 bad + 0 filtered + 0 skipped, 0 loops\n\n",
            ),
        ];
        for (info, log, want) in rows {
            let mut out = String::new();
            write_replay_text(&mut out, &[figures(info, log)]);
            assert!(out.contains(want), "want {want:?} in:\n{out}");
        }
    }

    #[test]
    fn what_the_log_does_not_say_is_na_and_null() {
        let figures = figures(false, None);
        let mut text = String::new();
        write_replay_text(&mut text, std::slice::from_ref(&figures));
        for want in [
            "rate                n/a       n/a",
            "2xx                 n/a",
            "latency p99         n/a",
        ] {
            assert!(text.contains(want), "{want:?} in:\n{text}");
        }
        assert!(!text.contains("other status"), "{text}");
        assert!(!text.contains("Path group"), "no groups, no table: {text}");
        let mut json = String::new();
        write_replay_json(&mut json, &[figures]);
        assert_eq!(
            json,
            ",\"replay\":[{\"attack\":\"incident\",\"original\":{\"requests\":0,\"rate\":null,\
             \"status\":null,\"latency\":null},\"replay\":{\"requests\":3,\"rate\":null,\
             \"status\":null,\"latency\":null},\"groups\":[]}]"
        );
        let mut none = String::new();
        write_replay_json(&mut none, &[]);
        assert_eq!(none, "", "no replay, no key");
    }
}
