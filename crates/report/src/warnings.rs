//! [`Warning`]: what a reader of a report must not miss, said plainly: the generator
//! fell behind (its own delay is inside the latencies) or sent less than asked. And
//! [`torn_warnings`]: inputs that stopped at a cut or damaged block. And
//! [`shard_warnings`]: shards of a sharded run that are missing, ended early, or
//! started further apart than the latencies measured.

use std::fmt;

use record::{ShardInfo, SourceSummary, StopReason};

use units::GoDuration;

/// Send lag p99 above this (and above the answers' median latency) means the
/// generator could not keep its schedule, unless a plan's `max_lag` says otherwise
/// ([`analysis::GeneratorHealth`]).
pub const LAG_P99_LIMIT_NS: u64 = 1_000_000;
/// Achieved over asked rate below this means the server saw less load than asked,
/// unless a plan's `achieved` says otherwise.
pub const RATE_RATIO_LIMIT: f64 = 0.99;

#[derive(Debug, Clone, Copy, PartialEq)]
/// Something a reader of the report must not miss: the generator, not the server, shaped the numbers.
pub enum Warning {
    /// Send lag p99 over its bound and the answers' median latency
    /// ([`analysis::LagWeight::Heavy`]).
    FellBehind {
        /// The lag as weighed.
        lag: analysis::Lag,
    },
    /// Achieved rate below the least share of the asked rate ([`RATE_RATIO_LIMIT`]
    /// unless a plan says otherwise).
    RateShort {
        /// The least share it was held to.
        min_ratio: f64,
        /// What the schedules asked for, requests per second.
        asked_per_sec: f64,
        /// What was sent, requests per second.
        achieved_per_sec: f64,
        /// Requests due but never sent.
        unsent: u64,
    },
    /// The rate held, but requests were due and never sent (the run stopped behind).
    Unsent {
        /// Requests due but never sent.
        unsent: u64,
    },
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Warning::FellBehind { lag } => write!(
                f,
                "the generator fell behind: send lag p99 was {} (> {}, and not under the \
                 median latency {}{}); latencies above include the generator's own delay.",
                GoDuration::report_ns(lag.p99_ns),
                GoDuration::report_ns(lag.limit_ns),
                GoDuration::report_ns(lag.latency_p50_ns),
                crate::words::lag_gap(&lag)
            ),
            Warning::RateShort {
                min_ratio,
                asked_per_sec,
                achieved_per_sec,
                unsent,
            } => {
                write!(
                    f,
                    "the generator sent {achieved_per_sec:.2} req/s of the {asked_per_sec:.2} \
                     asked ({:.2}% < {:.0}%); the server saw less load than asked.",
                    achieved_per_sec / asked_per_sec * 100.0,
                    min_ratio * 100.0
                )?;
                if unsent > 0 {
                    write!(f, " {unsent} requests were due but never sent.")?;
                }
                Ok(())
            }
            Warning::Unsent { unsent } => write!(
                f,
                "{unsent} requests were due but never sent (the run stopped while the \
                 generator was behind)."
            ),
        }
    }
}

/// One line per input that stopped early: `warning: NAME: cut at byte N (REASON);
/// skipped M bytes`. Everything before the cut was read and is in the report.
pub fn torn_warnings(summaries: &[SourceSummary]) -> Vec<String> {
    summaries
        .iter()
        .filter_map(|summary| {
            let torn = summary.torn.as_ref()?;
            Some(format!(
                "warning: {}: cut at byte {} ({}); skipped {} bytes; the report covers the \
                 {} records before the cut",
                summary.name, torn.offset, torn.reason, torn.skipped_bytes, summary.records
            ))
        })
        .collect()
}

/// One line per problem with the shards among the inputs (files whose header names a
/// shard of a run of more than one): a shard missing (its share of the load is not in
/// the report), a shard that ended early (killed, interrupted or stopped by a rule;
/// its share after that is missing), and a spread of start skews larger than
/// `latency_p50_ns` (the report's, when it has one). [`record::check_shards`] has
/// already refused shards of different runs.
pub fn shard_warnings(summaries: &[SourceSummary], latency_p50_ns: Option<u64>) -> Vec<String> {
    let shards: Vec<(&SourceSummary, &ShardInfo)> = summaries
        .iter()
        .filter_map(|s| s.header.shard.as_ref().map(|info| (s, info)))
        .filter(|(_, info)| info.count > 1)
        .collect();
    let Some(count) = shards.first().map(|(_, info)| info.count) else {
        return Vec::new();
    };
    let mut lines: Vec<String> = (0..count)
        .filter(|&index| !shards.iter().any(|(_, info)| info.index == index))
        .map(|index| {
            format!(
                "warning: shard {index}/{count} missing: its {} of the load is not in this report",
                share_name(count)
            )
        })
        .collect();
    if !stopped_together(&shards, count) {
        lines.extend(
            shards
                .iter()
                .filter_map(|(summary, info)| ended_early(summary, info)),
        );
    }
    let skews = shards.iter().map(|(_, info)| info.start_skew_ns);
    let spread_ns = skews
        .clone()
        .max()
        .unwrap_or(0)
        .abs_diff(skews.min().unwrap_or(0));
    if let Some(p50_ns) = latency_p50_ns.filter(|&p50| spread_ns > p50) {
        lines.push(format!(
            "warning: the shards started {} apart (start skew), more than the latency p50 \
             ({}): requests meant to interleave were shifted by more than the latencies \
             measured; the machines' clock offsets add to that and are not known",
            GoDuration::report_ns(spread_ns),
            GoDuration::report_ns(p50_ns)
        ));
    }
    lines
}

/// `quarter`, `third`, ... of the load one shard carries.
fn share_name(count: u64) -> String {
    match count {
        2 => "half".to_owned(),
        3 => "third".to_owned(),
        4 => "quarter".to_owned(),
        _ => format!("1/{count} share"),
    }
}

/// Every shard is here and ended within 2 s of the others for one reason (a
/// coordinator's stop, Ctrl-C at every shard): the run stopped as one, and no shard's
/// share is missing against the others'; the run's stop line says why.
fn stopped_together(shards: &[(&SourceSummary, &ShardInfo)], count: u64) -> bool {
    const TOGETHER_NS: u64 = 2_000_000_000;
    let ends: Option<Vec<&record::RunEnd>> = shards.iter().map(|(s, _)| s.end.as_ref()).collect();
    let Some(ends) = ends.filter(|ends| ends.len() as u64 == count) else {
        return false;
    };
    let first = ends[0];
    let times = ends.iter().map(|end| end.at_unix_ns);
    let spread_ns = times.clone().max().unwrap_or(0) - times.min().unwrap_or(0);
    spread_ns <= TOGETHER_NS
        && (ends.iter()).all(|end| end.reason == first.reason && end.detail == first.detail)
}

fn ended_early(summary: &SourceSummary, info: &ShardInfo) -> Option<String> {
    let what = match &summary.end {
        None => "has no end: it was killed or is still running".to_owned(),
        Some(end) if end.reason == StopReason::Completed => return None,
        Some(end) => {
            let reason = match end.reason {
                StopReason::Interrupted => "interrupted",
                StopReason::StopRule => "stopped by a rule",
                StopReason::Failed | StopReason::Completed => "failed",
            };
            format!(
                "ended early ({reason} at {})",
                record::format_timestamp(end.at_unix_ns)
            )
        }
    };
    Some(format!(
        "warning: shard {}/{} ({}) {what}: its share of the load after its last record \
         is missing from this report",
        info.index, info.count, summary.name
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shard(name: &str, index: u64, skew_ns: i64, end: Option<StopReason>) -> SourceSummary {
        SourceSummary {
            name: name.to_owned(),
            format: record::InputFormat::Binary,
            header: record::RunHeader {
                shard: Some(ShardInfo {
                    index,
                    count: 4,
                    start_skew_ns: skew_ns,
                    ..ShardInfo::default()
                }),
                ..record::RunHeader::default()
            },
            stats: Vec::new(),
            end: end.map(|reason| record::RunEnd {
                reason,
                ..record::RunEnd::default()
            }),
            torn: None,
            records: 0,
            samples: record::SampleSummary::default(),
            logged: 0,
        }
    }

    #[test]
    fn shards_missing_cut_short_or_far_apart_are_named() {
        let done = Some(StopReason::Completed);
        let all = [
            shard("a", 0, 0, done),
            shard("b", 1, 0, done),
            shard("c", 2, 0, done),
            shard("d", 3, 0, done),
        ];
        assert!(shard_warnings(&all, Some(1_000_000)).is_empty());
        assert!(
            shard_warnings(&[], Some(1)).is_empty(),
            "unsharded: nothing to say"
        );
        let gaps = [
            shard("a", 0, 0, done),
            shard("b", 1, 5_000_000, None),
            shard("d", 3, 0, Some(StopReason::Interrupted)),
        ];
        let lines = shard_warnings(&gaps, Some(1_000_000));
        let want = [
            "warning: shard 2/4 missing: its quarter of the load is not in this report",
            "warning: shard 1/4 (b) has no end: it was killed or is still running",
            "warning: shard 3/4 (d) ended early (interrupted at ",
            "warning: the shards started 5ms apart (start skew), more than the latency p50 (1ms)",
        ];
        assert_eq!(lines.len(), want.len(), "{lines:#?}");
        for (line, want) in lines.iter().zip(want) {
            assert!(line.starts_with(want), "{line}\nwant {want}");
        }
        assert_eq!(
            shard_warnings(&gaps, Some(10_000_000)).len(),
            3,
            "skew below p50"
        );
    }

    #[test]
    fn shards_stopped_together_by_one_rule_are_not_cut_short() {
        let stopped = |name, index, at_unix_ns, detail: &str| SourceSummary {
            end: Some(record::RunEnd {
                reason: StopReason::StopRule,
                at_unix_ns,
                detail: detail.to_owned(),
                ..record::RunEnd::default()
            }),
            ..shard(name, index, 0, None)
        };
        let rule = "'p99 > 1s for 2s' fired at 9s on the merged figures of 4 shards";
        let together: Vec<SourceSummary> = (0..4)
            .map(|i| stopped("s", i, 10_000_000_000 + i * 300_000_000, rule))
            .collect();
        assert!(shard_warnings(&together, None).is_empty());
        let mut apart = together.clone();
        apart[3] = stopped("late", 3, 14_000_000_000, rule);
        assert_eq!(
            shard_warnings(&apart, None).len(),
            4,
            "4 s apart: each is named"
        );
        let mut other_reason = together.clone();
        other_reason[1] = stopped("own", 1, 10_000_000_000, "'errors > 5% for 1s' fired at 9s");
        assert_eq!(shard_warnings(&other_reason, None).len(), 4);
        assert_eq!(
            shard_warnings(&together[..3], None).len(),
            4,
            "one missing: all named"
        );
    }
}
