//! [`CheckTable`]: a run's flow checks counted as records go by, for the live view
//! ([`crate::LiveStats`]: the pass rate so far and the worst failing check) and for
//! Prometheus ([`crate::PrometheusStats`]: `loadlab_checks_total`).
//!
//! The run's target table says which targets are flow steps and what their checks are
//! called (`targets`, as the collector learns them: a target is announced before the
//! first record that uses it). A step's target is resolved into run-wide check ids the
//! first time one of its records arrives (with the record's attack: a check is its
//! flow's, its step's and its name); after that a record costs an index and a few
//! additions, and nothing is allocated. Plain targets, and targets not announced, count
//! nothing, so a run without flows pays one comparison per record.

use std::collections::HashMap;

use record::{Record, TargetInfo};

/// `slots` value of a target not announced yet.
const UNKNOWN: u32 = u32::MAX;
/// `slots` value of a plain target (no step, no checks).
const PLAIN: u32 = 0;

/// One check over the run so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Check {
    /// The record's attack: the flow.
    pub attack: u16,
    /// The step's name; empty for checks of a target that names no step.
    pub step: String,
    /// The check's name, as its step lists it.
    pub name: String,
    pub passed: u64,
    pub failed: u64,
}

impl Check {
    /// Writes `STEP: CHECK`, the check's full name (`CHECK` without a step), over
    /// `out`, reusing its memory.
    pub fn write_full_name(&self, out: &mut String) {
        out.clear();
        if !self.step.is_empty() {
            out.push_str(&self.step);
            out.push_str(": ");
        }
        out.push_str(&self.name);
    }
}

/// A flow step's target, as announced, and its check ids once a record resolved them.
#[derive(Debug, Clone)]
struct StepTarget {
    step: String,
    checks: Vec<String>,
    /// The attack of its first record and the check ids under it.
    resolved: Option<(u16, Box<[u32]>)>,
}

/// Where a record's check ids are: its step target's own, or `others`.
enum Resolved {
    Step(usize),
    Other(usize),
}

/// A run's checks; see the module documentation.
#[derive(Debug, Default)]
pub(crate) struct CheckTable {
    /// Per target id: PLAIN, UNKNOWN, or 1 + its index in `steps`.
    slots: Vec<u32>,
    steps: Vec<StepTarget>,
    /// Targets met under another attack than their first: (attack, target, ids).
    others: Vec<(u16, u32, Box<[u32]>)>,
    checks: Vec<Check>,
    ids: HashMap<(u16, String, String), u32>,
}

impl CheckTable {
    /// Targets from id `first_index` on, as the run's target table grows (the header's
    /// at the start, then any added as the run goes).
    pub fn targets(&mut self, first_index: usize, new: &[TargetInfo]) {
        let end = first_index + new.len();
        if self.slots.len() < end {
            self.slots.resize(end, UNKNOWN);
        }
        for (slot, target) in self.slots[first_index..end].iter_mut().zip(new) {
            *slot = if target.step.is_none() && target.checks.is_empty() {
                PLAIN
            } else {
                self.steps.push(StepTarget {
                    step: target.step.clone().unwrap_or_default(),
                    checks: target
                        .checks
                        .iter()
                        .take(Record::MAX_CHECKS)
                        .cloned()
                        .collect(),
                    resolved: None,
                });
                self.steps.len() as u32
            };
        }
    }

    /// Counts the record's checks, if its target is a step with checks.
    #[inline]
    pub fn add(&mut self, record: &Record) {
        let slot = self.slots.get(record.target as usize).copied();
        let Some(step) = slot.filter(|&s| s != PLAIN && s != UNKNOWN) else {
            return;
        };
        let step = (step - 1) as usize;
        let first = matches!(&self.steps[step].resolved, Some((a, _)) if *a == record.attack);
        let found = if first {
            Resolved::Step(step)
        } else {
            self.resolve(step, record)
        };
        let ids: &[u32] = match found {
            Resolved::Step(step) => self.steps[step].resolved.as_ref().map_or(&[], |r| &r.1),
            Resolved::Other(index) => &self.others[index].2,
        };
        for (bit, &id) in ids.iter().enumerate() {
            let check = &mut self.checks[id as usize];
            if record.check_failed(bit) {
                check.failed += 1;
            } else {
                check.passed += 1;
            }
        }
    }

    /// Where the check ids of step target `step` under the record's attack are, made
    /// the first time.
    #[cold]
    fn resolve(&mut self, step: usize, record: &Record) -> Resolved {
        let (attack, target) = (record.attack, record.target);
        if self.steps[step].resolved.is_some() {
            let known = (self.others.iter()).position(|(a, t, _)| *a == attack && *t == target);
            if let Some(index) = known {
                return Resolved::Other(index);
            }
        }
        let info = &self.steps[step];
        let names: Vec<(String, String)> = info
            .checks
            .iter()
            .map(|check| (info.step.clone(), check.clone()))
            .collect();
        let ids: Box<[u32]> = names
            .into_iter()
            .map(|(step, name)| self.id(attack, step, name))
            .collect();
        if self.steps[step].resolved.is_none() {
            self.steps[step].resolved = Some((attack, ids));
            Resolved::Step(step)
        } else {
            self.others.push((attack, target, ids));
            Resolved::Other(self.others.len() - 1)
        }
    }

    fn id(&mut self, attack: u16, step: String, name: String) -> u32 {
        let checks = &mut self.checks;
        *self
            .ids
            .entry((attack, step.clone(), name.clone()))
            .or_insert_with(|| {
                checks.push(Check {
                    attack,
                    step,
                    name,
                    passed: 0,
                    failed: 0,
                });
                (checks.len() - 1) as u32
            })
    }

    /// Every check that ran, in order of first sight.
    pub fn checks(&self) -> &[Check] {
        &self.checks
    }
}

/// Copies `from`'s counts into `into`, a copy of an earlier state of the same table:
/// entries are only ever appended and their names never change, so only new ones are
/// cloned.
pub(crate) fn copy_counts(into: &mut Vec<Check>, from: &[Check]) {
    into.truncate(from.len());
    for (mine, theirs) in into.iter_mut().zip(from) {
        (mine.passed, mine.failed) = (theirs.passed, theirs.failed);
    }
    let copied = into.len();
    into.extend_from_slice(&from[copied..]);
}

/// All checks so far: passes, runs, and the worst: the lowest pass rate of those that
/// failed (the most failures on a tie). `None` when no check ran.
pub(crate) fn overall(checks: &[Check]) -> Option<(u64, u64, Option<&Check>)> {
    report::checks_overall(checks, |c| (c.passed, c.failed))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(step: Option<&str>, checks: &[&str]) -> TargetInfo {
        TargetInfo {
            method: "GET".to_owned(),
            url: "http://127.0.0.1/".to_owned(),
            step: step.map(str::to_owned),
            checks: checks.iter().map(|c| (*c).to_owned()).collect(),
        }
    }

    fn full_name(check: &Check) -> String {
        let mut name = String::new();
        check.write_full_name(&mut name);
        name
    }

    fn record(attack: u16, target: u32, checks_failed: u32) -> Record {
        Record {
            attack,
            target,
            checks_failed,
            status: 200,
            ..Record::default()
        }
    }

    /// (what, targets announced before the records, records, checks as (attack, full
    /// name, passed, failed), the worst's full name)
    type Case = (
        &'static str,
        Vec<TargetInfo>,
        Vec<Record>,
        Vec<(u16, &'static str, u64, u64)>,
        Option<&'static str>,
    );

    #[test]
    fn counts_each_check_by_flow_step_and_name() {
        const FLOW: u32 = Record::FAILED_BY_FLOW;
        let cases: Vec<Case> = vec![
            (
                "plain targets and unannounced ones count nothing",
                vec![target(None, &[])],
                vec![record(0, 0, 0), record(0, 0, FLOW), record(0, 5, 1)],
                vec![],
                None,
            ),
            (
                "a flow: bits by position, bit 31 is no check",
                vec![
                    target(Some("login"), &["status 200", "has token"]),
                    target(Some("list"), &["status 200"]),
                ],
                vec![
                    record(0, 0, 0),
                    record(0, 0, 0b10 | FLOW),
                    record(0, 1, 0b1),
                    record(0, 1, 0),
                    record(0, 1, 0),
                    record(0, 1, 0),
                ],
                vec![
                    (0, "login: status 200", 2, 0),
                    (0, "login: has token", 1, 1),
                    (0, "list: status 200", 3, 1),
                ],
                Some("login: has token"),
            ),
            (
                "two flows share a step's name, not its checks",
                vec![target(Some("login"), &["status 200"])],
                vec![record(0, 0, 0), record(1, 0, 1), record(1, 0, 0)],
                vec![
                    (0, "login: status 200", 1, 0),
                    (1, "login: status 200", 1, 1),
                ],
                Some("login: status 200"),
            ),
            (
                "two targets of one step count as one",
                vec![target(Some("item"), &["ok"]), target(Some("item"), &["ok"])],
                vec![record(0, 0, 1), record(0, 1, 0)],
                vec![(0, "item: ok", 1, 1)],
                Some("item: ok"),
            ),
        ];
        for (what, targets, records, want, worst) in cases {
            let mut table = CheckTable::default();
            table.targets(0, &targets);
            for record in &records {
                table.add(record);
            }
            let got: Vec<(u16, String, u64, u64)> = table
                .checks()
                .iter()
                .map(|c| (c.attack, full_name(c), c.passed, c.failed))
                .collect();
            let want: Vec<(u16, String, u64, u64)> = want
                .into_iter()
                .map(|(a, n, p, f)| (a, n.to_owned(), p, f))
                .collect();
            assert_eq!(got, want, "{what}");
            let got_worst = overall(table.checks()).and_then(|(_, _, w)| w.map(full_name));
            assert_eq!(got_worst.as_deref(), worst, "{what}");
        }
    }

    #[test]
    fn targets_announced_later_count_from_then_on() {
        let mut table = CheckTable::default();
        table.targets(0, &[target(None, &[])]);
        table.add(&record(0, 1, 1));
        assert!(table.checks().is_empty(), "target 1 is not announced yet");
        table.targets(1, &[target(Some("late"), &["ok"])]);
        table.add(&record(0, 1, 1));
        table.add(&record(0, 0, 1));
        let counts: Vec<(u64, u64)> = table
            .checks()
            .iter()
            .map(|c| (c.passed, c.failed))
            .collect();
        assert_eq!(counts, [(0, 1)]);
    }

    #[test]
    fn the_worst_check_is_the_lowest_pass_rate_that_failed() {
        let check = |name: &str, passed, failed| Check {
            name: name.to_owned(),
            passed,
            failed,
            ..Check::default()
        };
        type Want<'a> = Option<(u64, u64, Option<&'a str>)>;
        let rows: Vec<(Vec<Check>, Want<'_>)> = vec![
            (vec![], None),
            (vec![check("a", 10, 0)], Some((10, 10, None))),
            (
                vec![check("a", 90, 10), check("b", 5, 5), check("c", 100, 0)],
                Some((195, 210, Some("b"))),
            ),
            (
                vec![check("a", 9, 1), check("b", 90, 10)],
                Some((99, 110, Some("b"))),
            ),
        ];
        for (checks, want) in rows {
            let got = overall(&checks)
                .map(|(passed, runs, worst)| (passed, runs, worst.map(|w| w.name.as_str())));
            assert_eq!(got, want, "{checks:?}");
        }
    }
}
