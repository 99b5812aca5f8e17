//! [`ReplayGather`]: what a replay (`attack -replay`) adds to the page's rows, gathered
//! beside the rest (`gather.rs`; the "Replay vs original" panel reads the summary's
//! tally, `report::Measure`): each interval's count of logged originals
//! (the original's rate, [`Bins::add_logged`]), and each interval's original and
//! replay p99 ([`Bins::set_replay_p99`]).
//!
//! Records come in send-time order, but logged originals in file order, which is
//! about completion order: an interval's originals keep arriving for as long as its
//! slowest request took. So the p99s are not closed with the next interval, as the
//! rows' percentiles are, but once the intervals seen have moved [`HORIZON_NS`] (at
//! most 64 intervals) past them; an original later still opens its interval again and the row keeps the
//! higher p99. Memory: one small distribution pair per interval of the horizon, and
//! the originals that come before the first record fixes the time origin (those the
//! send-time merge holds back, a block or so).

use std::collections::BTreeMap;

use record::{Logged, Record, RunTables};
use report::Distribution;

use crate::bins::Bins;

/// How far behind the latest interval seen an interval stays open...
pub const HORIZON_NS: u64 = 60_000_000_000;
/// ...but never more intervals than this (a fine `-every`), so the open ones stay a few
/// MiB at most.
const MAX_OPEN_INTERVALS: u64 = 64;
/// Values an open interval's distribution keeps exactly, each side.
const OPEN_EXACT_LIMIT: usize = 1 << 10;

/// A replay's originals and records on the page; see the module documentation.
#[derive(Clone, Default)]
pub struct ReplayGather {
    /// Per merged attack id: a replay's (the header says so, or originals name it).
    replay_attacks: Vec<bool>,
    /// Originals read before the first record fixed the origin.
    early: Vec<Logged>,
    open: BTreeMap<u64, OpenInterval>,
    latest_index: u64,
}

#[derive(Clone)]
struct OpenInterval {
    original: Distribution,
    replay: Distribution,
}

impl Default for OpenInterval {
    fn default() -> Self {
        OpenInterval {
            original: Distribution::with_exact_limit(OPEN_EXACT_LIMIT),
            replay: Distribution::with_exact_limit(OPEN_EXACT_LIMIT),
        }
    }
}

impl OpenInterval {
    fn p99s(&self) -> (Option<u64>, Option<u64>) {
        let p99 = |d: &Distribution| (d.count() > 0).then(|| d.quantile_so_far(0.99));
        (p99(&self.original), p99(&self.replay))
    }
}

impl ReplayGather {
    /// Adds records in send-time order; `origin_unix_ns` is the page's time zero.
    pub fn add_records(
        &mut self,
        records: &[Record],
        tables: &RunTables,
        origin_unix_ns: u64,
        bins: &mut Bins,
    ) {
        let mut any = false;
        for record in records {
            if !self.is_replay_attack(record.attack, tables) {
                continue;
            }
            let index = self.index(record.intended_unix_ns, origin_unix_ns, bins);
            self.open
                .entry(index)
                .or_default()
                .replay
                .add(record.latency_ns);
            any = true;
        }
        if any {
            self.close_behind(bins, false);
        }
    }

    /// Adds originals (any order); held until `origin_unix_ns` is known.
    pub fn add_logged(&mut self, logged: &[Logged], origin_unix_ns: Option<u64>, bins: &mut Bins) {
        if logged.is_empty() {
            return;
        }
        for entry in logged {
            self.mark_replay(entry.attack);
        }
        let Some(origin) = origin_unix_ns else {
            self.early.extend_from_slice(logged);
            return;
        };
        let early = std::mem::take(&mut self.early);
        for entry in early.iter().chain(logged) {
            let intended_ns = entry.intended_unix_ns.saturating_sub(origin);
            bins.add_logged(intended_ns);
            let index = self.index(entry.intended_unix_ns, origin, bins);
            let open = self.open.entry(index).or_default();
            if let Some(latency_ns) = entry.latency_ns {
                open.original.add(latency_ns);
            }
        }
        self.close_behind(bins, false);
    }

    fn is_replay_attack(&mut self, attack: u16, tables: &RunTables) -> bool {
        let id = usize::from(attack);
        if self.replay_attacks.get(id).copied().unwrap_or(false) {
            return true;
        }
        let declared = tables.attacks.get(id).is_some_and(|a| a.replay.is_some());
        if declared {
            self.mark_replay(attack);
        }
        declared
    }

    fn mark_replay(&mut self, attack: u16) {
        let id = usize::from(attack);
        if self.replay_attacks.len() <= id {
            self.replay_attacks.resize(id + 1, false);
        }
        self.replay_attacks[id] = true;
    }

    fn index(&mut self, intended_unix_ns: u64, origin_unix_ns: u64, bins: &Bins) -> u64 {
        let index = intended_unix_ns.saturating_sub(origin_unix_ns) / bins.every_ns();
        self.latest_index = self.latest_index.max(index);
        index
    }

    /// Writes the p99s of the intervals past the horizon (every one with `all`) into
    /// their rows and forgets them.
    fn close_behind(&mut self, bins: &mut Bins, all: bool) {
        let horizon = (HORIZON_NS / bins.every_ns()).clamp(2, MAX_OPEN_INTERVALS);
        let cut = if all {
            u64::MAX
        } else {
            self.latest_index.saturating_sub(horizon)
        };
        while let Some(entry) = self.open.first_entry() {
            if *entry.key() >= cut {
                break;
            }
            let (index, open) = entry.remove_entry();
            let (original, replay) = open.p99s();
            bins.set_replay_p99(index, original, replay);
        }
    }

    /// For a live copy: the p99s of the open intervals so far, written into `bins`
    /// (a copy), leaving this gather as it was.
    fn fill_open(&self, bins: &mut Bins) {
        for (&index, open) in &self.open {
            let (original, replay) = open.p99s();
            bins.set_replay_p99(index, original, replay);
        }
    }

    /// The live page's rows ([`Bins::coarse_copy`] of `bins`), with the p99s of the
    /// intervals still open so far.
    pub fn live_bins(&self, bins: &Bins, max_rows: usize) -> Bins {
        if self.open.is_empty() {
            return bins.coarse_copy(max_rows);
        }
        let mut filled = bins.clone();
        self.fill_open(&mut filled);
        filled.coarse_copy(max_rows)
    }

    /// A copy for a live page, drawn and never fed: without the open intervals
    /// ([`ReplayGather::live_bins`] put them in the rows).
    pub fn live_copy(&self) -> ReplayGather {
        ReplayGather {
            replay_attacks: self.replay_attacks.clone(),
            early: Vec::new(),
            open: BTreeMap::new(),
            latest_index: self.latest_index,
        }
    }

    /// Closes every interval into `bins`.
    pub fn finish(mut self, bins: &mut Bins) {
        // Without any record there is no origin: the early originals stay undrawn.
        self.close_behind(bins, true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use record::{AttackInfo, ReplayInfo, TargetInfo};

    const S: u64 = 1_000_000_000;
    const ORIGIN: u64 = 1_700_000_000 * S;

    fn tables() -> RunTables {
        tables_with(true)
    }

    fn tables_with(replay: bool) -> RunTables {
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
            targets: vec![TargetInfo::default()],
            errors: Vec::new(),
        }
    }

    fn record(attack: u16, second: u64, latency_ns: u64) -> Record {
        Record {
            attack,
            intended_unix_ns: ORIGIN + second * S,
            latency_ns,
            status: 200,
            ..Record::default()
        }
    }

    fn original(second: u64, latency_ns: Option<u64>) -> Logged {
        Logged {
            intended_unix_ns: ORIGIN + second * S,
            status: 200,
            latency_ns,
            ..Logged::default()
        }
    }

    /// (second, replay p99, original p99, originals) of every row.
    fn rows(bins: Bins) -> Vec<(u64, Option<u64>, Option<u64>, u64)> {
        bins.finish()
            .iter()
            .map(|r| (r.index, r.replay_p99_ns, r.original_p99_ns, r.logged))
            .collect()
    }

    #[test]
    fn each_interval_gets_both_p99s_whatever_order_the_originals_come_in() {
        let tables = tables();
        let (mut gather, mut bins) = (ReplayGather::default(), Bins::new(S));
        // Originals read before any record: held until the origin is known.
        gather.add_logged(&[original(1, Some(900))], None, &mut bins);
        let records = [record(0, 0, 10), record(0, 1, 20), record(1, 1, 5_000)];
        gather.add_records(&records, &tables, ORIGIN, &mut bins);
        let late = [
            original(0, Some(700)),
            original(1, None),
            original(2, Some(3)),
        ];
        gather.add_logged(&late, Some(ORIGIN), &mut bins);
        gather.finish(&mut bins);
        assert_eq!(
            rows(bins),
            [
                (0, Some(10), Some(700), 1),
                (1, Some(20), Some(900), 2),
                (2, None, Some(3), 1)
            ],
            "the plain attack's 5 µs is in no p99"
        );
    }

    #[test]
    fn intervals_close_past_the_horizon_and_a_straggler_keeps_the_higher_p99() {
        let tables = tables();
        let (mut gather, mut bins) = (ReplayGather::default(), Bins::new(S));
        let horizon_s = HORIZON_NS / S;
        gather.add_records(&[record(0, 0, 10)], &tables, ORIGIN, &mut bins);
        gather.add_records(&[record(0, horizon_s + 1, 10)], &tables, ORIGIN, &mut bins);
        assert_eq!(gather.open.len(), 1, "interval 0 is closed");
        gather.add_records(&[record(0, 0, 50)], &tables, ORIGIN, &mut bins);
        let live = gather.live_bins(&bins, 1_000);
        assert_eq!(
            live.finish()[0].replay_p99_ns,
            Some(50),
            "the live copy sees it"
        );
        gather.finish(&mut bins);
        assert_eq!(bins.finish()[0].replay_p99_ns, Some(50));
    }

    #[test]
    fn a_run_without_replays_adds_nothing() {
        let tables = tables_with(false);
        let (mut gather, mut bins) = (ReplayGather::default(), Bins::new(S));
        gather.add_records(
            &[record(0, 0, 10), record(1, 0, 10)],
            &tables,
            ORIGIN,
            &mut bins,
        );
        gather.add_logged(&[], Some(ORIGIN), &mut bins);
        gather.finish(&mut bins);
        assert!(bins.finish().is_empty());
    }
}
