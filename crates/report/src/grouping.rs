//! `-by attack|target|step|method|status|protocol`: [`Groups`] splits records into one
//! [`Metrics`] per group, in a stable order (attacks and targets as the inputs declare
//! them, steps in flow order, methods as targets first name them, statuses by number,
//! protocols by id: HTTP/1.1 first). A method is a gRPC call's `package.Service/Method`
//! or an HTTP target's method and path (`GET /items`, its query left out), so targets
//! that differ only in their host or query share one.
//!
//! A [`Grouper`] keys records and names groups. `-by=step` needs the tables for both:
//! a step is a name that several targets may carry (and a target several attacks may
//! send to), so its key is the attack and the step's id, ids given to step names in
//! target id order from the tables alone ([`StepIds`]): the same input always gets the
//! same groups in the same order, whatever order its records come in. A target that is
//! not a flow step is a group of its own, named `METHOD URL` as `-by=target` names it.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use record::{Protocol, Record, RunTables, TargetInfo};

use crate::checks::{CheckedTargets, step_label};
use crate::metrics::Metrics;

/// What `-by` splits on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupBy {
    /// By attack name.
    Attack,
    /// By target (method and URL).
    Target,
    /// By flow step name (within its attack); a target that is no step by itself.
    Step,
    /// By method: a gRPC call's `package.Service/Method`, an HTTP target's method and
    /// path (the query left out).
    Method,
    /// By status code.
    Status,
    /// By the HTTP version the request went over (a run that mixed HTTP/1.1 and h2).
    Protocol,
}

impl GroupBy {
    /// The flag value that selects this grouping (`attack`, `target`, `step`, `status`,
    /// `protocol`).
    pub fn name(self) -> &'static str {
        match self {
            GroupBy::Attack => "attack",
            GroupBy::Target => "target",
            GroupBy::Step => "step",
            GroupBy::Method => "method",
            GroupBy::Status => "status",
            GroupBy::Protocol => "protocol",
        }
    }
}

impl FromStr for GroupBy {
    type Err = String;

    fn from_str(text: &str) -> Result<GroupBy, String> {
        match text {
            "attack" => Ok(GroupBy::Attack),
            "target" => Ok(GroupBy::Target),
            "step" => Ok(GroupBy::Step),
            "method" => Ok(GroupBy::Method),
            "status" => Ok(GroupBy::Status),
            "protocol" => Ok(GroupBy::Protocol),
            other => Err(format!(
                "unknown group {other:?}: want attack, target, step, method, status or protocol"
            )),
        }
    }
}

impl fmt::Display for GroupBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An attack id, target id, status code or protocol id, by [`GroupBy`]; for a step,
/// its attack id (high 32 bits) and `StepIds` id (low 32 bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupKey(pub u64);

/// Step (or method) ids, from the tables alone: each step name gets the next id the
/// first time a target names it, and each target that is no step an id of its own, in
/// target id order, so ids sort in step order.
#[derive(Debug, Clone, Default)]
struct StepIds {
    /// By target id.
    of_target: Vec<u32>,
    /// By step id: the first target that carries it (its step names the group).
    first_target: Vec<u32>,
    by_name: HashMap<String, u32>,
}

impl StepIds {
    /// Takes in the targets added to `tables` since the last call, each named by
    /// `name_of` (`None`: a group of its own).
    fn update(&mut self, tables: &RunTables, name_of: impl Fn(&TargetInfo) -> Option<String>) {
        for (target, info) in tables.targets.iter().enumerate().skip(self.of_target.len()) {
            let next = self.first_target.len() as u32;
            let id = match name_of(info) {
                Some(name) => *self.by_name.entry(name).or_insert(next),
                None => next,
            };
            if id == next {
                self.first_target.push(target as u32);
            }
            self.of_target.push(id);
        }
    }

    #[inline]
    fn of(&self, target: u32) -> u32 {
        self.of_target
            .get(target as usize)
            .copied()
            .unwrap_or(u32::MAX)
    }

    /// The step's name (`METHOD URL` for a target that is no step), after its attack's
    /// when the input has several.
    fn name(&self, key: GroupKey, tables: &RunTables) -> String {
        let (attack, id) = ((key.0 >> 32) as usize, key.0 as u32);
        let step = self
            .first_target
            .get(id as usize)
            .and_then(|&target| tables.targets.get(target as usize))
            .map_or_else(|| format!("#{id}"), step_label);
        if tables.attacks.len() <= 1 {
            return step;
        }
        let attack = tables
            .attacks
            .get(attack)
            .map_or_else(|| format!("#{attack}"), |a| a.name.clone());
        format!("{attack}: {step}")
    }
}

/// A [`GroupBy`] with what it needs to key records and name groups.
#[derive(Debug, Clone)]
pub struct Grouper {
    by: GroupBy,
    steps: StepIds,
}

impl Grouper {
    /// Groups by `by`.
    pub fn new(by: GroupBy) -> Grouper {
        Grouper {
            by,
            steps: StepIds::default(),
        }
    }

    /// What it groups by.
    pub fn by(&self) -> GroupBy {
        self.by
    }

    /// Takes in the targets added to `tables`: call it before keying records that may
    /// refer to them.
    pub fn update(&mut self, tables: &RunTables) {
        match self.by {
            GroupBy::Step => self.steps.update(tables, |info| info.step.clone()),
            GroupBy::Method => self.steps.update(tables, |info| Some(method_label(info))),
            _ => {}
        }
    }

    /// The group of a record: its attack id, target id, step, status code or protocol id.
    #[inline]
    pub fn key(&self, record: &Record) -> GroupKey {
        GroupKey(match self.by {
            GroupBy::Attack => u64::from(record.attack),
            GroupBy::Target => u64::from(record.target),
            GroupBy::Step => {
                u64::from(record.attack) << 32 | u64::from(self.steps.of(record.target))
            }
            GroupBy::Method => u64::from(self.steps.of(record.target)),
            GroupBy::Status => u64::from(record.status),
            GroupBy::Protocol => u64::from(record.protocol.id()),
        })
    }

    /// A group's name as people read it: the attack name, `METHOD URL`, the step, the
    /// status, or the protocol (`http/1.1`, `h2`).
    pub fn group_name(&self, key: GroupKey, tables: &RunTables) -> String {
        let id = key.0 as usize;
        match self.by {
            GroupBy::Attack => tables
                .attacks
                .get(id)
                .map_or_else(|| format!("#{id}"), |a| a.name.clone()),
            GroupBy::Target => tables
                .targets
                .get(id)
                .map_or_else(|| format!("#{id}"), |t| format!("{} {}", t.method, t.url)),
            GroupBy::Step => self.steps.name(key, tables),
            GroupBy::Method => (self.steps.first_target.get(id))
                .and_then(|&target| tables.targets.get(target as usize))
                .map_or_else(|| format!("#{id}"), method_label),
            GroupBy::Status if key.0 == 0 => "0 (transport error)".to_owned(),
            GroupBy::Status => key.0.to_string(),
            GroupBy::Protocol => {
                Protocol::from_id(key.0).map_or_else(|| format!("#{id}"), |p| p.name().to_owned())
            }
        }
    }

    /// The header line above a group's report.
    pub fn title(&self, key: GroupKey, tables: &RunTables) -> String {
        let name = self.group_name(key, tables);
        match self.by {
            GroupBy::Attack => format!("=== attack {name:?} ==="),
            GroupBy::Target
            | GroupBy::Step
            | GroupBy::Method
            | GroupBy::Status
            | GroupBy::Protocol => format!("=== {} {name} ===", self.by.name()),
        }
    }
}

/// A target's method: `package.Service/Method` for a gRPC call (its path), else
/// `METHOD /path` (scheme, host and query left out).
fn method_label(info: &TargetInfo) -> String {
    let after_scheme = info
        .url
        .split_once("://")
        .map_or(&info.url[..], |(_, rest)| rest);
    let path = after_scheme.find('/').map_or("/", |at| &after_scheme[at..]);
    let path = path.split(['?', '#']).next().unwrap_or(path);
    if info.method == "GRPC" {
        return path.trim_start_matches('/').to_owned();
    }
    format!("{} {path}", info.method)
}

/// One [`Metrics`] per group (or one for everything without `-by`), each counting the
/// flow checks of its records too.
#[derive(Clone)]
pub struct Groups {
    grouper: Option<Grouper>,
    checked: CheckedTargets,
    template: Metrics,
    index: HashMap<GroupKey, usize>,
    groups: Vec<(GroupKey, Metrics)>,
    /// The last group hit: records of one group usually come in runs.
    last: Option<(GroupKey, usize)>,
}

impl Groups {
    /// `template` is cloned for each new group.
    pub fn new(by: Option<GroupBy>, template: Metrics) -> Groups {
        Groups {
            grouper: by.map(Grouper::new),
            checked: CheckedTargets::default(),
            template,
            index: HashMap::new(),
            groups: Vec::new(),
            last: None,
        }
    }

    /// Adds a batch; `tables` are the run's as of this batch.
    pub fn add_all(&mut self, records: &[Record], tables: &RunTables) {
        self.checked.update(tables);
        let Some(grouper) = &mut self.grouper else {
            self.add_ungrouped(records);
            return;
        };
        grouper.update(tables);
        for record in records {
            let slot = self.slot(self.key(record));
            let metrics = &mut self.groups[slot].1;
            metrics.add(record);
            if let Some(target) = self.checked.get(record.target) {
                metrics.add_checks(record, target);
            }
        }
    }

    /// Everything in one group: the batch at once, then the checks of the records
    /// that have some (none in a run without flows, so no second pass).
    fn add_ungrouped(&mut self, records: &[Record]) {
        if self.groups.is_empty() {
            self.groups.push((GroupKey(0), self.template.clone()));
        }
        let metrics = &mut self.groups[0].1;
        metrics.add_all(records);
        if self.checked.is_empty() {
            return;
        }
        for record in records {
            if let Some(target) = self.checked.get(record.target) {
                metrics.add_checks(record, target);
            }
        }
    }

    #[inline]
    fn key(&self, record: &Record) -> GroupKey {
        self.grouper
            .as_ref()
            .map_or(GroupKey(0), |grouper| grouper.key(record))
    }

    fn slot(&mut self, key: GroupKey) -> usize {
        if let Some((last, slot)) = self.last
            && last == key
        {
            return slot;
        }
        let slot = *self.index.entry(key).or_insert_with(|| {
            self.groups.push((key, self.template.clone()));
            self.groups.len() - 1
        });
        self.last = Some((key, slot));
        slot
    }

    /// What each new group starts as: an empty group's figures.
    pub fn template(&self) -> &Metrics {
        &self.template
    }

    pub fn requests(&self) -> u64 {
        self.groups.iter().map(|(_, m)| m.requests()).sum()
    }

    /// The earliest send time over every group; `u64::MAX` without records.
    pub fn earliest_unix_ns(&self) -> u64 {
        self.groups
            .iter()
            .map(|(_, m)| m.earliest_unix_ns())
            .min()
            .unwrap_or(u64::MAX)
    }

    /// The grouper and the groups in their stable order.
    pub fn into_sorted(mut self) -> (Option<Grouper>, Vec<(GroupKey, Metrics)>) {
        self.groups.sort_by_key(|(key, _)| *key);
        (self.grouper, self.groups)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use record::AttackInfo;

    fn record(attack: u16, target: u32, status: u16) -> Record {
        Record {
            attack,
            target,
            status,
            // Every target but 0 went over h2.
            protocol: if target == 0 {
                Protocol::Http1
            } else {
                Protocol::Http2
            },
            ..Record::default()
        }
    }

    fn target(step: Option<&str>, url: &str) -> TargetInfo {
        TargetInfo {
            step: step.map(str::to_owned),
            checks: Vec::new(),
            method: "GET".to_owned(),
            url: url.to_owned(),
        }
    }

    /// Attacks "shop" and "admin"; targets: a plain one, then the steps login, list,
    /// login again (another URL: the same step), item.
    fn tables() -> RunTables {
        let attack = |name: &str| AttackInfo {
            name: name.to_owned(),
            ..AttackInfo::default()
        };
        RunTables {
            attacks: vec![attack("shop"), attack("admin")],
            targets: vec![
                target(None, "http://x/"),
                target(Some("login"), "http://x/login"),
                target(Some("list"), "http://x/items"),
                target(Some("login"), "http://x/signin"),
                target(Some("item"), "http://x/items/1"),
            ],
            errors: Vec::new(),
        }
    }

    fn step_key(attack: u64, step: u64) -> u64 {
        attack << 32 | step
    }

    #[test]
    fn splits_in_stable_order() {
        let records = [
            record(1, 2, 500),
            record(0, 0, 200),
            record(1, 0, 200),
            record(0, 1, 0),
            record(0, 3, 200),
            record(0, 4, 200),
        ];
        let rows: &[(GroupBy, &[(u64, u64)])] = &[
            (GroupBy::Attack, &[(0, 4), (1, 2)]),
            (GroupBy::Target, &[(0, 2), (1, 1), (2, 1), (3, 1), (4, 1)]),
            // Step ids in target order: the plain target 0, login 1 (targets 1 and 3),
            // list 2, item 3; within each attack.
            (
                GroupBy::Step,
                &[
                    (step_key(0, 0), 1),
                    (step_key(0, 1), 2),
                    (step_key(0, 3), 1),
                    (step_key(1, 0), 1),
                    (step_key(1, 2), 1),
                ],
            ),
            (GroupBy::Status, &[(0, 1), (200, 4), (500, 1)]),
            (GroupBy::Protocol, &[(0, 2), (1, 4)]),
            // Methods: one per path here, across both attacks (target 0's two records).
            (GroupBy::Method, &[(0, 2), (1, 1), (2, 1), (3, 1), (4, 1)]),
        ];
        for (by, want) in rows {
            let mut groups = Groups::new(Some(*by), Metrics::new(None));
            groups.add_all(&records, &tables());
            assert_eq!(groups.requests(), 6);
            let got: Vec<(u64, u64)> = groups
                .into_sorted()
                .1
                .iter()
                .map(|(key, metrics)| (key.0, metrics.requests()))
                .collect();
            assert_eq!(&got, want, "{by}");
        }
    }

    #[test]
    fn step_ids_come_from_the_tables_alone() {
        let mut all = tables();
        let later = all.targets.split_off(3);
        // Ids given while the tables grow are those given to the whole tables at once.
        let mut growing = Grouper::new(GroupBy::Step);
        growing.update(&all);
        all.targets.extend(later);
        growing.update(&all);
        let mut whole = Grouper::new(GroupBy::Step);
        whole.update(&all);
        for target in 0..5 {
            let record = record(1, target, 200);
            assert_eq!(growing.key(&record), whole.key(&record), "target {target}");
        }
        assert_eq!(whole.key(&record(1, 3, 200)), GroupKey(step_key(1, 1)));
        // Other groupings need no tables.
        let status = Grouper::new(GroupBy::Status);
        assert_eq!(status.key(&record(0, 9, 503)), GroupKey(503));
    }

    #[test]
    fn earliest_send_time_spans_the_groups() {
        let sent = |attack: u16, intended_unix_ns: u64, send_lag_ns: u64| Record {
            attack,
            intended_unix_ns,
            send_lag_ns,
            ..Record::default()
        };
        let records = [sent(1, 50, 5), sent(0, 40, 30), sent(1, 45, 10)];
        for by in [None, Some(GroupBy::Attack)] {
            let mut groups = Groups::new(by, Metrics::new(None));
            assert_eq!(groups.earliest_unix_ns(), u64::MAX);
            groups.add_all(&[], &RunTables::default());
            assert_eq!(groups.earliest_unix_ns(), u64::MAX);
            groups.add_all(&records, &RunTables::default());
            assert_eq!(groups.earliest_unix_ns(), 55, "{by:?}");
        }
    }

    #[test]
    fn no_grouping_is_one_group() {
        let mut groups = Groups::new(None, Metrics::new(None));
        groups.add_all(&[record(0, 0, 200), record(3, 3, 404)], &tables());
        let (grouper, sorted) = groups.into_sorted();
        assert!(grouper.is_none());
        assert_eq!(sorted.len(), 1);
        assert_eq!(sorted[0].1.requests(), 2);
    }

    #[test]
    fn names_and_titles() {
        let mut one_attack = tables();
        one_attack.attacks.truncate(1);
        let rows: &[(GroupBy, &RunTables, u64, &str)] = &[
            (GroupBy::Attack, &one_attack, 0, "=== attack \"shop\" ==="),
            (GroupBy::Attack, &one_attack, 9, "=== attack \"#9\" ==="),
            (
                GroupBy::Target,
                &one_attack,
                0,
                "=== target GET http://x/ ===",
            ),
            (
                GroupBy::Step,
                &one_attack,
                step_key(0, 1),
                "=== step login ===",
            ),
            (
                GroupBy::Step,
                &one_attack,
                step_key(0, 0),
                "=== step GET http://x/ ===",
            ),
            (
                GroupBy::Step,
                &one_attack,
                step_key(0, 9),
                "=== step #9 ===",
            ),
            // Several attacks: a step is named after its flow.
            (
                GroupBy::Step,
                &tables(),
                step_key(1, 2),
                "=== step admin: list ===",
            ),
            (
                GroupBy::Step,
                &tables(),
                step_key(7, 2),
                "=== step #7: list ===",
            ),
            (
                GroupBy::Status,
                &one_attack,
                0,
                "=== status 0 (transport error) ===",
            ),
            (GroupBy::Status, &one_attack, 503, "=== status 503 ==="),
            (
                GroupBy::Protocol,
                &one_attack,
                0,
                "=== protocol http/1.1 ===",
            ),
            (GroupBy::Protocol, &one_attack, 1, "=== protocol h2 ==="),
            (GroupBy::Protocol, &one_attack, 9, "=== protocol #9 ==="),
        ];
        for &(by, tables, key, want) in rows {
            let mut grouper = Grouper::new(by);
            grouper.update(tables);
            assert_eq!(grouper.title(GroupKey(key), tables), want);
        }
    }

    #[test]
    fn methods_are_grpc_paths_or_http_methods_and_paths() {
        let info = |method: &str, url: &str| TargetInfo {
            step: None,
            checks: Vec::new(),
            method: method.to_owned(),
            url: url.to_owned(),
        };
        let tables = RunTables {
            targets: vec![
                info("GRPC", "http://127.0.0.1:50051/helloworld.Greeter/SayHello"),
                info("GRPC", "https://other:443/helloworld.Greeter/SayHello"),
                info("GET", "http://x/items?page=2"),
                info("POST", "http://x/items#top"),
                info("GET", "http://y/items?page=3"),
                info("GET", "http://x"),
            ],
            ..RunTables::default()
        };
        let mut grouper = Grouper::new(GroupBy::Method);
        grouper.update(&tables);
        let names: Vec<(u64, String)> = (0..tables.targets.len() as u32)
            .map(|target| {
                let key = grouper.key(&record(0, target, 200));
                (key.0, grouper.group_name(key, &tables))
            })
            .collect();
        let want = [
            (0, "helloworld.Greeter/SayHello"),
            (0, "helloworld.Greeter/SayHello"),
            (1, "GET /items"),
            (2, "POST /items"),
            (1, "GET /items"),
            (3, "GET /"),
        ];
        let want: Vec<(u64, String)> = want.iter().map(|(k, n)| (*k, (*n).to_owned())).collect();
        assert_eq!(names, want);
        assert_eq!(
            grouper.title(GroupKey(0), &tables),
            "=== method helloworld.Greeter/SayHello ==="
        );
    }

    #[test]
    fn parses_group_names() {
        assert_eq!("attack".parse(), Ok(GroupBy::Attack));
        assert_eq!("status".parse(), Ok(GroupBy::Status));
        let err = "url".parse::<GroupBy>().unwrap_err();
        assert!(err.contains("\"url\""), "{err}");
        let rows: &[(&str, Result<GroupBy, &str>)] = &[
            ("protocol", Ok(GroupBy::Protocol)),
            ("target", Ok(GroupBy::Target)),
            ("step", Ok(GroupBy::Step)),
            ("steps", Err("unknown group \"steps\"")),
            ("protocols", Err("unknown group \"protocols\"")),
            ("method", Ok(GroupBy::Method)),
            (
                "h2",
                Err("want attack, target, step, method, status or protocol"),
            ),
            ("", Err("unknown group")),
        ];
        for (text, want) in rows {
            match (text.parse::<GroupBy>(), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, *want, "{text}"),
                (Err(err), Err(want)) => assert!(err.contains(want), "{text}: {err}"),
                (got, want) => panic!("{text:?}: got {got:?}, want {want:?}"),
            }
            if let Ok(by) = text.parse::<GroupBy>() {
                assert_eq!(by.name(), *text, "name() is the flag value");
            }
        }
    }
}
