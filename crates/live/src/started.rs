//! [`LoadCount`]: what a run's schedule counts as its load, read from the engine's
//! stats samples. A flow's schedule counts runs started, not requests (its asked
//! rate is of runs), so a flow's load is its runs started; any other attack's is its
//! requests sent. The live view and a steered shard's feed hold the asked load to it.

use record::GeneratorStats;
use serde::{Deserialize, Serialize};

/// What the asked load of a run is counted in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadUnit {
    /// Requests: a run without flows.
    #[default]
    Requests,
    /// Runs of a flow started: every attack is a flow.
    Runs,
    /// Flows' runs and other attacks' requests together.
    RunsAndRequests,
}

impl LoadUnit {
    /// `runs`, `runs and requests`, `requests`: what the figures are of.
    pub fn word(self) -> &'static str {
        match self {
            LoadUnit::Requests => "requests",
            LoadUnit::Runs => "runs",
            LoadUnit::RunsAndRequests => "runs and requests",
        }
    }
}

/// Which attacks of a run are flows, and so what each one's load is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadCount {
    flows: Vec<bool>,
}

impl LoadCount {
    /// The attacks, in order: whether each one is a flow.
    pub fn new(flows: Vec<bool>) -> LoadCount {
        LoadCount { flows }
    }

    /// What the run's asked load is counted in.
    pub fn unit(&self) -> LoadUnit {
        let flows = self.flows.iter().filter(|flow| **flow).count();
        match flows {
            0 => LoadUnit::Requests,
            n if n == self.flows.len() => LoadUnit::Runs,
            _ => LoadUnit::RunsAndRequests,
        }
    }

    /// The load started by the time of the sample; `None` in a run without flows,
    /// whose load is its requests sent.
    pub fn started(&self, stats: &GeneratorStats) -> Option<u64> {
        match self.unit() {
            LoadUnit::Requests => None,
            LoadUnit::Runs => Some(stats.starts),
            // Two attacks or more: the sample has each one's figures.
            LoadUnit::RunsAndRequests => Some(
                (stats.attacks.iter().zip(&self.flows))
                    .map(|(attack, flow)| if *flow { attack.starts } else { attack.sent })
                    .sum(),
            ),
        }
    }

    /// Whether the record is a unit of the load: a flow's first request of a run,
    /// any other attack's request.
    pub fn starts_load(&self, record: &record::Record) -> bool {
        let flow = self.flows.get(usize::from(record.attack));
        !flow.is_some_and(|flow| *flow) || record.starts_a_run()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use record::{AttackStats, Record};

    /// A flow of 3 steps: 10 runs started, 30 requests; a plain attack: 7 requests.
    fn sample() -> GeneratorStats {
        let flow = AttackStats {
            sent: 30,
            starts: 10,
            ..AttackStats::default()
        };
        let plain = AttackStats {
            sent: 7,
            ..AttackStats::default()
        };
        GeneratorStats {
            sent: 37,
            starts: 10,
            attacks: vec![flow, plain],
            ..GeneratorStats::default()
        }
    }

    #[test]
    fn a_flow_s_load_is_its_runs_and_another_attack_s_its_requests() {
        let single_flow = GeneratorStats {
            sent: 30,
            starts: 10,
            ..GeneratorStats::default()
        };
        // (attacks that are flows, the sample, the unit, the load started)
        let rows = [
            (vec![false], sample(), LoadUnit::Requests, None),
            (vec![true], single_flow, LoadUnit::Runs, Some(10)),
            (vec![true, true], sample(), LoadUnit::Runs, Some(10)),
            (
                vec![true, false],
                sample(),
                LoadUnit::RunsAndRequests,
                Some(17),
            ),
            (vec![], sample(), LoadUnit::Requests, None),
        ];
        for (flows, stats, unit, started) in rows {
            let count = LoadCount::new(flows.clone());
            assert_eq!(count.unit(), unit, "{flows:?}");
            assert_eq!(count.started(&stats), started, "{flows:?}");
        }
    }

    #[test]
    fn a_flow_s_records_count_once_per_run() {
        let count = LoadCount::new(vec![true, false]);
        let record = |attack: u16, seq: u64| Record {
            attack,
            seq,
            ..Record::default()
        };
        // A run of 3 steps, the next run's first, a plain attack's requests.
        let rows = [
            (record(0, 0), true),
            (record(0, 1), false),
            (record(0, 2), false),
            (record(0, 1 << 16), true),
            (record(1, 1), true),
            (record(1, 1 << 16), true),
            (record(2, 5), true),
        ];
        for (record, starts) in rows {
            assert_eq!(count.starts_load(&record), starts, "{record:?}");
        }
    }
}
