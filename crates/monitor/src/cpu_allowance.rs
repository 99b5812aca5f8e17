//! [`CpuAllowance`]: how much CPU a process may use, in cores: the CPUs its affinity
//! allows (`Cpus_allowed_list` in `/proc/PID/status`, what `taskset` sets) capped by its
//! cgroup's quota (`cpu.max` under cgroup v2, `cpu.cfs_quota_us` / `cpu.cfs_period_us`
//! under v1), so that a process held at 100% of one core can be told from one at its
//! limit (`process.cpu_limit_percent`).

use std::collections::BTreeSet;

/// The CPUs a process may run on and its cgroup's quota in cores, if it has one.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct CpuAllowance {
    pub(crate) cpus: BTreeSet<u32>,
    pub(crate) quota_cores: Option<f64>,
}

impl CpuAllowance {
    /// Reads one process's allowance; `None` when its status is unreadable (gone).
    pub(crate) fn read(pid: u32) -> Option<CpuAllowance> {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let cpus = status
            .lines()
            .find_map(|line| line.strip_prefix("Cpus_allowed_list:"))
            .and_then(|list| parse_cpu_list(list.trim()))?;
        let quota_cores = std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
            .ok()
            .and_then(|text| read_quota(&text));
        Some(CpuAllowance { cpus, quota_cores })
    }

    /// The allowance of a group: the union of its members' CPUs, capped by the largest
    /// quota among them (members of one service share its cgroup), in percent of one core.
    pub(crate) fn group_percent<'a>(
        members: impl Iterator<Item = &'a CpuAllowance>,
    ) -> Option<f64> {
        let mut cpus = BTreeSet::new();
        let mut quota: Option<f64> = None;
        let mut unlimited = false;
        for member in members {
            cpus.extend(member.cpus.iter().copied());
            match member.quota_cores {
                Some(cores) => quota = Some(quota.map_or(cores, |q| q.max(cores))),
                None => unlimited = true,
            }
        }
        if cpus.is_empty() {
            return None;
        }
        let cores = cpus.len() as f64;
        let cores = match quota.filter(|_| !unlimited) {
            Some(quota) => cores.min(quota),
            None => cores,
        };
        Some(cores * 100.0)
    }
}

/// `0-3,6,8-9` -> {0,1,2,3,6,8,9}; `None` when malformed.
pub(crate) fn parse_cpu_list(list: &str) -> Option<BTreeSet<u32>> {
    let mut cpus = BTreeSet::new();
    for part in list.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((first, last)) => {
                let (first, last): (u32, u32) = (first.parse().ok()?, last.parse().ok()?);
                if last < first || last - first > 65_536 {
                    return None;
                }
                cpus.extend(first..=last);
            }
            None => {
                cpus.insert(part.parse().ok()?);
            }
        }
    }
    (!cpus.is_empty()).then_some(cpus)
}

/// The quota in cores of the cgroup a `/proc/PID/cgroup` text names, v2 first.
fn read_quota(cgroup: &str) -> Option<f64> {
    let (version, path) = crate::cgroup::controller_dir(cgroup, "cpu", "cpu.max")?;
    let read = |file: &str| std::fs::read_to_string(format!("{path}/{file}")).ok();
    match version {
        2 => parse_cpu_max(&read("cpu.max")?),
        _ => parse_cfs(&read("cpu.cfs_quota_us")?, &read("cpu.cfs_period_us")?),
    }
}

/// `cpu.max`: `QUOTA PERIOD` in µs, or `max PERIOD` for none.
fn parse_cpu_max(text: &str) -> Option<f64> {
    let mut fields = text.split_whitespace();
    let quota = fields.next()?.parse::<f64>().ok()?;
    let period = fields.next()?.parse::<f64>().ok()?;
    (quota > 0.0 && period > 0.0).then(|| quota / period)
}

/// v1: a quota of -1 is none.
fn parse_cfs(quota: &str, period: &str) -> Option<f64> {
    let quota = quota.trim().parse::<f64>().ok()?;
    let period = period.trim().parse::<f64>().ok()?;
    (quota > 0.0 && period > 0.0).then(|| quota / period)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_parse_to_their_cpus() {
        let cases: &[(&str, Option<&[u32]>)] = &[
            ("0", Some(&[0])),
            ("0-3", Some(&[0, 1, 2, 3])),
            ("0-1,4,6-7", Some(&[0, 1, 4, 6, 7])),
            ("", None),
            ("3-1", None),
            ("a", None),
            ("0-", None),
        ];
        for (list, want) in cases {
            let got = parse_cpu_list(list).map(|set| set.into_iter().collect::<Vec<_>>());
            assert_eq!(got.as_deref(), *want, "{list:?}");
        }
    }

    #[test]
    fn quotas_parse_in_cores() {
        let cases: &[(&str, Option<f64>)] = &[
            ("max 100000\n", None),
            ("50000 100000\n", Some(0.5)),
            ("200000 100000", Some(2.0)),
            ("garbage", None),
            ("", None),
        ];
        for (text, want) in cases {
            assert_eq!(parse_cpu_max(text), *want, "{text:?}");
        }
        assert_eq!(parse_cfs("-1\n", "100000\n"), None);
        assert_eq!(parse_cfs("150000\n", "100000\n"), Some(1.5));
    }

    #[test]
    fn a_group_may_use_the_union_of_its_cpus_capped_by_its_quota() {
        let member = |cpus: &[u32], quota: Option<f64>| CpuAllowance {
            cpus: cpus.iter().copied().collect(),
            quota_cores: quota,
        };
        let cases: &[(&str, Vec<CpuAllowance>, Option<f64>)] = &[
            ("one pinned", vec![member(&[0], None)], Some(100.0)),
            (
                "two pinned apart",
                vec![member(&[0], None), member(&[1], None)],
                Some(200.0),
            ),
            (
                "quota below cpus",
                vec![member(&[0, 1, 2, 3], Some(1.5))],
                Some(150.0),
            ),
            (
                "quota above cpus",
                vec![member(&[0, 1], Some(4.0))],
                Some(200.0),
            ),
            (
                "one member without quota",
                vec![member(&[0, 1], Some(1.0)), member(&[0, 1], None)],
                Some(200.0),
            ),
            ("none", vec![], None),
        ];
        for (case, members, want) in cases {
            assert_eq!(CpuAllowance::group_percent(members.iter()), *want, "{case}");
        }
    }

    #[test]
    fn this_process_has_an_allowance() {
        let allowance = CpuAllowance::read(std::process::id()).unwrap();
        assert!(!allowance.cpus.is_empty());
        assert!(CpuAllowance::group_percent(std::iter::once(&allowance)).unwrap() >= 1.0);
    }
}
