//! Flow checks: how often each check of each step passed and failed.
//!
//! A record of a target with checks (a flow step: [`record::TargetInfo::checks`])
//! counts once for each of its target's checks: a failure when the check's bit of
//! [`Record::checks_failed`] is set (a request without an answer has them all set), a
//! pass otherwise. Records of targets without checks count nowhere.
//!
//! Counting is per (attack, target), since two flows may share a step's target and are
//! told apart by their attack. [`CheckedTargets`] is kept once per report, beside the
//! tables: each target's index among the targets with checks. Each group's
//! [`CheckCounts`] counts into arrays indexed by that index and the check's, so a
//! record costs a lookup and an add per failed check, and a group allocates only when it
//! first sees a step (a `-by=target` report of 10,000 plain targets holds no arrays).

use record::{Record, RunTables, TargetInfo};

/// Checks one target may have: one bit each in [`Record::checks_failed`].
const MAX_CHECKS: usize = Record::MAX_CHECKS;

/// A target with checks: its index among them and how many it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckedTarget {
    index: u32,
    checks: u8,
}

/// Which targets have checks, kept up to date with the run's tables (which only grow).
#[derive(Debug, Clone, Default)]
pub struct CheckedTargets {
    /// By target id.
    of_target: Vec<Option<CheckedTarget>>,
    /// Targets with checks so far.
    count: u32,
}

impl CheckedTargets {
    /// Takes in the targets added to `tables` since the last call.
    pub fn update(&mut self, tables: &RunTables) {
        for target in tables.targets.iter().skip(self.of_target.len()) {
            let checked = (!target.checks.is_empty()).then(|| {
                self.count += 1;
                CheckedTarget {
                    index: self.count - 1,
                    // More than 31 checks have no bits; the engine refuses them.
                    checks: target.checks.len().min(MAX_CHECKS) as u8,
                }
            });
            self.of_target.push(checked);
        }
    }

    /// No target has checks (every run without flows): nothing to count.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The target's place among those with checks, if it has any.
    #[inline]
    pub fn get(&self, target: u32) -> Option<CheckedTarget> {
        self.of_target.get(target as usize).copied().flatten()
    }
}

/// One attack's records of one target with checks.
#[derive(Debug, Clone)]
struct Tally {
    attack: u16,
    target: u32,
    checks: u8,
    requests: u64,
    /// By check index.
    fails: [u64; MAX_CHECKS],
}

/// Passes and failures of every check, by attack and target.
#[derive(Debug, Clone, Default)]
pub struct CheckCounts {
    /// By [`CheckedTarget`] index, then one per attack that sent to it (nearly always one).
    by_target: Vec<Vec<Tally>>,
}

impl CheckCounts {
    /// Counts a record of a target with checks.
    #[inline]
    pub fn add(&mut self, record: &Record, target: CheckedTarget) {
        let index = target.index as usize;
        if index >= self.by_target.len() {
            self.by_target.resize_with(index + 1, Vec::new);
        }
        let tallies = &mut self.by_target[index];
        let slot = match tallies.iter().position(|t| t.attack == record.attack) {
            Some(slot) => slot,
            None => {
                tallies.push(Tally {
                    attack: record.attack,
                    target: record.target,
                    checks: target.checks,
                    requests: 0,
                    fails: [0; MAX_CHECKS],
                });
                tallies.len() - 1
            }
        };
        let tally = &mut tallies[slot];
        tally.requests += 1;
        let mut failed = record.checks_failed & ((1u32 << target.checks) - 1);
        while failed != 0 {
            tally.fails[failed.trailing_zeros() as usize] += 1;
            failed &= failed - 1;
        }
    }

    /// Each check's figures, by attack, then target (step order), then check order.
    pub fn close(&self, tables: &RunTables) -> Vec<CheckFigures> {
        let mut tallies: Vec<&Tally> = self.by_target.iter().flatten().collect();
        tallies.sort_by_key(|t| (t.attack, t.target));
        let several_attacks = tables.attacks.len() > 1;
        let mut checks = Vec::new();
        for tally in tallies {
            let Some(target) = tables.targets.get(tally.target as usize) else {
                continue;
            };
            let scenario = tables
                .attacks
                .get(usize::from(tally.attack))
                .map_or_else(String::new, |a| a.name.clone());
            let step = step_label(target);
            for (check, &fails) in target
                .checks
                .iter()
                .zip(&tally.fails)
                .take(usize::from(tally.checks))
            {
                let name = if several_attacks {
                    format!("{scenario}: {step}: {check}")
                } else {
                    format!("{step}: {check}")
                };
                checks.push(CheckFigures {
                    name,
                    scenario: scenario.clone(),
                    step: step.clone(),
                    check: check.clone(),
                    passes: tally.requests - fails,
                    fails,
                });
            }
        }
        checks
    }
}

/// What names a target's step in reports: the flow step's name, or `METHOD URL` for a
/// target that is not a step (as `-by=target` names it).
pub(crate) fn step_label(target: &TargetInfo) -> String {
    match &target.step {
        Some(step) => step.clone(),
        None => format!("{} {}", target.method, target.url),
    }
}

/// One check's passes and failures in a report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckFigures {
    /// The full name as reports print it: `STEP: CHECK`, after `SCENARIO: ` when the
    /// input has several attacks (`shop: login: status 200`).
    pub name: String,
    /// The attack (flow) that ran the step.
    pub scenario: String,
    /// The step's name (`METHOD URL` for a target with checks that is not a step).
    pub step: String,
    /// The check's name.
    pub check: String,
    /// Answers that passed it.
    pub passes: u64,
    /// Answers that failed it, and requests that got no answer.
    pub fails: u64,
}

impl CheckFigures {
    /// Passes over passes and fails.
    pub fn pass_rate(&self) -> f64 {
        self.passes as f64 / (self.passes + self.fails).max(1) as f64
    }

    /// `STEP: CHECK`: the name a plan's `[slo.checks]` judges, each attack apart.
    pub fn step_check(&self) -> String {
        format!("{}: {}", self.step, self.check)
    }
}

/// All checks together, each tallied by `tally` as (passes, fails): the passes, the
/// runs, and the worst check: the lowest pass rate of those that failed (the most
/// failures on a tie). `None` when no check ran. The live view and `plot`'s checks
/// panel both say it through this.
pub fn checks_overall<T>(
    checks: &[T],
    tally: impl Fn(&T) -> (u64, u64),
) -> Option<(u64, u64, Option<&T>)> {
    let (passed, runs) = (checks.iter().map(&tally)).fold((0, 0), |(p, r), (passes, fails)| {
        (p + passes, r + passes + fails)
    });
    if runs == 0 {
        return None;
    }
    // Compared as passed_a / runs_a < passed_b / runs_b, exactly.
    let worst = (checks.iter().map(|c| (c, tally(c))))
        .filter(|(_, (_, fails))| *fails > 0)
        .min_by(|(_, (pa, fa)), (_, (pb, fb))| {
            let left = u128::from(*pa) * u128::from(pb + fb);
            let right = u128::from(*pb) * u128::from(pa + fa);
            left.cmp(&right).then(fb.cmp(fa))
        })
        .map(|(c, _)| c);
    Some((passed, runs, worst))
}

#[cfg(test)]
mod tests {
    use super::*;
    use record::AttackInfo;

    fn target(step: Option<&str>, checks: &[&str]) -> TargetInfo {
        TargetInfo {
            method: "GET".to_owned(),
            url: "http://x/".to_owned(),
            step: step.map(str::to_owned),
            checks: checks.iter().map(|&c| c.to_owned()).collect(),
        }
    }

    fn tables(attacks: &[&str]) -> RunTables {
        RunTables {
            attacks: attacks
                .iter()
                .map(|&name| AttackInfo {
                    name: name.to_owned(),
                    ..AttackInfo::default()
                })
                .collect(),
            targets: vec![
                target(None, &[]),
                target(Some("login"), &["status 200", "json $.token exists"]),
                target(Some("list"), &["status 200"]),
            ],
            errors: Vec::new(),
        }
    }

    fn record(attack: u16, target: u32, checks_failed: u32) -> Record {
        Record {
            attack,
            target,
            checks_failed,
            ..Record::default()
        }
    }

    /// (name, passes, fails) of each check after counting `records`.
    fn counted(tables: &RunTables, records: &[Record]) -> Vec<(String, u64, u64)> {
        let mut checked = CheckedTargets::default();
        checked.update(tables);
        let mut counts = CheckCounts::default();
        for record in records {
            if let Some(target) = checked.get(record.target) {
                counts.add(record, target);
            }
        }
        counts
            .close(tables)
            .into_iter()
            .map(|c| (c.name, c.passes, c.fails))
            .collect()
    }

    #[test]
    fn counts_each_check_of_each_step() {
        let owned = |rows: &[(&str, u64, u64)]| -> Vec<(String, u64, u64)> {
            rows.iter().map(|&(n, p, f)| (n.to_owned(), p, f)).collect()
        };
        let failed = Record::FAILED_BY_FLOW;
        /// (case, attacks, records, checks)
        type Row<'a> = (&'a str, &'a [&'a str], Vec<Record>, Vec<(String, u64, u64)>);
        let rows: Vec<Row<'_>> = vec![
            ("no records", &["shop"], vec![], vec![]),
            (
                "plain targets count nowhere",
                &["shop"],
                vec![record(0, 0, 0), record(0, 0, 0b1)],
                vec![],
            ),
            (
                "a set bit fails its check, the rest pass",
                &["shop"],
                vec![
                    record(0, 1, 0),
                    record(0, 1, 0b10 | failed),
                    record(0, 1, 0b11 | failed),
                    record(0, 2, 0),
                ],
                owned(&[
                    ("login: status 200", 2, 1),
                    ("login: json $.token exists", 1, 2),
                    ("list: status 200", 1, 0),
                ]),
            ),
            (
                "in step order whatever the records' order",
                &["shop"],
                vec![record(0, 2, 0b1), record(0, 1, 0)],
                owned(&[
                    ("login: status 200", 1, 0),
                    ("login: json $.token exists", 1, 0),
                    ("list: status 200", 0, 1),
                ]),
            ),
            (
                "bits beyond the target's checks and the flow's bit are no checks",
                &["shop"],
                vec![record(0, 2, 0b110 | failed)],
                owned(&[("list: status 200", 1, 0)]),
            ),
            (
                "several attacks name theirs, each counted apart",
                &["shop", "admin"],
                vec![record(1, 2, 0b1), record(0, 2, 0), record(1, 2, 0)],
                owned(&[
                    ("shop: list: status 200", 1, 0),
                    ("admin: list: status 200", 1, 1),
                ]),
            ),
        ];
        for (case, attacks, records, want) in rows {
            assert_eq!(counted(&tables(attacks), &records), want, "{case}");
        }
    }

    #[test]
    fn targets_are_taken_in_as_the_tables_grow() {
        let mut tables = tables(&["shop"]);
        let mut checked = CheckedTargets::default();
        assert!(checked.is_empty());
        checked.update(&tables);
        let list = checked.get(2);
        assert_eq!(
            (checked.get(0), checked.get(1).map(|t| t.checks)),
            (None, Some(2))
        );
        tables.targets.push(target(Some("item"), &["status 200"]));
        checked.update(&tables);
        assert_eq!(checked.get(2), list, "an index never changes");
        assert_eq!(checked.get(3).map(|t| t.index), Some(2));
        assert_eq!(checked.get(4), None, "an id not yet defined");
        assert!(!checked.is_empty());
    }

    #[test]
    fn a_target_with_checks_but_no_step_is_named_by_its_request() {
        let tables = RunTables {
            targets: vec![target(None, &["status 200"])],
            ..tables(&["shop"])
        };
        let got = counted(&tables, &[record(0, 0, 0)]);
        assert_eq!(got, [("GET http://x/: status 200".to_owned(), 1, 0)]);
    }

    #[test]
    fn pass_rates_and_names() {
        let figures = CheckFigures {
            name: "shop: login: status 200".to_owned(),
            scenario: "shop".to_owned(),
            step: "login".to_owned(),
            check: "status 200".to_owned(),
            passes: 998,
            fails: 2,
        };
        assert_eq!(figures.pass_rate(), 0.998);
        assert_eq!(figures.step_check(), "login: status 200");
    }
}
