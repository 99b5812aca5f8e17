//! [`SamplerHealth`]: whether one sampler's readings can be judged as a series in time:
//! readings it missed (with the monitor's reason), its clock going back, and stretches
//! with no reading at all. A stretch at a threshold is only *sustained* over readings
//! in a row; across a jump or a silence it starts again, and the diagnosis says what it
//! could not judge instead of guessing across the hole.

use analysis::{Hole, Unjudged};

/// A silence longer than this many of the sampler's shortest steps breaks a stretch.
const SILENT_STEPS: u64 = 3;

/// One sampler's readings as a series in time.
#[derive(Debug, Clone, Default)]
pub(crate) struct SamplerHealth {
    last_at_unix_ns: Option<u64>,
    /// Readings counted, missed ones too.
    readings: u64,
    /// The shortest step between two readings: its interval.
    min_step_ns: Option<u64>,
    /// Readings missed (a whole-sampler gap), the first's time and reason.
    missed: u64,
    first_missed: Option<(u64, String)>,
    /// The first time its clock went back: when, and by how much.
    clock_back: Option<(u64, u64)>,
    /// The longest silence: from when, how long.
    longest_silence: Option<(u64, u64)>,
}

impl SamplerHealth {
    /// Counts a reading at `at_unix_ns`; `missed` is the monitor's reason when the
    /// sampler missed it. Returns whether it follows the previous reading without a
    /// jump back or a silence (stretches at a threshold may go on).
    pub(crate) fn add(&mut self, at_unix_ns: u64, missed: Option<&str>) -> bool {
        self.readings += 1;
        if let Some(reason) = missed {
            self.missed += 1;
            self.first_missed
                .get_or_insert_with(|| (at_unix_ns, reason.to_owned()));
        }
        let Some(last) = self.last_at_unix_ns.replace(at_unix_ns) else {
            return true;
        };
        if at_unix_ns < last {
            self.clock_back
                .get_or_insert((at_unix_ns, last - at_unix_ns));
            self.last_at_unix_ns = Some(last.max(at_unix_ns));
            return false;
        }
        let step = at_unix_ns - last;
        let silent = self
            .min_step_ns
            .is_some_and(|min| step > SILENT_STEPS * min);
        if step > 0 {
            self.min_step_ns = Some(self.min_step_ns.map_or(step, |min| min.min(step)));
        }
        if silent
            && self
                .longest_silence
                .is_none_or(|(_, longest)| step > longest)
        {
            self.longest_silence = Some((last, step));
        }
        !silent
    }

    /// What could not be judged of sampler `name`, times from `start_unix_ns`.
    pub(crate) fn unjudged(&self, name: &str, start_unix_ns: u64) -> Vec<Unjudged> {
        let at = |unix_ns: u64| unix_ns.saturating_sub(start_unix_ns);
        let mut holes = Vec::new();
        match &self.first_missed {
            // A `process=` pattern that matched nothing, a scrape refused throughout:
            // nothing of it was watched, which must not read as "it held".
            Some((_, reason)) if self.missed == self.readings => holes.push(Hole::NeverRead {
                reason: reason.clone(),
            }),
            Some((first_at, reason)) => holes.push(Hole::Missed {
                readings: self.missed,
                from_ns: at(*first_at),
                reason: reason.clone(),
            }),
            None => {}
        }
        if let Some((back_at, by_ns)) = self.clock_back {
            holes.push(Hole::ClockBack {
                by_ns,
                at_ns: at(back_at),
            });
        }
        if let Some((from, for_ns)) = self.longest_silence {
            holes.push(Hole::Silent {
                for_ns,
                from_ns: at(from),
            });
        }
        (holes.into_iter())
            .map(|hole| Unjudged {
                sampler: name.to_owned(),
                hole,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn readings_in_a_row_go_on_and_holes_are_said() {
        // (case, readings as (second, missed reason), continuity of each, what is said)
        type Case<'a> = (
            &'a str,
            Vec<(u64, Option<&'a str>)>,
            Vec<bool>,
            Vec<&'a str>,
        );
        let cases: Vec<Case<'_>> = vec![
            (
                "one a second",
                vec![(0, None), (1, None), (2, None), (3, None)],
                vec![true, true, true, true],
                vec![],
            ),
            (
                "missed two, the monitor says why",
                vec![
                    (0, None),
                    (1, Some("scrape timed out")),
                    (2, Some("x")),
                    (3, None),
                ],
                vec![true, true, true, true],
                vec![
                    "db: 2 readings missing from 1.0 s (scrape timed out); its resources are judged on the readings it has",
                ],
            ),
            (
                "a process pattern that matched nothing",
                vec![
                    (0, Some("no process matches pg")),
                    (1, Some("no process matches pg")),
                ],
                vec![true, true],
                vec![
                    "db: every reading missing (no process matches pg): nothing of it was watched",
                ],
            ),
            (
                "the clock went back",
                vec![(0, None), (1, None), (10, None), (8, None), (11, None)],
                vec![true, true, false, false, true],
                vec![
                    "db: its clock went back 2.0 s at 8.0 s; no stretch across it counts as sustained",
                    "db: no readings for 9.0 s from 1.0 s; what happened then is not known",
                ],
            ),
            (
                "a silence of 12 s",
                vec![(0, None), (1, None), (13, None), (14, None)],
                vec![true, true, false, true],
                vec!["db: no readings for 12.0 s from 1.0 s; what happened then is not known"],
            ),
        ];
        for (case, readings, continuity, said) in cases {
            let mut health = SamplerHealth::default();
            let got: Vec<bool> = readings
                .iter()
                .map(|&(at, missed)| health.add(at * S, missed))
                .collect();
            assert_eq!(got, continuity, "{case}");
            let got: Vec<String> = (health.unjudged("db", 0).iter())
                .map(crate::words::diagnosis::unjudged)
                .collect();
            assert_eq!(got, said, "{case}");
        }
    }
}
