//! [`Answers`]: how the requests failed, in the answers' own terms, gathered in the one
//! pass with the rest of the evidence: each target's requests and failed connects (an
//! address where every connect failed is one nothing listened at), the statuses the
//! server answered and the errors without an answer. The diagnosis says these instead of
//! guessing at what was not watched.

use analysis::diagnosis::{FailedAs, Unreached};
use record::{ErrorKind, Record, RunTables};

const KINDS: usize = ErrorKind::ALL.len();

/// One target's requests and failed connects.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct TargetCount {
    requests: u64,
    connects_failed: u64,
    /// The error id of its first failed connect.
    error: u32,
}

/// See the module documentation. Adding a record does not allocate but for a target or
/// a status not seen before.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Answers {
    targets: Vec<TargetCount>,
    statuses: Vec<(u16, u64)>,
    errors: [u64; KINDS],
    /// Answers a flow's step did not accept, per error id (one per step and check,
    /// extraction or cookie: few).
    unmet: Vec<(u32, u64)>,
}

impl Answers {
    /// Adds a batch; `tables` names the kinds of its errors.
    pub fn add_all(&mut self, records: &[Record], tables: &RunTables) {
        for record in records {
            self.add(record, tables);
        }
    }

    #[inline]
    fn add(&mut self, record: &Record, tables: &RunTables) {
        let target = record.target as usize;
        if target >= self.targets.len() {
            self.targets.resize(target + 1, TargetCount::default());
        }
        let count = &mut self.targets[target];
        count.requests += 1;
        if record.is_success() {
            return;
        }
        let kind = tables.error(record.error).map(|e| e.kind);
        let answered = record.status != 0 && !(200..400).contains(&record.status);
        if answered && matches!(kind, Some(ErrorKind::Status) | None) {
            match self.statuses.iter_mut().find(|(s, _)| *s == record.status) {
                Some((_, n)) => *n += 1,
                None => self.statuses.push((record.status, 1)),
            }
            return;
        }
        let kind = kind.unwrap_or(ErrorKind::Other);
        if matches!(
            kind,
            ErrorKind::Check | ErrorKind::Extract | ErrorKind::Cookie
        ) {
            match self.unmet.iter_mut().find(|(e, _)| *e == record.error) {
                Some((_, n)) => *n += 1,
                None => self.unmet.push((record.error, 1)),
            }
            return;
        }
        if kind == ErrorKind::Connect {
            if count.connects_failed == 0 {
                count.error = record.error;
            }
            count.connects_failed += 1;
        }
        self.errors[kind as usize] += 1;
    }

    /// The addresses where every request failed to connect, in the targets' order.
    pub fn unreached(&self, tables: &RunTables) -> Vec<Unreached> {
        let mut by_address: Vec<(String, u64, u64, u32)> = Vec::new();
        for (id, count) in self.targets.iter().enumerate() {
            let Some(target) = tables.targets.get(id).filter(|_| count.requests > 0) else {
                continue;
            };
            let address = target_address(&target.url);
            match by_address.iter_mut().find(|(a, ..)| *a == address) {
                Some((_, requests, failed, error)) => {
                    *requests += count.requests;
                    *failed += count.connects_failed;
                    if *error == 0 {
                        *error = count.error;
                    }
                }
                None => {
                    by_address.push((address, count.requests, count.connects_failed, count.error));
                }
            }
        }
        by_address
            .into_iter()
            .filter(|&(_, requests, failed, _)| requests > 0 && failed == requests)
            .map(|(address, requests, _, error)| {
                let text = tables.error(error).map_or("", |e| e.text.as_str());
                Unreached {
                    address,
                    error: text.strip_prefix("connect: ").unwrap_or(text).to_owned(),
                    requests,
                }
            })
            .collect()
    }

    /// Each way requests failed with its count, most first: statuses, then what a
    /// flow did not accept (named by `tables`), then errors.
    pub fn failed_as(&self, tables: &RunTables) -> Vec<(FailedAs, u64)> {
        let unmet = (self.unmet.iter()).map(|&(error, n)| {
            let text = tables.error(error).map_or("", |e| e.text.as_str());
            (FailedAs::Unmet(text.to_owned()), n)
        });
        let mut kinds: Vec<(FailedAs, u64)> = (self.statuses.iter())
            .map(|&(status, n)| (FailedAs::Status(status), n))
            .chain(unmet)
            .chain(
                (ErrorKind::ALL.iter())
                    .filter(|kind| **kind != ErrorKind::Status)
                    .map(|kind| {
                        (
                            FailedAs::Error(kind.name().to_owned()),
                            self.errors[*kind as usize],
                        )
                    })
                    .filter(|(_, n)| *n > 0),
            )
            .collect();
        kinds.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
        kinds
    }

    /// Who answered: the one `host:port` of every target that had requests, else
    /// `the servers`.
    pub fn server(&self, tables: &RunTables) -> String {
        let mut addresses = (self.targets.iter().zip(&tables.targets))
            .filter(|(count, _)| count.requests > 0)
            .map(|(_, target)| target_address(&target.url));
        match addresses.next() {
            Some(first) if addresses.all(|a| a == first) => first,
            _ => "the servers".to_owned(),
        }
    }
}

/// `host:port` of a URL (the scheme's port when it names none): what a connect goes to.
/// Text that is not a URL is returned as it is.
pub fn target_address(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    // A port follows the last `:` outside an IPv6 literal's brackets.
    let has_port = host_port
        .rsplit_once(':')
        .is_some_and(|(_, port)| !port.contains(']') && !port.is_empty());
    if has_port {
        return host_port.to_owned();
    }
    let port = if scheme.eq_ignore_ascii_case("https") {
        443
    } else {
        80
    };
    format!("{}:{port}", host_port.trim_end_matches(':'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use record::{ErrorEntry, TargetInfo};

    #[test]
    fn addresses_name_host_and_port() {
        let rows = [
            ("http://127.0.0.1:18199/x?y", "127.0.0.1:18199"),
            ("http://example.test/", "example.test:80"),
            ("https://example.test", "example.test:443"),
            ("http://user:pw@h:81/p", "h:81"),
            ("http://[::1]:8080/", "[::1]:8080"),
            ("http://[::1]/", "[::1]:80"),
            ("not a url", "not a url"),
        ];
        for (url, want) in rows {
            assert_eq!(target_address(url), want, "{url}");
        }
    }

    fn tables() -> RunTables {
        let target = |url: &str| TargetInfo {
            method: "GET".to_owned(),
            url: url.to_owned(),
            ..TargetInfo::default()
        };
        RunTables {
            targets: vec![
                target("http://127.0.0.1:18199/a"),
                target("http://127.0.0.1:18199/b"),
                target("http://127.0.0.1:8080/"),
            ],
            errors: vec![
                ErrorEntry {
                    kind: ErrorKind::Connect,
                    text: "connect: connection refused".to_owned(),
                },
                ErrorEntry {
                    kind: ErrorKind::Status,
                    text: "503 Service Unavailable".to_owned(),
                },
                ErrorEntry {
                    kind: ErrorKind::Timeout,
                    text: "timeout".to_owned(),
                },
                ErrorEntry {
                    kind: ErrorKind::Check,
                    text: "step \"login\": check \"status 200\" failed".to_owned(),
                },
            ],
            ..RunTables::default()
        }
    }

    fn record(target: u32, status: u16, error: u32) -> Record {
        Record {
            target,
            status,
            error,
            ..Record::default()
        }
    }

    #[test]
    fn an_address_is_unreached_only_when_every_connect_to_it_failed() {
        let tables = tables();
        // (case, records, unreached addresses)
        let rows: [(&str, Vec<Record>, Vec<&str>); 3] = [
            (
                "refused at both paths",
                vec![record(0, 0, 1), record(1, 0, 1), record(2, 200, 0)],
                vec!["127.0.0.1:18199"],
            ),
            (
                "one path answered",
                vec![record(0, 0, 1), record(1, 200, 0)],
                vec![],
            ),
            ("answered 503", vec![record(2, 503, 2)], vec![]),
        ];
        for (case, records, want) in rows {
            let mut answers = Answers::default();
            answers.add_all(&records, &tables);
            let got = answers.unreached(&tables);
            let addresses: Vec<&str> = got.iter().map(|u| u.address.as_str()).collect();
            assert_eq!(addresses, want, "{case}");
            if let Some(first) = got.first() {
                assert_eq!(
                    crate::words::diagnosis::unreached(first),
                    "nothing listened at 127.0.0.1:18199: connection refused, every request (2)"
                );
            }
        }
    }

    #[test]
    fn failures_are_the_statuses_then_the_errors_most_first() {
        let tables = tables();
        let mut answers = Answers::default();
        // An answer a flow's check failed: its status is 200, the check failed it.
        let unmet = Record {
            checks_failed: 1 | Record::FAILED_BY_FLOW,
            ..record(2, 200, 4)
        };
        let records = [
            record(2, 503, 2),
            record(2, 503, 2),
            record(2, 503, 2),
            unmet,
            unmet,
            record(2, 0, 3),
            record(2, 200, 0),
        ];
        answers.add_all(&records, &tables);
        assert_eq!(
            answers.failed_as(&tables),
            [
                (FailedAs::Status(503), 3),
                (
                    FailedAs::Unmet("step \"login\": check \"status 200\" failed".to_owned()),
                    2
                ),
                (FailedAs::Error("timeout".to_owned()), 1)
            ]
        );
        assert_eq!(answers.server(&tables), "127.0.0.1:8080");
    }
}
