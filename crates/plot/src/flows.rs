//! [`FlowGather`]: what a run's flows add to the page, gathered record by record beside
//! the rest (`gather.rs`): each check's passes and failures over the run (the checks
//! table, the checks chart's legend; per interval they go to the rows,
//! [`crate::bins::Bins::add_checks`]) and each step's latency distribution (the
//! distribution by step).
//!
//! A record names its attack (the flow) and its target (the step, with its checks in
//! the bit order of `checks_failed`). Each (attack, target) is resolved once, when
//! first seen, into run-wide check ids and a step id; after that a record costs an
//! index into a table of targets, and nothing is allocated. Inputs without flows
//! resolve every target to "plain" and add nothing: their page is what it was.

use std::collections::HashMap;

use record::{Record, RunTables};
use report::{Distribution, GROUP_EXACT_LIMIT, Quantiles};

/// Where a target's records count: its checks' run-wide ids in bit order, and its
/// step's id.
#[derive(Debug, Clone, Default)]
struct Resolved {
    attack: u16,
    target: u32,
    checks: Box<[u32]>,
    step: Option<u32>,
}

/// `targets` slot of a target not seen yet.
const UNSEEN: u32 = u32::MAX;
/// `resolved` entry of every plain target (no step, no checks).
const PLAIN: u32 = 0;

/// One check over the run so far.
#[derive(Debug, Clone)]
struct CheckGather {
    attack: u16,
    step: Option<String>,
    name: String,
    passed: u64,
    failed: u64,
}

/// One step over the run so far.
#[derive(Clone)]
struct StepGather {
    attack: u16,
    name: String,
    latency: Distribution,
}

/// A run's checks and steps; see the module documentation.
#[derive(Clone)]
pub struct FlowGather {
    /// Per target id, its entry in `resolved` (first attack seen with it), or UNSEEN.
    targets: Vec<u32>,
    /// Entry 0 is every plain target's.
    resolved: Vec<Resolved>,
    checks: Vec<CheckGather>,
    steps: Vec<StepGather>,
    /// (attack, step, check) -> id in `checks`: a check shared by targets (inputs
    /// merged, a step's URL varying) counts once.
    check_ids: HashMap<(u16, Option<String>, String), u32>,
    step_ids: HashMap<(u16, String), u32>,
}

impl Default for FlowGather {
    fn default() -> FlowGather {
        FlowGather {
            targets: Vec::new(),
            resolved: vec![Resolved::default()],
            checks: Vec::new(),
            steps: Vec::new(),
            check_ids: HashMap::new(),
            step_ids: HashMap::new(),
        }
    }
}

impl FlowGather {
    /// Counts `record`'s checks and its step's latency; returns its checks' run-wide
    /// ids in bit order (empty for a plain target), for the rows.
    #[inline]
    pub fn add(&mut self, record: &Record, tables: &RunTables) -> &[u32] {
        let index = self.resolve(record, tables);
        let resolved = &self.resolved[index];
        for (bit, &check) in resolved.checks.iter().enumerate() {
            let check = &mut self.checks[check as usize];
            if record.check_failed(bit) {
                check.failed += 1;
            } else {
                check.passed += 1;
            }
        }
        if let Some(step) = resolved.step {
            self.steps[step as usize].latency.add(record.latency_ns);
        }
        &resolved.checks
    }

    /// The `resolved` entry of the record's (attack, target), made on first sight.
    #[inline]
    fn resolve(&mut self, record: &Record, tables: &RunTables) -> usize {
        let target = record.target as usize;
        let slot = self.targets.get(target).copied().unwrap_or(UNSEEN);
        if slot == PLAIN {
            return PLAIN as usize;
        }
        if slot != UNSEEN && self.resolved[slot as usize].attack == record.attack {
            return slot as usize;
        }
        self.resolve_slowly(record, tables, slot)
    }

    /// A target seen for the first time, or under another attack than its first.
    #[cold]
    fn resolve_slowly(&mut self, record: &Record, tables: &RunTables, slot: u32) -> usize {
        let found = self
            .resolved
            .iter()
            .skip(1)
            .position(|r| r.target == record.target && r.attack == record.attack);
        if let Some(position) = found {
            return position + 1;
        }
        // The dictionary defines a target before any record uses it; an id it does
        // not know counts as plain, and is looked up again next time.
        let Some(info) = tables.targets.get(record.target as usize) else {
            return PLAIN as usize;
        };
        let index = if info.step.is_none() && info.checks.is_empty() {
            PLAIN
        } else {
            let checks = info
                .checks
                .iter()
                .take(Record::MAX_CHECKS)
                .map(|name| self.check_id(record.attack, info.step.as_deref(), name))
                .collect();
            let step = (info.step.as_deref()).map(|step| self.step_id(record.attack, step));
            self.resolved.push(Resolved {
                attack: record.attack,
                target: record.target,
                checks,
                step,
            });
            (self.resolved.len() - 1) as u32
        };
        if slot == UNSEEN {
            let target = record.target as usize;
            if self.targets.len() <= target {
                self.targets.resize(target + 1, UNSEEN);
            }
            self.targets[target] = index;
        }
        index as usize
    }

    fn check_id(&mut self, attack: u16, step: Option<&str>, name: &str) -> u32 {
        let key = (attack, step.map(str::to_owned), name.to_owned());
        let checks = &mut self.checks;
        *self.check_ids.entry(key).or_insert_with(|| {
            checks.push(CheckGather {
                attack,
                step: step.map(str::to_owned),
                name: name.to_owned(),
                passed: 0,
                failed: 0,
            });
            (checks.len() - 1) as u32
        })
    }

    fn step_id(&mut self, attack: u16, name: &str) -> u32 {
        let steps = &mut self.steps;
        *self
            .step_ids
            .entry((attack, name.to_owned()))
            .or_insert_with(|| {
                steps.push(StepGather {
                    attack,
                    name: name.to_owned(),
                    // Flows may have many steps: 128 KiB each before the histogram.
                    latency: Distribution::with_exact_limit(GROUP_EXACT_LIMIT),
                });
                (steps.len() - 1) as u32
            })
    }

    /// The checks and steps, named for the page (`tables` names the attacks).
    pub fn finish(self, tables: &RunTables) -> FlowData {
        let attack_name = |attack: u16| {
            tables
                .attacks
                .get(usize::from(attack))
                .map_or("", |a| a.name.as_str())
        };
        let prefix_checks = several(self.checks.iter().map(|c| c.attack));
        let checks = self
            .checks
            .into_iter()
            .map(|check| {
                let mut name = match &check.step {
                    Some(step) => format!("{step}: {}", check.name),
                    None => check.name,
                };
                if prefix_checks {
                    name = format!("{} · {name}", attack_name(check.attack));
                }
                CheckTotal {
                    name,
                    passed: check.passed,
                    failed: check.failed,
                }
            })
            .collect();
        let prefix_steps = several(self.steps.iter().map(|s| s.attack));
        let steps = self
            .steps
            .into_iter()
            .filter(|step| step.latency.count() > 0)
            .map(|step| {
                let name = if prefix_steps {
                    format!("{} · {}", attack_name(step.attack), step.name)
                } else {
                    step.name
                };
                let (requests, max_latency_ns) = (step.latency.count(), step.latency.max());
                StepData {
                    name,
                    requests,
                    max_latency_ns,
                    latency: step.latency.into_quantiles(),
                }
            })
            .collect();
        FlowData { checks, steps }
    }
}

/// Whether `attacks` holds more than one attack: then names say which flow.
fn several(mut attacks: impl Iterator<Item = u16>) -> bool {
    let first = attacks.next();
    attacks.any(|a| Some(a) != first)
}

/// What the page draws of a run's flows: empty for a run without any.
pub struct FlowData {
    /// Every check by run-wide id (the ids of [`crate::bins::CheckCount::check`]).
    pub checks: Vec<CheckTotal>,
    /// Every step that had requests, in order of first sight.
    pub steps: Vec<StepData>,
}

/// One check over the whole run.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckTotal {
    /// `STEP: CHECK`, its full name (`FLOW · STEP: CHECK` when several flows have
    /// checks).
    pub name: String,
    pub passed: u64,
    pub failed: u64,
}

impl CheckTotal {
    /// Times it ran.
    pub fn runs(&self) -> u64 {
        self.passed + self.failed
    }
}

/// One step over the whole run.
pub struct StepData {
    /// The step's name (`FLOW · STEP` when several flows have steps).
    pub name: String,
    pub requests: u64,
    pub max_latency_ns: u64,
    pub latency: Quantiles,
}

/// All checks together: their passes and runs, and the worst one: the lowest pass
/// rate of those that failed (the most failures on a tie). `None` when no check ran.
pub fn overall(checks: &[CheckTotal]) -> Option<(u64, u64, Option<&CheckTotal>)> {
    report::checks_overall(checks, |c| (c.passed, c.failed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use record::{AttackInfo, TargetInfo};

    fn target(step: Option<&str>, checks: &[&str]) -> TargetInfo {
        TargetInfo {
            method: "GET".to_owned(),
            url: "http://127.0.0.1/x".to_owned(),
            step: step.map(str::to_owned),
            checks: checks.iter().map(|c| (*c).to_owned()).collect(),
        }
    }

    fn tables(attacks: &[&str], targets: Vec<TargetInfo>) -> RunTables {
        RunTables {
            attacks: attacks
                .iter()
                .map(|name| AttackInfo {
                    name: (*name).to_owned(),
                    ..AttackInfo::default()
                })
                .collect(),
            targets,
            errors: Vec::new(),
        }
    }

    fn record(attack: u16, target: u32, checks_failed: u32, latency_ms: u64) -> Record {
        Record {
            attack,
            target,
            checks_failed,
            latency_ns: latency_ms * 1_000_000,
            status: 200,
            ..Record::default()
        }
    }

    /// (what, attacks, targets, records, checks as (name, passed, failed), steps as
    /// (name, requests), the ids `add` returned per record)
    type Case = (
        &'static str,
        Vec<&'static str>,
        Vec<TargetInfo>,
        Vec<Record>,
        Vec<(&'static str, u64, u64)>,
        Vec<(&'static str, u64)>,
        Vec<Vec<u32>>,
    );

    #[test]
    fn checks_and_steps_count_by_name() {
        const FLOW: u32 = Record::FAILED_BY_FLOW;
        let cases: Vec<Case> = vec![
            (
                "plain targets add nothing",
                vec!["a"],
                vec![target(None, &[])],
                vec![record(0, 0, 0, 1), record(0, 0, FLOW, 1)],
                vec![],
                vec![],
                vec![vec![], vec![]],
            ),
            (
                "a flow: bits by position, bit 31 is no check",
                vec!["shop"],
                vec![
                    target(Some("login"), &["status 200", "json $.token exists"]),
                    target(Some("list"), &["status 200"]),
                ],
                vec![
                    record(0, 0, 0, 5),
                    record(0, 0, 0b10 | FLOW, 7),
                    record(0, 1, 0b1, 9),
                    record(0, 0, 0b11, 3),
                ],
                vec![
                    ("login: status 200", 2, 1),
                    ("login: json $.token exists", 1, 2),
                    ("list: status 200", 0, 1),
                ],
                vec![("login", 3), ("list", 1)],
                vec![vec![0, 1], vec![0, 1], vec![2], vec![0, 1]],
            ),
            (
                "two flows: names say which; one target under two attacks",
                vec!["shop", "admin"],
                vec![target(Some("login"), &["status 200"])],
                vec![record(0, 0, 0, 1), record(1, 0, 1, 1), record(1, 0, 0, 1)],
                vec![
                    ("shop · login: status 200", 1, 0),
                    ("admin · login: status 200", 1, 1),
                ],
                vec![("shop · login", 1), ("admin · login", 2)],
                vec![vec![0], vec![1], vec![1]],
            ),
            (
                "two targets of one step share its checks; an unknown target is plain",
                vec!["shop"],
                vec![
                    target(Some("item"), &["status 200"]),
                    target(Some("item"), &["status 200"]),
                ],
                vec![record(0, 0, 1, 1), record(0, 1, 0, 1), record(0, 9, 1, 1)],
                vec![("item: status 200", 1, 1)],
                vec![("item", 2)],
                vec![vec![0], vec![0], vec![]],
            ),
            (
                "checks without a step",
                vec!["a"],
                vec![target(None, &["status 200"])],
                vec![record(0, 0, 1, 1)],
                vec![("status 200", 0, 1)],
                vec![],
                vec![vec![0]],
            ),
        ];
        for (what, attacks, targets, records, checks, steps, ids) in cases {
            let tables = tables(&attacks, targets);
            let mut gather = FlowGather::default();
            let got_ids: Vec<Vec<u32>> = records
                .iter()
                .map(|r| gather.add(r, &tables).to_vec())
                .collect();
            assert_eq!(got_ids, ids, "{what}");
            let data = gather.finish(&tables);
            let got: Vec<(&str, u64, u64)> = data
                .checks
                .iter()
                .map(|c| (c.name.as_str(), c.passed, c.failed))
                .collect();
            assert_eq!(got, checks, "{what}");
            let got: Vec<(&str, u64)> = data
                .steps
                .iter()
                .map(|s| (s.name.as_str(), s.requests))
                .collect();
            assert_eq!(got, steps, "{what}");
        }
    }

    #[test]
    fn the_worst_check_is_the_lowest_pass_rate_that_failed() {
        let check = |name: &str, passed, failed| CheckTotal {
            name: name.to_owned(),
            passed,
            failed,
        };
        // (checks, overall passes and runs, the worst's name)
        type Want<'a> = Option<(u64, u64, Option<&'a str>)>;
        let rows: Vec<(Vec<CheckTotal>, Want<'_>)> = vec![
            (vec![], None),
            (vec![check("a", 0, 0)], None),
            (vec![check("a", 10, 0)], Some((10, 10, None))),
            (
                vec![check("a", 90, 10), check("b", 5, 5), check("c", 100, 0)],
                Some((195, 210, Some("b"))),
            ),
            // Same rate: the one with more failures.
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
