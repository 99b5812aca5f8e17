//! A replay against its original (`attack -replay`): [`Replays`] tallies, in one pass
//! and bounded memory, each replay attack's records (what the replay got) and its
//! logged originals (what the access log said the server answered then), and
//! [`Replays::close`] makes them [`ReplayFigures`]: the logs read, requests, rate,
//! status mix ([`StatusMix`]) and latency percentiles side by side, and the busiest
//! path groups ([`GroupFigures`]). `report` prints them (`replay_render.rs`) and
//! `plot` draws them.
//!
//! Memory: per attack and side a [`Distribution`] (flat once past its exact limit), and
//! per path group a smaller one; beyond [`MAX_REPLAY_GROUPS`] groups the rest share
//! one, so a log of many distinct paths cannot grow the tally without bound.

use std::collections::HashMap;

use record::{Logged, Record, ReplayEnd, ReplayInfo, RunTables, SourceSummary};

use crate::distribution::Distribution;
use units::go_seconds;

/// The busiest path groups listed one by one; the others make one line.
pub const REPLAY_TOP_GROUPS: usize = 20;
/// Path groups of one attack tallied apart, in the order first seen; requests of later
/// groups share one tally (their percentiles are then those of all of them). A busy
/// group's distributions reach about 100 KiB a side, so this bounds a replay's tally
/// near 50 MiB however many paths its log holds.
pub const MAX_REPLAY_GROUPS: usize = 256;
/// Values a group's distribution keeps exactly: 8 KiB a side.
const GROUP_EXACT_LIMIT: usize = 1 << 10;
/// Bad log lines quoted at most, over every input.
const MAX_BAD_EXAMPLES: usize = 5;

/// Replay attacks' records and originals, tallied as they stream by; see the module
/// documentation.
#[derive(Debug, Clone, Default)]
pub struct Replays {
    /// By merged attack id; `None` for an attack that is no replay.
    attacks: Vec<Option<Box<AttackTally>>>,
}

#[derive(Debug, Clone, Default)]
struct AttackTally {
    original: SideTally,
    replay: SideTally,
    /// Target -> index in `groups` (folded ones -> `folded`).
    group_ids: HashMap<u32, usize>,
    groups: Vec<GroupTally>,
    /// The shared group of targets past [`MAX_REPLAY_GROUPS`].
    folded: Option<usize>,
}

/// One side: requests, their time span, status classes and latencies.
#[derive(Debug, Clone, Default)]
struct SideTally {
    requests: u64,
    first_unix_ns: Option<u64>,
    last_unix_ns: u64,
    /// By [`StatusMix`] class.
    classes: [u64; CLASSES],
    latency: Distribution,
}

impl SideTally {
    fn add(&mut self, at_unix_ns: u64, status: u16, latency_ns: Option<u64>) {
        self.requests += 1;
        self.first_unix_ns = Some(self.first_unix_ns.map_or(at_unix_ns, |f| f.min(at_unix_ns)));
        self.last_unix_ns = self.last_unix_ns.max(at_unix_ns);
        self.classes[class_of(status)] += 1;
        if let Some(latency_ns) = latency_ns {
            self.latency.add(latency_ns);
        }
    }
}

#[derive(Debug, Clone)]
struct GroupTally {
    /// The target; `None` for the groups past [`MAX_REPLAY_GROUPS`], folded.
    target: Option<u32>,
    original: GroupSide,
    replay: GroupSide,
}

#[derive(Debug, Clone)]
struct GroupSide {
    requests: u64,
    /// Requests with a status (the log may have none; a transport error has 0).
    with_status: u64,
    server_errors: u64,
    latency: Distribution,
}

impl Default for GroupSide {
    fn default() -> Self {
        GroupSide {
            requests: 0,
            with_status: 0,
            server_errors: 0,
            latency: Distribution::with_exact_limit(GROUP_EXACT_LIMIT),
        }
    }
}

impl GroupSide {
    fn add(&mut self, status: u16, counts_without_status: bool, latency_ns: Option<u64>) {
        self.requests += 1;
        if status != 0 || counts_without_status {
            self.with_status += 1;
        }
        if (500..600).contains(&status) {
            self.server_errors += 1;
        }
        if let Some(latency_ns) = latency_ns {
            self.latency.add(latency_ns);
        }
    }

    fn merge(&mut self, other: &GroupSide) {
        self.requests += other.requests;
        self.with_status += other.with_status;
        self.server_errors += other.server_errors;
        self.latency.merge(&other.latency);
    }

    fn p99_ns(&self) -> Option<u64> {
        (self.latency.count() > 0).then(|| self.latency.clone().into_quantiles().quantile(0.99))
    }

    fn server_error_share(&self) -> Option<f64> {
        (self.with_status > 0).then(|| self.server_errors as f64 / self.with_status as f64)
    }
}

impl AttackTally {
    /// The group of `target`: its own among the first [`MAX_REPLAY_GROUPS`], the
    /// shared one after.
    fn group(&mut self, target: u32) -> &mut GroupTally {
        let index = match self.group_ids.get(&target) {
            Some(&index) => index,
            None => {
                let own_groups = self.groups.len() - usize::from(self.folded.is_some());
                let index = if own_groups < MAX_REPLAY_GROUPS {
                    self.groups.push(GroupTally::new(Some(target)));
                    self.groups.len() - 1
                } else if let Some(folded) = self.folded {
                    folded
                } else {
                    self.groups.push(GroupTally::new(None));
                    *self.folded.insert(self.groups.len() - 1)
                };
                // Folded targets stay in the map (bounded by the targets table), so
                // the rest line can say how many groups it holds.
                self.group_ids.insert(target, index);
                index
            }
        };
        &mut self.groups[index]
    }
}

impl GroupTally {
    fn new(target: Option<u32>) -> GroupTally {
        GroupTally {
            target,
            original: GroupSide::default(),
            replay: GroupSide::default(),
        }
    }
}

impl Replays {
    /// An empty tally.
    pub fn new() -> Replays {
        Replays::default()
    }

    /// Tallies the records of replay attacks (those whose header entry has `replay`,
    /// or that logged originals named); ids are `tables`'.
    pub fn add_records(&mut self, records: &[Record], tables: &RunTables) {
        for record in records {
            let Some(tally) = self.tally(record.attack, tables, false) else {
                continue;
            };
            let sent_unix_ns = record.sent_unix_ns();
            tally
                .replay
                .add(sent_unix_ns, record.status, Some(record.latency_ns));
            tally
                .group(record.target)
                .replay
                .add(record.status, true, Some(record.latency_ns));
        }
    }

    /// Tallies logged originals; ids are `tables'`.
    pub fn add_logged(&mut self, logged: &[Logged], tables: &RunTables) {
        for entry in logged {
            let Some(tally) = self.tally(entry.attack, tables, true) else {
                continue;
            };
            tally
                .original
                .add(entry.intended_unix_ns, entry.status, entry.latency_ns);
            tally
                .group(entry.target)
                .original
                .add(entry.status, false, entry.latency_ns);
        }
    }

    /// True once some replay attack was seen.
    pub fn is_empty(&self) -> bool {
        self.attacks.iter().all(Option::is_none)
    }

    /// The attack's tally: made for a replay attack (or any attack when `logged`, the
    /// originals being proof enough), `None` for others.
    fn tally(&mut self, attack: u16, tables: &RunTables, logged: bool) -> Option<&mut AttackTally> {
        let id = usize::from(attack);
        if id >= self.attacks.len() {
            self.attacks.resize_with(id + 1, || None);
        }
        let slot = &mut self.attacks[id];
        if slot.is_none() {
            let replay = tables.attacks.get(id).is_some_and(|a| a.replay.is_some());
            if !replay && !logged {
                return None;
            }
            *slot = Some(Box::default());
        }
        slot.as_deref_mut()
    }

    /// Each replay attack's figures, in attack order: its header's `replay` and its
    /// inputs' end blocks' `replays` (merged by attack name) beside the tallies.
    pub fn close(self, summaries: &[SourceSummary], tables: &RunTables) -> Vec<ReplayFigures> {
        let mut figures = Vec::new();
        let declared = tables.attacks.iter().map(|a| a.replay.is_some());
        let count = self.attacks.len().max(declared.len());
        let mut tallies = self.attacks.into_iter();
        for id in 0..count {
            let tally = tallies.next().flatten();
            let info = tables.attacks.get(id).and_then(|a| a.replay.clone());
            if tally.is_none() && info.is_none() {
                continue;
            }
            let name = tables.attacks.get(id).map_or("", |a| a.name.as_str());
            let tally = tally.map(|t| *t).unwrap_or_default();
            figures.push(ReplayFigures {
                attack: name.to_owned(),
                log: merged_log(summaries, name),
                info,
                original: tally.original.close(Side::Original),
                replay: tally.replay.close(Side::Replay),
                groups: Vec::new(),
                rest: None,
            });
            let last = figures.len() - 1;
            let folded_groups = tally
                .group_ids
                .values()
                .filter(|&&i| Some(i) == tally.folded);
            let folded_groups = folded_groups.count();
            close_groups(tally.groups, folded_groups, tables, &mut figures[last]);
        }
        figures
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Original,
    Replay,
}

impl SideTally {
    fn close(self, side: Side) -> SideFigures {
        let span_ns = self
            .first_unix_ns
            .map_or(0, |first| self.last_unix_ns - first);
        let rate_per_sec = (span_ns > 0).then(|| self.requests as f64 / go_seconds(span_ns));
        // A log without statuses says nothing about the mix; a replay always does.
        let logged = self.requests - self.classes[TRANSPORT];
        let status = match side {
            Side::Original if logged == 0 => None,
            _ => Some(StatusMix {
                counts: self.classes,
                logged: side == Side::Original,
            }),
        };
        let latency = (self.latency.count() > 0).then(|| {
            let max_ns = self.latency.max();
            let quantiles = self.latency.into_quantiles();
            LatencyFigures {
                p50_ns: quantiles.quantile(0.5),
                p90_ns: quantiles.quantile(0.9),
                p99_ns: quantiles.quantile(0.99),
                max_ns,
            }
        });
        SideFigures {
            requests: self.requests,
            rate_per_sec,
            status,
            latency,
        }
    }
}

/// The busiest [`REPLAY_TOP_GROUPS`] groups by replayed requests (then originals,
/// then name), and the others as one line (`folded_groups` of them were tallied as
/// one already).
fn close_groups(
    groups: Vec<GroupTally>,
    folded_groups: usize,
    tables: &RunTables,
    figures: &mut ReplayFigures,
) {
    // Groups of one host (a replay onto -base-url) are named by their paths alone.
    let origin_of = |url: &str| {
        url.find("://").map(|at| {
            let path = url[at + 3..].find('/').map_or(url.len(), |p| at + 3 + p);
            url[..path].to_owned()
        })
    };
    let urls = groups
        .iter()
        .filter_map(|g| g.target)
        .filter_map(|id| tables.targets.get(id as usize));
    let origins: std::collections::BTreeSet<Option<String>> =
        urls.map(|t| origin_of(&t.url)).collect();
    let strip = match origins.iter().next() {
        Some(Some(origin)) if origins.len() == 1 => origin.len(),
        _ => 0,
    };
    let name = |id: u32| {
        tables.targets.get(id as usize).map_or_else(
            || format!("#{id}"),
            |t| {
                format!(
                    "{} {}",
                    t.method,
                    t.url
                        .get(strip..)
                        .filter(|p| !p.is_empty())
                        .unwrap_or(&t.url)
                )
            },
        )
    };
    let mut folded = Vec::new();
    let mut named: Vec<(String, GroupTally)> = Vec::new();
    for group in groups {
        match group.target {
            Some(id) => named.push((name(id), group)),
            None => folded.push(group),
        }
    }
    named.sort_by(|(a_name, a), (b_name, b)| {
        (b.replay.requests, b.original.requests)
            .cmp(&(a.replay.requests, a.original.requests))
            .then_with(|| a_name.cmp(b_name))
    });
    let rest_groups = named.len().saturating_sub(REPLAY_TOP_GROUPS) + folded_groups;
    let mut rest = GroupTally::new(None);
    for (index, (group_name, group)) in named.into_iter().enumerate() {
        if index < REPLAY_TOP_GROUPS {
            figures.groups.push(group.figures(group_name));
        } else {
            rest.original.merge(&group.original);
            rest.replay.merge(&group.replay);
        }
    }
    for group in &folded {
        rest.original.merge(&group.original);
        rest.replay.merge(&group.replay);
    }
    if rest_groups > 0 {
        figures.rest = Some(rest.figures(rest_name(rest_groups)));
    }
}

fn rest_name(groups: usize) -> String {
    match groups {
        1 => "1 more group".to_owned(),
        n => format!("{n} more groups"),
    }
}

impl GroupTally {
    fn figures(&self, name: String) -> GroupFigures {
        GroupFigures {
            name,
            requests: self.replay.requests.max(self.original.requests),
            original_p99_ns: self.original.p99_ns(),
            replay_p99_ns: self.replay.p99_ns(),
            original_5xx: self.original.server_error_share(),
            replay_5xx: self.replay.server_error_share(),
        }
    }
}

/// The `replays` entries of every input's end block for the attack `name`, summed
/// (shards of one replay each read part of the log).
fn merged_log(summaries: &[SourceSummary], name: &str) -> Option<ReplayEnd> {
    let mut merged: Option<ReplayEnd> = None;
    for summary in summaries {
        let Some(end) = &summary.end else { continue };
        for entry in &end.replays {
            let named = summary.header.attacks.get(usize::from(entry.attack));
            if named.is_none_or(|a| a.name != name) {
                continue;
            }
            let sum = merged.get_or_insert_with(|| ReplayEnd {
                attack: entry.attack,
                ..ReplayEnd::default()
            });
            sum.lines += entry.lines;
            sum.requests += entry.requests;
            sum.bad_lines += entry.bad_lines;
            sum.filtered += entry.filtered;
            sum.reordered += entry.reordered;
            sum.max_reorder_ns = sum.max_reorder_ns.max(entry.max_reorder_ns);
            sum.loops = sum.loops.max(entry.loops);
            let room = MAX_BAD_EXAMPLES.saturating_sub(sum.bad_examples.len());
            sum.bad_examples
                .extend(entry.bad_examples.iter().take(room).cloned());
        }
    }
    merged
}

/// Status classes: 2xx, 3xx, 4xx, 5xx, none (0: a transport error, or not logged),
/// other (1xx, 600 and up).
const CLASSES: usize = 6;
const TRANSPORT: usize = 4;

fn class_of(status: u16) -> usize {
    match status {
        0 => TRANSPORT,
        200..=299 => 0,
        300..=399 => 1,
        400..=499 => 2,
        500..=599 => 3,
        _ => 5,
    }
}

/// One replay attack against its original; see the module documentation.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayFigures {
    /// The attack's name.
    pub attack: String,
    /// The logs read, their format and the speed (the header's `replay`); `None` when
    /// the header had none but the file holds originals.
    pub info: Option<ReplayInfo>,
    /// How reading the logs went (the end blocks' `replays`, merged); `None` for a run
    /// that did not end in an orderly way.
    pub log: Option<ReplayEnd>,
    /// What the log said: requests, rate on the replay's time axis, status mix and
    /// latency as logged (`None` where the log had none).
    pub original: SideFigures,
    /// What the replay got.
    pub replay: SideFigures,
    /// The busiest path groups, most requests first.
    pub groups: Vec<GroupFigures>,
    /// Every other group as one line, named `N more groups`.
    pub rest: Option<GroupFigures>,
}

/// One side of a replay: the original or the replay.
#[derive(Debug, Clone, PartialEq)]
pub struct SideFigures {
    /// Requests: logged originals, or records.
    pub requests: u64,
    /// Per second over the side's span: logged requests over their (rebased, sped up)
    /// intended times, records over their send times; `None` for fewer than two
    /// distinct times.
    pub rate_per_sec: Option<f64>,
    /// The status mix; `None` for an original whose log has no status.
    pub status: Option<StatusMix>,
    /// Latency percentiles; `None` for an original whose log has no latency.
    pub latency: Option<LatencyFigures>,
}

/// Requests by status class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatusMix {
    /// 2xx, 3xx, 4xx, 5xx, transport errors (status 0), other statuses.
    pub counts: [u64; CLASSES],
    /// The original's: its status 0 means "not logged", not a transport error, and
    /// its shares are of the requests with a status.
    pub logged: bool,
}

impl StatusMix {
    /// The classes' row names, in `counts` order.
    pub const NAMES: [&'static str; CLASSES] = [
        "2xx",
        "3xx",
        "4xx",
        "5xx",
        "transport errors",
        "other status",
    ];
    /// The classes' JSON keys, in `counts` order.
    pub const KEYS: [&'static str; CLASSES] = ["2xx", "3xx", "4xx", "5xx", "transport", "other"];

    /// The requests the shares are of: all of a replay's, the logged ones with a
    /// status of an original's.
    pub fn total(&self) -> u64 {
        let all: u64 = self.counts.iter().sum();
        if self.logged {
            all - self.counts[TRANSPORT]
        } else {
            all
        }
    }

    /// Class `index`'s count, `None` for an original's transport errors (a log does
    /// not say).
    pub fn count(&self, index: usize) -> Option<u64> {
        (!(self.logged && index == TRANSPORT)).then(|| self.counts[index])
    }

    /// Class `index`'s share of [`StatusMix::total`].
    pub fn share(&self, index: usize) -> Option<f64> {
        let total = self.total();
        self.count(index)
            .filter(|_| total > 0)
            .map(|count| count as f64 / total as f64)
    }
}

/// Latency percentiles (nearest rank, as every report's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LatencyFigures {
    /// 50th percentile, nanoseconds.
    pub p50_ns: u64,
    /// 90th percentile, nanoseconds.
    pub p90_ns: u64,
    /// 99th percentile, nanoseconds.
    pub p99_ns: u64,
    /// The largest, nanoseconds.
    pub max_ns: u64,
}

impl LatencyFigures {
    /// The rows' names, in [`LatencyFigures::values`] order.
    pub const NAMES: [&'static str; 4] =
        ["latency p50", "latency p90", "latency p99", "latency max"];

    /// p50, p90, p99 and max, nanoseconds.
    pub fn values(&self) -> [u64; 4] {
        [self.p50_ns, self.p90_ns, self.p99_ns, self.max_ns]
    }
}

/// One path group (a replay's target: `GET /search`) of a replay and its original.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupFigures {
    /// `METHOD path`, or `N more groups` for the rest.
    pub name: String,
    /// Requests: replayed (or logged, when more were).
    pub requests: u64,
    /// The original's p99 latency, when logged.
    pub original_p99_ns: Option<u64>,
    /// The replay's p99 latency.
    pub replay_p99_ns: Option<u64>,
    /// The original's share of 5xx among the requests logged with a status.
    pub original_5xx: Option<f64>,
    /// The replay's share of 5xx.
    pub replay_5xx: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use record::{AttackInfo, RunEnd, TargetInfo};

    fn tables(replay: bool, targets: u32) -> RunTables {
        RunTables {
            attacks: vec![
                AttackInfo {
                    name: "incident".to_owned(),
                    replay: replay.then(ReplayInfo::default),
                    ..AttackInfo::default()
                },
                AttackInfo {
                    name: "plain".to_owned(),
                    ..AttackInfo::default()
                },
            ],
            targets: (0..targets)
                .map(|n| TargetInfo {
                    method: "GET".to_owned(),
                    url: format!("/p/{n}"),
                    ..TargetInfo::default()
                })
                .collect(),
            errors: Vec::new(),
        }
    }

    fn record(attack: u16, target: u32, n: u64, status: u16) -> Record {
        Record {
            attack,
            target,
            seq: n,
            intended_unix_ns: n * 1_000_000,
            latency_ns: 1_000 + n,
            status,
            ..Record::default()
        }
    }

    fn logged(attack: u16, target: u32, n: u64, status: u16, latency: Option<u64>) -> Logged {
        Logged {
            attack,
            target,
            seq: n,
            intended_unix_ns: n * 1_000_000,
            status,
            latency_ns: latency,
            bytes: None,
        }
    }

    #[test]
    fn statuses_fall_in_their_classes() {
        let rows = [
            (0, TRANSPORT),
            (200, 0),
            (299, 0),
            (304, 1),
            (404, 2),
            (503, 3),
            (101, 5),
            (600, 5),
            (999, 5),
        ];
        for (status, want) in rows {
            assert_eq!(class_of(status), want, "{status}");
        }
    }

    #[test]
    fn an_original_has_no_transport_errors_and_shares_of_its_logged_statuses() {
        let mix = |logged| StatusMix {
            counts: [6, 1, 1, 2, 10, 0],
            logged,
        };
        let rows: [(bool, usize, Option<u64>, Option<f64>); 4] = [
            (true, 0, Some(6), Some(0.6)),
            (true, TRANSPORT, None, None),
            (false, 0, Some(6), Some(0.3)),
            (false, TRANSPORT, Some(10), Some(0.5)),
        ];
        for (logged, index, count, share) in rows {
            let mix = mix(logged);
            assert_eq!(mix.count(index), count, "{logged} {index}");
            assert_eq!(mix.share(index), share, "{logged} {index}");
        }
        let empty = StatusMix {
            counts: [0; CLASSES],
            logged: false,
        };
        assert_eq!(empty.share(0), None, "no requests, no share");
    }

    #[test]
    fn only_replay_attacks_are_tallied() {
        // (header says replay, originals logged, figures expected)
        let rows = [
            (true, true, 1),
            (true, false, 1),
            (false, true, 1),
            (false, false, 0),
        ];
        for (declared, with_logged, want) in rows {
            let tables = tables(declared, 2);
            let mut replays = Replays::new();
            let records: Vec<Record> = (0..10).map(|n| record(0, 0, n, 200)).collect();
            let plain: Vec<Record> = (0..10).map(|n| record(1, 1, n, 200)).collect();
            if with_logged {
                let originals: Vec<Logged> =
                    (0..10).map(|n| logged(0, 0, n, 200, Some(5))).collect();
                replays.add_logged(&originals, &tables);
            }
            replays.add_records(&records, &tables);
            replays.add_records(&plain, &tables);
            let figures = replays.close(&[], &tables);
            assert_eq!(figures.len(), want, "{declared} {with_logged}");
            if let Some(figures) = figures.first() {
                assert_eq!(figures.attack, "incident");
                assert_eq!(figures.replay.requests, 10, "the plain attack is left out");
                let original = &figures.original;
                assert_eq!(original.requests, if with_logged { 10 } else { 0 });
                assert_eq!(original.latency.is_some(), with_logged);
            }
        }
    }

    #[test]
    fn a_log_without_status_or_latency_says_nothing_of_them() {
        let tables = tables(true, 1);
        let mut replays = Replays::new();
        let originals: Vec<Logged> = (0..5).map(|n| logged(0, 0, n, 0, None)).collect();
        replays.add_logged(&originals, &tables);
        let figures = replays.close(&[], &tables).remove(0);
        assert_eq!(figures.original.status, None);
        assert_eq!(figures.original.latency, None);
        assert_eq!(figures.original.rate_per_sec, Some(5.0 / 0.004));
        let group = &figures.groups[0];
        assert_eq!((group.original_p99_ns, group.original_5xx), (None, None));
    }

    #[test]
    fn groups_past_the_top_make_one_line_and_past_the_cap_share_a_tally() {
        let groups = MAX_REPLAY_GROUPS as u32 + 5;
        let tables = tables(true, groups);
        let mut replays = Replays::new();
        // Group g gets g + 1 requests, so the last ones are the busiest; every request
        // of the busiest group fails.
        let mut records = Vec::new();
        for target in 0..groups {
            let status = if target == groups - 1 { 503 } else { 200 };
            records.extend((0..=u64::from(target)).map(|n| record(0, target, n, status)));
        }
        replays.add_records(&records, &tables);
        let figures = replays.close(&[], &tables).remove(0);
        assert_eq!(figures.groups.len(), REPLAY_TOP_GROUPS);
        // The folded groups (the last 5 seen, the busiest) are in the rest, not the top.
        let top = &figures.groups[0];
        assert_eq!(top.name, format!("GET /p/{}", MAX_REPLAY_GROUPS - 1));
        assert_eq!(top.replay_5xx, Some(0.0));
        let rest = figures.rest.expect("a rest line");
        let shown = figures.groups.iter().map(|g| g.requests).sum::<u64>();
        assert_eq!(rest.requests + shown, records.len() as u64);
        assert_eq!(
            rest.name,
            format!("{} more groups", groups as usize - REPLAY_TOP_GROUPS)
        );
        assert!(rest.replay_5xx.is_some_and(|share| share > 0.0));
    }

    #[test]
    fn the_logs_of_shards_add_up_by_attack_name() {
        let summary = |attack_names: &[&str], entries: Vec<ReplayEnd>| SourceSummary {
            header: record::RunHeader {
                attacks: attack_names
                    .iter()
                    .map(|name| AttackInfo {
                        name: (*name).to_owned(),
                        ..AttackInfo::default()
                    })
                    .collect(),
                ..record::RunHeader::default()
            },
            end: Some(RunEnd {
                replays: entries,
                ..RunEnd::default()
            }),
            ..empty_summary()
        };
        let entry = |attack, lines, examples: usize| ReplayEnd {
            attack,
            lines,
            requests: lines - 1,
            bad_lines: 1,
            bad_examples: (0..examples).map(|n| format!("a.log:{n}: bad")).collect(),
            reordered: 2,
            max_reorder_ns: lines,
            ..ReplayEnd::default()
        };
        let summaries = [
            summary(&["incident"], vec![entry(0, 100, 4)]),
            // The other shard lists the attack second, beside another replay.
            summary(
                &["other", "incident"],
                vec![entry(0, 7, 1), entry(1, 50, 4)],
            ),
        ];
        let log = merged_log(&summaries, "incident").unwrap();
        assert_eq!((log.lines, log.requests, log.bad_lines), (150, 148, 2));
        assert_eq!(log.skipped(), 0);
        assert_eq!((log.reordered, log.max_reorder_ns), (4, 100));
        assert_eq!(log.bad_examples.len(), MAX_BAD_EXAMPLES);
        assert_eq!(merged_log(&summaries, "missing"), None);
    }

    fn empty_summary() -> SourceSummary {
        SourceSummary {
            name: "run.llr".to_owned(),
            format: record::InputFormat::Binary,
            header: record::RunHeader::default(),
            stats: Vec::new(),
            end: None,
            torn: None,
            records: 0,
            samples: record::SampleSummary::default(),
            logged: 0,
        }
    }
}
