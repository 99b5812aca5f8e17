//! The saturation point of one rising open-model load (field report 003: a ramp from 1 to
//! 50k req/s, "where does response time start to grow, and throughput stop following?").
//!
//! Three signals are read over per-second [`Window`]s, each only when it holds for
//! [`SaturationConfig::sustain_windows`] windows in a row, so that one noisy second on a
//! shared machine is not taken for a knee:
//! - *throughput*: successful responses per second fall short of the offered rate;
//! - *latency*: the chosen percentile rises well above its level early in the ramp;
//! - *errors*: the failed share of completions passes a threshold.
//!
//! The saturation point is the earliest of the three; each comes with its reason.

/// One window (usually a second) of a run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Window {
    /// Window start, from the run's start.
    pub start_ns: u64,
    /// Requests per second the schedule offered in this window.
    pub offered_per_sec: f64,
    /// Successful responses per second completed in this window.
    pub ok_per_sec: f64,
    /// Failed requests (transport errors, non-success statuses) per second completed in this window.
    pub failed_per_sec: f64,
    /// A latency percentile of the requests completed in this window (the caller picks
    /// which; p99 is usual), in nanoseconds; 0 when nothing completed.
    pub latency_ns: u64,
}

/// Thresholds of the three signals. [`Default`] gives the values `report` uses.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SaturationConfig {
    /// Throughput more than this share below the offered rate is not following it (0.05).
    pub shortfall_ratio: f64,
    /// Latency above this multiple of the early ramp's level has turned (3.0) ...
    pub latency_factor: f64,
    /// ... and only when also this far above it, so that microsecond jitter does not count (1 ms).
    pub latency_floor_ns: u64,
    /// A failed share of completions above this means errors have started (0.01).
    pub error_ratio: f64,
    /// A signal counts only when it holds for this many windows in a row (3).
    pub sustain_windows: usize,
    /// The share of the ramp's first windows whose median latency is the early level (0.1, at least 3 windows).
    pub baseline_share: f64,
}

impl Default for SaturationConfig {
    fn default() -> Self {
        SaturationConfig {
            shortfall_ratio: 0.05,
            latency_factor: 3.0,
            latency_floor_ns: 1_000_000,
            error_ratio: 0.01,
            sustain_windows: 3,
            baseline_share: 0.1,
        }
    }
}

/// Which signal turned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum TurnKind {
    /// Successful throughput stopped following the offered rate.
    Throughput,
    /// The failed share of completions passed its threshold.
    Errors,
    /// Latency rose well above its early level.
    Latency,
}

/// Where one signal turned, with what was seen against which threshold: renderers
/// word it (`report::words`).
#[derive(Clone, Debug, PartialEq)]
pub struct Turn {
    /// Start of the first window of the sustained run, from the run's start.
    pub start_ns: u64,
    /// The offered rate in that window, requests per second.
    pub offered_per_sec: f64,
    /// The windows in a row it held for ([`SaturationConfig::sustain_windows`]).
    pub windows: usize,
    /// The signal, with its figure and threshold.
    pub seen: Seen,
}

/// What a signal showed when it turned, with the threshold it passed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Seen {
    /// Successful throughput fell below the offered rate by more than a share.
    Throughput {
        /// Successful requests per second in the first window.
        ok_per_sec: f64,
        /// The share it fell by, at least ([`SaturationConfig::shortfall_ratio`]).
        shortfall_ratio: f64,
    },
    /// The failed share of completions passed its threshold.
    Errors {
        /// The failed share in the first window (0..1).
        failed_share: f64,
        /// The threshold ([`SaturationConfig::error_ratio`]).
        max_share: f64,
    },
    /// Latency rose past a multiple of its early level.
    Latency {
        /// The window's latency, nanoseconds.
        latency_ns: u64,
        /// The multiple ([`SaturationConfig::latency_factor`]).
        factor: f64,
        /// The early ramp's latency it was held to, nanoseconds.
        early_ns: u64,
    },
}

impl Turn {
    /// Which signal turned.
    pub fn kind(&self) -> TurnKind {
        match self.seen {
            Seen::Throughput { .. } => TurnKind::Throughput,
            Seen::Errors { .. } => TurnKind::Errors,
            Seen::Latency { .. } => TurnKind::Latency,
        }
    }
}

/// Why a load has no saturation point to read.
#[derive(Clone, Debug, PartialEq)]
pub enum NoRamp {
    /// Fewer loaded windows than the rule needs.
    TooFewWindows {
        /// Windows with an offered rate.
        loaded: usize,
        /// Windows the rule needs.
        needed: usize,
    },
    /// The offered rate did not rise by half from its first tenth to its last.
    Flat {
        /// Mean offered rate of the first tenth, per second.
        first_per_sec: f64,
        /// Mean offered rate of the last tenth, per second.
        last_per_sec: f64,
    },
    /// A closed-model load: its rate follows the responses.
    ClosedModel,
    /// The load model is not recorded (an imported file).
    ModelUnknown,
    /// Every record of the load times a held session by design (a `ws` or `sse` step, a
    /// `stream` step's body, a streamed gRPC call): no request's latency or throughput
    /// to read a knee from. The connections are judged on their own.
    HeldOnly,
    /// The run spans more seconds than a report keeps.
    TooLong {
        /// The most seconds kept.
        max_seconds: u64,
    },
}

/// What one load says about saturation.
#[derive(Clone, Debug, PartialEq)]
pub enum Finding {
    /// The load did not rise enough to tell (a constant rate, a closed model, too short).
    NotARamp {
        /// Why not.
        reason: NoRamp,
    },
    /// Every signal stayed healthy up to the highest offered rate.
    NoSaturation {
        /// The highest offered rate, requests per second.
        up_to_per_sec: f64,
        /// The highest successful throughput held for `sustain_windows`, per second.
        peak_ok_per_sec: f64,
    },
    /// The load outgrew the system: `point` is the earliest sustained turn.
    Saturated {
        /// The earliest turn (ties: throughput, then errors, then latency).
        point: Turn,
        /// Every signal that turned, in time order.
        turns: Vec<Turn>,
        /// The highest successful throughput held for `sustain_windows`, per second.
        peak_ok_per_sec: f64,
    },
}

/// Reads the saturation point of a rising load from its windows (in time order).
pub fn find_saturation(windows: &[Window], config: &SaturationConfig) -> Finding {
    let loaded: Vec<Window> = windows
        .iter()
        .copied()
        .filter(|w| w.offered_per_sec > 0.0)
        .collect();
    if let Err(reason) = rising(&loaded, config) {
        return Finding::NotARamp { reason };
    }
    let peak_ok_per_sec = sustained_peak(&loaded, config.sustain_windows);
    let mut turns: Vec<Turn> = [
        throughput_turn(&loaded, config),
        errors_turn(&loaded, config),
        latency_turn(&loaded, config),
    ]
    .into_iter()
    .flatten()
    .collect();
    turns.sort_by_key(|t| (t.start_ns, t.kind()));
    match turns.first().cloned() {
        Some(point) => Finding::Saturated {
            point,
            turns,
            peak_ok_per_sec,
        },
        None => Finding::NoSaturation {
            up_to_per_sec: loaded.iter().map(|w| w.offered_per_sec).fold(0.0, f64::max),
            peak_ok_per_sec,
        },
    }
}

/// A load rises when it has enough windows and its last windows offer at least 1.5x its
/// first. The very first and last windows are left out of that comparison: windows are
/// clock seconds and a run starts and ends mid-second, so both are partial, and a
/// partial last second read a ramp as flat (a partial first one, a flat load as rising).
fn rising(windows: &[Window], config: &SaturationConfig) -> Result<(), NoRamp> {
    let needed = 2 * config.sustain_windows.max(1) + 3;
    if windows.len() < needed {
        return Err(NoRamp::TooFewWindows {
            loaded: windows.len(),
            needed,
        });
    }
    let windows = &windows[1..windows.len() - 1];
    let edge = (windows.len() / 10).max(1);
    let first = mean(windows[..edge].iter().map(|w| w.offered_per_sec));
    let last = mean(
        windows[windows.len() - edge..]
            .iter()
            .map(|w| w.offered_per_sec),
    );
    if last < first * 1.5 {
        return Err(NoRamp::Flat {
            first_per_sec: first,
            last_per_sec: last,
        });
    }
    Ok(())
}

/// The first index of the first run of `sustain` `true`s.
fn first_sustained_index(turned: &[bool], sustain: usize) -> Option<usize> {
    let sustain = sustain.max(1);
    let mut run = 0;
    for (i, &turned) in turned.iter().enumerate() {
        run = if turned { run + 1 } else { 0 };
        if run == sustain {
            return Some(i + 1 - sustain);
        }
    }
    None
}

/// The first window of the first run of `sustain` windows for which `turned` holds.
fn first_sustained(
    windows: &[Window],
    sustain: usize,
    turned: impl Fn(&Window) -> bool,
) -> Option<usize> {
    let turned: Vec<bool> = windows.iter().map(turned).collect();
    first_sustained_index(&turned, sustain)
}

/// Throughput falls short when the successful answers of a window are well below what
/// was sent one answer-time earlier: completions count by completion time, so on a
/// steep ramp against a 100 ms server each window completes part of the previous
/// window's (lower) offered rate, and that is not a shortfall.
fn throughput_turn(windows: &[Window], config: &SaturationConfig) -> Option<Turn> {
    let answer_s = early_latency_ns(windows, config).map_or(0.0, |ns| (ns as f64 / 1e9).min(1.0));
    let expected: Vec<f64> = (0..windows.len())
        .map(|i| {
            let before = if i == 0 {
                0.0
            } else {
                windows[i - 1].offered_per_sec
            };
            windows[i].offered_per_sec * (1.0 - answer_s) + before * answer_s
        })
        .collect();
    let short: Vec<bool> = windows
        .iter()
        .zip(&expected)
        .map(|(w, expected)| w.ok_per_sec < expected * (1.0 - config.shortfall_ratio))
        .collect();
    let i = first_sustained_index(&short, config.sustain_windows)?;
    let w = windows[i];
    let seen = Seen::Throughput {
        ok_per_sec: w.ok_per_sec,
        shortfall_ratio: config.shortfall_ratio,
    };
    Some(turn(seen, w, config))
}

fn errors_turn(windows: &[Window], config: &SaturationConfig) -> Option<Turn> {
    let failed_share = |w: &Window| {
        let done = w.ok_per_sec + w.failed_per_sec;
        if done > 0.0 {
            w.failed_per_sec / done
        } else {
            0.0
        }
    };
    let i = first_sustained(windows, config.sustain_windows, |w| {
        failed_share(w) > config.error_ratio
    })?;
    let w = windows[i];
    let seen = Seen::Errors {
        failed_share: failed_share(&w),
        max_share: config.error_ratio,
    };
    Some(turn(seen, w, config))
}

/// The median latency of the early ramp's answered windows: the level latency turns from.
fn early_latency_ns(windows: &[Window], config: &SaturationConfig) -> Option<u64> {
    let answered: Vec<u64> = windows
        .iter()
        .filter(|w| w.ok_per_sec + w.failed_per_sec > 0.0)
        .map(|w| w.latency_ns)
        .collect();
    let early = ((answered.len() as f64 * config.baseline_share) as usize)
        .max(3)
        .min(answered.len());
    let mut early_latencies = answered[..early].to_vec();
    early_latencies.sort_unstable();
    early_latencies.get(early_latencies.len() / 2).copied()
}

fn latency_turn(windows: &[Window], config: &SaturationConfig) -> Option<Turn> {
    let answered: Vec<Window> = windows
        .iter()
        .copied()
        .filter(|w| w.ok_per_sec + w.failed_per_sec > 0.0)
        .collect();
    let baseline_ns = early_latency_ns(windows, config)?;
    let limit_ns = ((baseline_ns as f64 * config.latency_factor) as u64)
        .max(baseline_ns + config.latency_floor_ns);
    let i = first_sustained(&answered, config.sustain_windows, |w| {
        w.latency_ns > limit_ns
    })?;
    let w = answered[i];
    let seen = Seen::Latency {
        latency_ns: w.latency_ns,
        factor: config.latency_factor,
        early_ns: baseline_ns,
    };
    Some(turn(seen, w, config))
}

fn turn(seen: Seen, window: Window, config: &SaturationConfig) -> Turn {
    Turn {
        start_ns: window.start_ns,
        offered_per_sec: window.offered_per_sec,
        windows: config.sustain_windows,
        seen,
    }
}

/// The highest mean successful throughput over `sustain` consecutive windows.
fn sustained_peak(windows: &[Window], sustain: usize) -> f64 {
    windows
        .windows(sustain.max(1).min(windows.len().max(1)))
        .map(|run| mean(run.iter().map(|w| w.ok_per_sec)))
        .fold(0.0, f64::max)
}

fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, count) = values.fold((0.0, 0usize), |(sum, count), v| (sum + v, count + 1));
    if count == 0 { 0.0 } else { sum / count as f64 }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND_NS: u64 = 1_000_000_000;

    /// A ramp of `seconds` windows from `from` to `to` req/s against a server that serves
    /// at most `capacity` successfully, answers in `base_ms` below it and queues above it
    /// (latency growing by 50 ms a second), failing the excess when `fails` is set.
    fn ramp(
        seconds: u64,
        from: f64,
        to: f64,
        capacity: f64,
        base_ms: f64,
        fails: bool,
    ) -> Vec<Window> {
        let mut over_s = 0.0;
        (0..seconds)
            .map(|s| {
                let offered = from + (to - from) * s as f64 / (seconds - 1) as f64;
                let ok = offered.min(capacity);
                if offered > capacity {
                    over_s += 1.0;
                }
                let failed = if fails { offered - ok } else { 0.0 };
                let latency_ms = base_ms + 50.0 * over_s;
                Window {
                    start_ns: s * SECOND_NS,
                    offered_per_sec: offered,
                    ok_per_sec: ok,
                    failed_per_sec: failed,
                    latency_ns: (latency_ms * 1e6) as u64,
                }
            })
            .collect()
    }

    /// A steep ramp against a 200 ms server that keeps up: each second completes a
    /// fifth of the previous second's (lower) rate, which is not a shortfall.
    #[test]
    fn answers_that_take_a_fifth_of_a_second_are_not_a_shortfall_on_a_steep_ramp() {
        let windows: Vec<Window> = (0..12u64)
            .map(|i| {
                let offered = 50.0 + 145.0 * i as f64;
                let before = if i == 0 { 0.0 } else { offered - 145.0 };
                Window {
                    start_ns: i * SECOND_NS,
                    offered_per_sec: offered,
                    ok_per_sec: 0.8 * offered + 0.2 * before,
                    failed_per_sec: 0.0,
                    latency_ns: 200_000_000,
                }
            })
            .collect();
        let finding = find_saturation(&windows, &SaturationConfig::default());
        assert!(
            matches!(finding, Finding::NoSaturation { .. }),
            "{finding:?}"
        );
    }

    #[test]
    fn finds_the_knee_of_a_ramp_within_a_window() {
        // (capacity, fails): the offered rate at the knee is within one window's rise of the capacity.
        for (capacity, fails) in [
            (400.0, false),
            (2500.0, true),
            (10_000.0, false),
            (7000.0, true),
        ] {
            let windows = ramp(120, 1.0, 12_000.0, capacity, 0.5, fails);
            let Finding::Saturated {
                point,
                peak_ok_per_sec,
                ..
            } = find_saturation(&windows, &SaturationConfig::default())
            else {
                panic!("capacity {capacity}: not saturated");
            };
            let step = 12_000.0 / 119.0;
            assert!(
                (point.offered_per_sec - capacity).abs() <= 2.0 * step,
                "capacity {capacity}: knee at {} ({:?})",
                point.offered_per_sec,
                point.seen
            );
            assert!(
                (peak_ok_per_sec - capacity).abs() < 1.0,
                "peak {peak_ok_per_sec}"
            );
        }
    }

    #[test]
    fn names_every_signal_that_turned_with_its_reason() {
        let windows = ramp(60, 100.0, 6000.0, 3000.0, 2.0, true);
        let Finding::Saturated { point, turns, .. } =
            find_saturation(&windows, &SaturationConfig::default())
        else {
            panic!("not saturated");
        };
        // Past 3000/s the excess fails at once (3.2% at 3100/s) and queues (latency turns in
        // the same window); the shortfall passes 5% one window later, at 3200/s.
        let kinds: Vec<(TurnKind, f64)> = (turns.iter())
            .map(|t| (t.kind(), t.offered_per_sec))
            .collect();
        assert_eq!(
            kinds,
            [
                (TurnKind::Errors, 3100.0),
                (TurnKind::Latency, 3100.0),
                (TurnKind::Throughput, 3200.0)
            ]
        );
        let Seen::Errors {
            failed_share,
            max_share,
        } = point.seen
        else {
            panic!("the errors turned first: {point:?}");
        };
        assert_eq!(
            (
                format!("{:.1}", failed_share * 100.0),
                max_share,
                point.windows
            ),
            ("3.2".to_owned(), 0.01, 3)
        );
        assert!(
            matches!(turns[2].seen, Seen::Throughput { ok_per_sec, shortfall_ratio }
                if ok_per_sec == 3000.0 && shortfall_ratio == 0.05),
            "{:?}",
            turns[2]
        );
    }

    #[test]
    fn a_ramp_that_never_saturates_says_so() {
        let windows = ramp(60, 10.0, 1000.0, 1e9, 1.0, false);
        let finding = find_saturation(&windows, &SaturationConfig::default());
        assert!(
            matches!(finding, Finding::NoSaturation { up_to_per_sec, .. } if up_to_per_sec == 1000.0)
        );
    }

    #[test]
    fn one_noisy_second_is_not_a_knee() {
        let mut windows = ramp(60, 10.0, 1000.0, 1e9, 1.0, false);
        windows[30].ok_per_sec = 0.0;
        windows[31].latency_ns = 900_000_000;
        windows[40].failed_per_sec = 500.0;
        assert!(matches!(
            find_saturation(&windows, &SaturationConfig::default()),
            Finding::NoSaturation { .. }
        ));
    }

    #[test]
    fn microsecond_jitter_under_the_floor_is_not_a_latency_turn() {
        // 100 µs early, 800 µs later: 8x, but under the 1 ms floor.
        let mut windows = ramp(60, 10.0, 1000.0, 1e9, 0.1, false);
        for w in &mut windows[30..] {
            w.latency_ns = 800_000;
        }
        assert!(matches!(
            find_saturation(&windows, &SaturationConfig::default()),
            Finding::NoSaturation { .. }
        ));
    }

    #[test]
    fn loads_that_do_not_rise_are_not_ramps() {
        let flat = ramp(60, 1000.0, 1000.0, 500.0, 1.0, false);
        let short = ramp(5, 10.0, 1000.0, 500.0, 1.0, false);
        let idle: Vec<Window> = ramp(60, 10.0, 1000.0, 500.0, 1.0, false)
            .into_iter()
            .map(|w| Window {
                offered_per_sec: 0.0,
                ..w
            })
            .collect();
        let too_few = |loaded| NoRamp::TooFewWindows { loaded, needed: 9 };
        let rows = [
            (
                "flat",
                flat,
                NoRamp::Flat {
                    first_per_sec: 1000.0,
                    last_per_sec: 1000.0,
                },
            ),
            ("short", short, too_few(5)),
            ("closed model", idle, too_few(0)),
            ("empty", Vec::new(), too_few(0)),
        ];
        for (name, windows, want) in rows {
            let finding = find_saturation(&windows, &SaturationConfig::default());
            assert_eq!(finding, Finding::NotARamp { reason: want }, "{name}");
        }
    }

    /// Windows are clock seconds: a run that starts or ends mid-second has a partial
    /// first or last one, which must not decide whether the load rose.
    #[test]
    fn partial_first_and_last_seconds_do_not_decide_whether_a_load_rose() {
        let partial = |mut windows: Vec<Window>, index: usize, share: f64| {
            let w = &mut windows[index];
            w.offered_per_sec *= share;
            w.ok_per_sec *= share;
            windows
        };
        let ramp_cut_short = partial(ramp(10, 10.0, 100.0, 1000.0, 1.0, false), 9, 0.1);
        let ramp_found = find_saturation(&ramp_cut_short, &SaturationConfig::default());
        assert!(
            !matches!(ramp_found, Finding::NotARamp { .. }),
            "a ramp whose last second is a tenth long: {ramp_found:?}"
        );
        let flat_started_late = partial(ramp(10, 50.0, 50.0, 1000.0, 1.0, false), 0, 0.3);
        let flat_found = find_saturation(&flat_started_late, &SaturationConfig::default());
        assert!(
            matches!(
                flat_found,
                Finding::NotARamp {
                    reason: NoRamp::Flat { .. }
                }
            ),
            "a flat load whose first second is 0.3 long: {flat_found:?}"
        );
    }
}
