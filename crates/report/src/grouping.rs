//! `-by attack|target|status|protocol`: [`Groups`] splits records into one [`Metrics`]
//! per group, in a stable order (attacks and targets as the inputs declare them,
//! statuses by number, protocols by id: HTTP/1.1 first).

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use record::{Protocol, Record, RunTables};

use crate::checks::CheckedTargets;
use crate::metrics::Metrics;

/// What `-by` splits on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupBy {
    /// By attack name.
    Attack,
    /// By target (method and URL).
    Target,
    /// By status code.
    Status,
    /// By the HTTP version the request went over (a run that mixed HTTP/1.1 and h2).
    Protocol,
}

impl GroupBy {
    /// The flag value that selects this grouping (`attack`, `target`, `status`,
    /// `protocol`).
    pub fn name(self) -> &'static str {
        match self {
            GroupBy::Attack => "attack",
            GroupBy::Target => "target",
            GroupBy::Status => "status",
            GroupBy::Protocol => "protocol",
        }
    }

    /// The group of a record: its attack id, target id, status code or protocol id.
    #[inline]
    pub fn key(self, record: &Record) -> GroupKey {
        GroupKey(match self {
            GroupBy::Attack => u32::from(record.attack),
            GroupBy::Target => record.target,
            GroupBy::Status => u32::from(record.status),
            GroupBy::Protocol => u32::from(record.protocol.id()),
        })
    }

    /// A group's name as people read it: the attack name, `METHOD URL`, the status, or
    /// the protocol (`http/1.1`, `h2`).
    pub fn group_name(self, key: GroupKey, tables: &RunTables) -> String {
        let id = key.0 as usize;
        match self {
            GroupBy::Attack => tables
                .attacks
                .get(id)
                .map_or_else(|| format!("#{id}"), |a| a.name.clone()),
            GroupBy::Target => tables
                .targets
                .get(id)
                .map_or_else(|| format!("#{id}"), |t| format!("{} {}", t.method, t.url)),
            GroupBy::Status if key.0 == 0 => "0 (transport error)".to_owned(),
            GroupBy::Status => key.0.to_string(),
            GroupBy::Protocol => Protocol::from_id(u64::from(key.0))
                .map_or_else(|| format!("#{id}"), |p| p.name().to_owned()),
        }
    }

    /// The header line above a group's report.
    pub fn title(self, key: GroupKey, tables: &RunTables) -> String {
        let name = self.group_name(key, tables);
        match self {
            GroupBy::Attack => format!("=== attack {name:?} ==="),
            GroupBy::Target | GroupBy::Status | GroupBy::Protocol => {
                format!("=== {} {name} ===", self.name())
            }
        }
    }
}

impl FromStr for GroupBy {
    type Err = String;

    fn from_str(text: &str) -> Result<GroupBy, String> {
        match text {
            "attack" => Ok(GroupBy::Attack),
            "target" => Ok(GroupBy::Target),
            "status" => Ok(GroupBy::Status),
            "protocol" => Ok(GroupBy::Protocol),
            other => Err(format!(
                "unknown group {other:?}: want attack, target, status or protocol"
            )),
        }
    }
}

impl fmt::Display for GroupBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An attack id, target id, status code or protocol id, by [`GroupBy`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupKey(pub u32);

/// One [`Metrics`] per group (or one for everything without `-by`), each counting the
/// flow checks of its records too.
pub struct Groups {
    by: Option<GroupBy>,
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
            by,
            checked: CheckedTargets::default(),
            template,
            index: HashMap::new(),
            groups: Vec::new(),
            last: None,
        }
    }

    pub fn by(&self) -> Option<GroupBy> {
        self.by
    }

    /// Adds a batch; `tables` are the run's as of this batch.
    pub fn add_all(&mut self, records: &[Record], tables: &RunTables) {
        self.checked.update(tables);
        let Some(by) = self.by else {
            if self.groups.is_empty() {
                self.groups.push((GroupKey(0), self.template.clone()));
            }
            let metrics = &mut self.groups[0].1;
            metrics.add_all(records);
            if !self.checked.is_empty() {
                for record in records {
                    if let Some(target) = self.checked.get(record.target) {
                        metrics.add_checks(record, target);
                    }
                }
            }
            return;
        };
        for record in records {
            let slot = self.slot(by.key(record));
            let metrics = &mut self.groups[slot].1;
            metrics.add(record);
            if let Some(target) = self.checked.get(record.target) {
                metrics.add_checks(record, target);
            }
        }
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

    /// The groups in their stable order.
    pub fn into_sorted(mut self) -> Vec<(GroupKey, Metrics)> {
        self.groups.sort_by_key(|(key, _)| *key);
        self.groups
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use record::{AttackInfo, TargetInfo};

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

    #[test]
    fn splits_in_stable_order() {
        let records = [
            record(1, 2, 500),
            record(0, 0, 200),
            record(1, 0, 200),
            record(0, 1, 0),
        ];
        let rows: &[(GroupBy, &[(u32, u64)])] = &[
            (GroupBy::Attack, &[(0, 2), (1, 2)]),
            (GroupBy::Target, &[(0, 2), (1, 1), (2, 1)]),
            (GroupBy::Status, &[(0, 1), (200, 2), (500, 1)]),
            (GroupBy::Protocol, &[(0, 2), (1, 2)]),
        ];
        for (by, want) in rows {
            let mut groups = Groups::new(Some(*by), Metrics::new(None));
            groups.add_all(&records, &RunTables::default());
            assert_eq!(groups.requests(), 4);
            let got: Vec<(u32, u64)> = groups
                .into_sorted()
                .iter()
                .map(|(key, metrics)| (key.0, metrics.requests()))
                .collect();
            assert_eq!(&got, want, "{by}");
        }
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
        groups.add_all(
            &[record(0, 0, 200), record(3, 3, 404)],
            &RunTables::default(),
        );
        let sorted = groups.into_sorted();
        assert_eq!(sorted.len(), 1);
        assert_eq!(sorted[0].1.requests(), 2);
    }

    #[test]
    fn names_and_titles() {
        let tables = RunTables {
            attacks: vec![AttackInfo {
                name: "search".to_owned(),
                ..AttackInfo::default()
            }],
            targets: vec![TargetInfo {
                step: None,
                checks: Vec::new(),
                method: "GET".to_owned(),
                url: "http://x/".to_owned(),
            }],
            errors: Vec::new(),
        };
        let rows: &[(GroupBy, u32, &str)] = &[
            (GroupBy::Attack, 0, "=== attack \"search\" ==="),
            (GroupBy::Attack, 9, "=== attack \"#9\" ==="),
            (GroupBy::Target, 0, "=== target GET http://x/ ==="),
            (GroupBy::Status, 0, "=== status 0 (transport error) ==="),
            (GroupBy::Status, 503, "=== status 503 ==="),
            (GroupBy::Protocol, 0, "=== protocol http/1.1 ==="),
            (GroupBy::Protocol, 1, "=== protocol h2 ==="),
            (GroupBy::Protocol, 9, "=== protocol #9 ==="),
        ];
        for &(by, key, want) in rows {
            assert_eq!(by.title(GroupKey(key), &tables), want);
        }
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
            ("protocols", Err("unknown group \"protocols\"")),
            ("h2", Err("want attack, target, status or protocol")),
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
