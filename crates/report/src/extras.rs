//! Our additions to vegeta's report: [`RunFacts`] (what the inputs say about the run:
//! asked rates, unsent requests, the generator's CPU, the stop reason) and [`Extras`],
//! the rows built from them for one report. Only facts the inputs hold become rows: a
//! vegeta import has no send lag or CPU, and its report says nothing rather than zeros.

use analysis::Finding;
use record::{
    AttackEnd, AttackInfo, InputFormat, LoadModel, Protocol, RunTables, SourceSummary, StopReason,
};

use crate::extra_rows::{AskedRate, Extras, GeneratorUse, RunShape};
use crate::metrics::{AttackActivity, Report};
use crate::resources::ResourceSummary;
use crate::warnings::Warning;
use units::go_seconds;

/// What one attack (merged across inputs by name) asked for.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct AttackFacts {
    pub model: Option<LoadModel>,
    /// Summed over the inputs that ran this attack; `None` if any of them cannot say.
    pub asked_rate_per_sec: Option<f64>,
    pub unsent: u64,
    unknown_rate: bool,
    /// Shards of one run (`attack -shard`): their asked requests and longest asked
    /// span, made one rate at the end. Summing each shard's own rate would count the
    /// stripe offsets of their spans as extra load.
    shard_asked: u64,
    shard_span_ns: u64,
    /// A flow: it asks for flow starts, so it is held to its starts, not its requests.
    pub flow: bool,
    /// A closed model's users at most at once (the header's: a shard's is the whole
    /// run's, and separate runs merged add up).
    pub users: Option<u64>,
}

impl AttackFacts {
    /// A shard's asked requests and span, kept apart until [`AttackFacts::close_shards`].
    fn merge_shard(&mut self, model: LoadModel, end: &AttackEnd) {
        self.model = self
            .model
            .filter(|&m| m != LoadModel::Unknown)
            .or(Some(model));
        self.shard_asked += end.asked;
        self.shard_span_ns = self.shard_span_ns.max(end.asked_span_ns);
        self.unsent += end.unsent;
    }

    fn close_shards(&mut self) {
        if self.shard_asked >= 2 && self.shard_span_ns > 0 && !self.unknown_rate {
            let rate = self.shard_asked as f64 / go_seconds(self.shard_span_ns);
            self.asked_rate_per_sec = Some(self.asked_rate_per_sec.unwrap_or(0.0) + rate);
        }
    }

    fn merge(&mut self, model: LoadModel, asked_rate_per_sec: Option<f64>, unsent: u64) {
        if self.model.is_none_or(|m| m == LoadModel::Unknown) {
            self.model = Some(model);
        }
        match asked_rate_per_sec {
            Some(rate) if !self.unknown_rate => {
                self.asked_rate_per_sec = Some(self.asked_rate_per_sec.unwrap_or(0.0) + rate);
            }
            _ => {
                self.unknown_rate = true;
                self.asked_rate_per_sec = None;
            }
        }
        self.unsent += unsent;
    }
}

/// What the inputs say about the run besides their records.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunFacts {
    /// Some input is a record file written by a generator, so zero lag means zero.
    pub lag_recorded: bool,
    /// By merged attack id.
    pub attacks: Vec<AttackFacts>,
    /// The generator's own CPU and memory, when the inputs recorded them.
    pub generator: Option<GeneratorUse>,
    /// How the runs ended, when an input is a record file.
    pub stop: Option<String>,
    /// The system under test, when the inputs hold resource samples.
    pub resources: Option<ResourceSummary>,
    /// The saturation point of the whole run (set by the pipeline from its seconds).
    pub saturation: Option<Finding>,
    /// The coarsest `-precision` the generators ran with, when they recorded it.
    pub precision_ns: Option<u64>,
    /// The run's first intended send, unix ns (set by the pipeline).
    pub start_unix_ns: Option<u64>,
    /// Each watched resource against its limit (set by the pipeline from the samples).
    pub watched: Option<Vec<analysis::Watched>>,
    /// What the samples leave unjudged, and why (set by the pipeline with `watched`).
    pub unjudged: Vec<analysis::Unjudged>,
    /// The most requests in flight at once, summed over the inputs' generator stats.
    pub in_flight_peak: u64,
    /// The open-model attacks' in-flight caps, summed; `None` without one.
    pub in_flight_cap: Option<u64>,
    /// Each replay attack against its original (set by the pipeline).
    pub replay: Vec<crate::replay::ReplayFigures>,
    /// What the generator must achieve for the run to say anything about the server:
    /// the report's defaults, or a plan's `[slo]` (set by the caller).
    pub health: analysis::GeneratorHealth,
    /// The least success ratio of a load that was served: a plan's `[slo] success`, or
    /// `None` for the report's 99%.
    pub min_success_ratio: Option<f64>,
    /// Addresses every request to which failed to connect (set by the pipeline).
    pub unreached: Vec<analysis::diagnosis::Unreached>,
    /// How the failed requests failed, when some did (set by the pipeline).
    pub failures: Option<analysis::diagnosis::Failures>,
    /// The held steps' connection limits: connections refused past the most held at
    /// once (set by the pipeline; judged as watched resources are).
    pub connection_limits: Vec<analysis::Watched>,
    /// The traced requests worth looking at (`attack -trace`; set by the pipeline).
    pub traces: Option<crate::TracedRequests>,
}

impl RunFacts {
    /// Gathers facts from every input's summary; attack ids are the merged `tables`'.
    pub fn from_inputs(summaries: &[SourceSummary], tables: &RunTables) -> RunFacts {
        let mut facts = RunFacts {
            attacks: vec![AttackFacts::default(); tables.attacks.len()],
            ..RunFacts::default()
        };
        let (mut cpu_ns, mut sent, mut peak_rss_bytes, mut measured) = (0u64, 0u64, 0u64, false);
        let mut stops: Vec<String> = Vec::new();
        for summary in summaries {
            facts.merge_attacks(summary, tables);
            if !written_by_a_generator(summary) {
                continue;
            }
            facts.lag_recorded = true;
            facts.in_flight_peak += summary.stats.iter().map(|s| s.in_flight).max().unwrap_or(0);
            facts.in_flight_cap = open_model_cap(summary, facts.in_flight_cap);
            facts.precision_ns = facts.precision_ns.max(summary.header.precision_ns);
            if let Some((cpu, requests, rss)) = generator_use(summary) {
                (cpu_ns, sent) = (cpu_ns + cpu, sent + requests);
                peak_rss_bytes = peak_rss_bytes.max(rss);
                measured = true;
            }
            let stop = stop_text(summary);
            if !stops.contains(&stop) {
                stops.push(stop);
            }
        }
        facts.generator = measured.then(|| GeneratorUse {
            cpu_ns,
            cpu_per_request_ns: cpu_ns / sent.max(1),
            peak_rss_bytes,
        });
        facts.stop = (!stops.is_empty()).then(|| stops.join(" + "));
        facts.attacks.iter_mut().for_each(AttackFacts::close_shards);
        facts
    }

    /// `Ok` when some attack is an open-model one (the only load whose offered rate
    /// follows a schedule, so the only one with a saturation point; closed-model
    /// attacks beside it are left out of the windows); else why not.
    pub fn open_model(&self) -> Result<(), analysis::NoRamp> {
        let mut models = self.attacks.iter().filter_map(|a| a.model);
        if models.clone().any(|m| m == LoadModel::Open) {
            return Ok(());
        }
        match model_name(&mut models) {
            "closed" => Err(analysis::NoRamp::ClosedModel),
            _ => Err(analysis::NoRamp::ModelUnknown),
        }
    }

    fn merge_attacks(&mut self, summary: &SourceSummary, tables: &RunTables) {
        let end = summary.end.as_ref();
        for (index, info) in summary.header.attacks.iter().enumerate() {
            let Some(id) = tables.attacks.iter().position(|a| a.name == info.name) else {
                continue;
            };
            let attack_end = end.and_then(|e| e.attacks.get(index));
            let shards = summary.header.shard.as_ref().map_or(1, |s| s.count).max(1);
            if let Some(facts) = self.attacks.get_mut(id) {
                facts.flow |= info.flow;
                if let (LoadModel::Closed, Some(users)) = (info.model, info.concurrency) {
                    let before = facts.users.unwrap_or(0);
                    let after = if shards > 1 {
                        before.max(users)
                    } else {
                        before + users
                    };
                    facts.users = Some(after);
                }
            }
            if let (Some(facts), true, LoadModel::Open) =
                (self.attacks.get_mut(id), shards > 1, info.model)
            {
                match attack_end {
                    Some(attack_end) => facts.merge_shard(info.model, attack_end),
                    // A shard cut short: its share of the header's (whole-run) rate.
                    None => facts.merge(
                        info.model,
                        asked_rate(info, None).map(|rate| rate / shards as f64),
                        0,
                    ),
                }
                continue;
            }
            if let Some(facts) = self.attacks.get_mut(id) {
                facts.merge(
                    info.model,
                    asked_rate(info, attack_end),
                    attack_end.map_or(0, |e| e.unsent),
                );
            }
        }
    }
}

/// `cap` plus the in-flight caps of the input's open-model attacks.
fn open_model_cap(summary: &SourceSummary, cap: Option<u64>) -> Option<u64> {
    summary
        .header
        .attacks
        .iter()
        .filter(|attack| attack.model == LoadModel::Open)
        .filter_map(|attack| attack.concurrency)
        .fold(cap, |sum, each| Some(sum.unwrap_or(0) + each))
}

/// A record file from `attack` (not one `encode` made from an import, whose attacks'
/// model is unknown): its lag, CPU and end are measured, not missing.
fn written_by_a_generator(summary: &SourceSummary) -> bool {
    summary.format == InputFormat::Binary
        && summary
            .header
            .attacks
            .iter()
            .any(|attack| attack.model != LoadModel::Unknown)
}

/// The asked rate of an open-model attack: asked requests over the asked span (the
/// same shape as vegeta's achieved rate, requests over the send span), else the
/// header's constant rate.
fn asked_rate(info: &AttackInfo, end: Option<&AttackEnd>) -> Option<f64> {
    if info.model != LoadModel::Open {
        return None;
    }
    match end {
        Some(end) if end.asked >= 2 && end.asked_span_ns > 0 => {
            Some(end.asked as f64 / go_seconds(end.asked_span_ns))
        }
        _ => info
            .rate_per_sec
            .filter(|rate| rate.is_finite() && *rate > 0.0),
    }
}

/// (cpu, requests sent, peak RSS) from the end block, else the last stats sample.
fn generator_use(summary: &SourceSummary) -> Option<(u64, u64, u64)> {
    let peak_sampled = summary.stats.iter().map(|s| s.rss_bytes).max().unwrap_or(0);
    if let Some(end) = &summary.end {
        let sent: u64 = end.attacks.iter().map(|a| a.sent).sum();
        let sent = if sent == 0 { summary.records } else { sent };
        return Some((end.cpu_ns, sent, end.peak_rss_bytes.max(peak_sampled)));
    }
    let last = summary.stats.last()?;
    Some((last.cpu_ns, last.sent.max(1), peak_sampled))
}

fn stop_text(summary: &SourceSummary) -> String {
    let Some(end) = &summary.end else {
        return if summary.torn.is_some() {
            "cut short".to_owned()
        } else {
            "no end record".to_owned()
        };
    };
    let reason = match end.reason {
        StopReason::Completed => "completed",
        StopReason::Interrupted => "interrupted",
        StopReason::StopRule => "stop rule",
        StopReason::Failed => "failed",
    };
    if end.detail.is_empty() {
        reason.to_owned()
    } else {
        format!("{reason} ({})", end.detail)
    }
}

/// Which records a report covers, for the rows that only make sense for some.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The whole input: every row.
    Run,
    /// One attack: its lag and asked rate, not the shared generator's CPU.
    Attack(u16),
    /// A slice by target or status: send lag only.
    Part,
}

impl Extras {
    /// The extra rows of `report` for `scope` (the whole run, an attack or a slice).
    pub fn build(report: &Report, facts: &RunFacts, scope: Scope) -> Extras {
        let attacks = scope_attacks(report, facts, scope);
        let send_lag =
            (facts.lag_recorded || report.send_lag.max_ns > 0).then_some(report.send_lag);
        let precision_ns = send_lag.and(facts.precision_ns);
        let asked = asked_rate_row(report, facts, &attacks);
        let whole_run = scope == Scope::Run;
        let run = facts
            .stop
            .as_ref()
            .filter(|_| whole_run)
            .map(|stop| RunShape {
                model: model_name(attacks.iter().filter_map(|&id| facts.attacks[id].model)),
                attacks: attacks.len(),
                stop: stop.clone(),
            });
        // A flow's asked and achieved rates both count its runs started: the gap between
        // two starts is what a step's lag is weighed against. A slice (a step, a target)
        // sends into the run's slots: the run's gap.
        let pace = match scope {
            Scope::Part => run_pace(facts),
            _ => asked
                .as_ref()
                .map(|asked| analysis::Pace::Open {
                    asked_per_sec: asked.asked_per_sec,
                    sent_per_sec: asked.achieved_per_sec,
                })
                .or_else(|| closed_pace(report, facts, &attacks)),
        };
        let lag =
            send_lag.map(|lag| (facts.health).weigh_lag(lag.p99_ns, report.latencies.p50_ns, pace));
        let warnings = assess(lag, asked.as_ref(), &facts.health);
        Extras {
            diagnosis: None,
            warnings,
            send_lag,
            lag,
            precision_ns,
            asked,
            generator: facts.generator.filter(|_| whole_run),
            run,
            protocols: protocol_mix(report),
            resources: facts.resources.clone().filter(|_| whole_run),
            saturation: facts.saturation.clone().filter(|_| whole_run),
            replay: if whole_run {
                facts.replay.clone()
            } else {
                Vec::new()
            },
            traces: facts.traces.clone().filter(|_| whole_run),
        }
    }
}

/// The warnings the extra rows call for: a lag that weighs against the answers
/// ([`analysis::LagWeight::Heavy`]; one small beside them is not a warning), a rate
/// short of `health`'s share.
fn assess(
    lag: Option<analysis::Lag>,
    asked: Option<&AskedRate>,
    health: &analysis::GeneratorHealth,
) -> Vec<Warning> {
    let mut warnings = Vec::new();
    if let Some(lag) = lag.filter(|lag| lag.weight == analysis::LagWeight::Heavy) {
        warnings.push(Warning::FellBehind { lag });
    }
    if let Some(asked) = asked {
        if asked.ratio < health.min_achieved_ratio {
            warnings.push(Warning::RateShort {
                min_ratio: health.min_achieved_ratio,
                asked_per_sec: asked.asked_per_sec,
                achieved_per_sec: asked.achieved_per_sec,
                unsent: asked.unsent,
            });
        } else if asked.unsent > 0 {
            warnings.push(Warning::Unsent {
                unsent: asked.unsent,
            });
        }
    }
    warnings
}

/// [`Extras::protocols`].
fn protocol_mix(report: &Report) -> Option<Vec<(Protocol, u64)>> {
    report
        .protocols
        .iter()
        .any(|&(protocol, _)| protocol != Protocol::Http1)
        .then(|| report.protocols.clone())
}

/// The attack ids a report covers: those with requests or unsent ones.
/// The whole run's pace, for a slice of it: every attack open with an asked rate, and
/// nothing due left unsent (its own shortfall is the run's warning, not a slice's).
fn run_pace(facts: &RunFacts) -> Option<analysis::Pace> {
    let asked_per_sec: f64 = (facts.attacks.iter())
        .map(|attack| attack.asked_rate_per_sec)
        .sum::<Option<f64>>()?;
    let delivered = facts.attacks.iter().all(|attack| attack.unsent == 0);
    (delivered && asked_per_sec > 0.0).then_some(analysis::Pace::Open {
        asked_per_sec,
        sent_per_sec: asked_per_sec,
    })
}

/// The users of `attacks`, every one a closed model, and the requests they sent a
/// second: a user's gap between two sends, which its lag is weighed against.
fn closed_pace(report: &Report, facts: &RunFacts, attacks: &[usize]) -> Option<analysis::Pace> {
    let users = (attacks.iter())
        .map(|&id| {
            facts.attacks[id]
                .users
                .filter(|_| facts.attacks[id].model == Some(LoadModel::Closed))
        })
        .sum::<Option<u64>>()?;
    (users > 0).then_some(analysis::Pace::Closed {
        users,
        requests_per_sec: report.rate_per_sec,
    })
}

fn scope_attacks(report: &Report, facts: &RunFacts, scope: Scope) -> Vec<usize> {
    let active = |id: usize| {
        report.attacks.get(id).is_some_and(|a| a.requests > 0)
            || facts.attacks.get(id).is_some_and(|a| a.unsent > 0)
    };
    match scope {
        Scope::Run => (0..facts.attacks.len()).filter(|&id| active(id)).collect(),
        Scope::Attack(id) => vec![usize::from(id)]
            .into_iter()
            .filter(|&id| id < facts.attacks.len())
            .collect(),
        Scope::Part => Vec::new(),
    }
}

/// Asked against achieved, attack by attack (each at vegeta's requests over send span),
/// so attacks of different lengths mixed in one run compare like with like.
fn asked_rate_row(report: &Report, facts: &RunFacts, attacks: &[usize]) -> Option<AskedRate> {
    if attacks.is_empty() || report.requests < 2 || report.duration_ns == 0 {
        return None;
    }
    let (mut asked_per_sec, mut achieved_per_sec) = (0.0, 0.0);
    for &id in attacks {
        asked_per_sec += facts.attacks[id].asked_rate_per_sec?;
        let held = if facts.attacks[id].flow {
            AttackActivity::flow_starts_per_sec
        } else {
            AttackActivity::rate_per_sec
        };
        achieved_per_sec += report.attacks.get(id).map_or(0.0, held);
    }
    Some(AskedRate {
        asked_per_sec,
        achieved_per_sec,
        ratio: achieved_per_sec / asked_per_sec,
        unsent: attacks.iter().map(|&id| facts.attacks[id].unsent).sum(),
    })
}

fn model_name(models: impl Iterator<Item = LoadModel>) -> &'static str {
    let mut seen: Option<LoadModel> = None;
    for model in models {
        match seen {
            None => seen = Some(model),
            Some(first) if first != model => return "mixed",
            Some(_) => {}
        }
    }
    match seen {
        Some(LoadModel::Open) => "open",
        Some(LoadModel::Closed) => "closed",
        _ => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A send lag p99 beside answers of `p50_ms`, weighed by the report's defaults.
    fn lag(p99_ns: u64, p50_ms: u64) -> analysis::Lag {
        analysis::GeneratorHealth::default().weigh_lag(p99_ns, p50_ms * 1_000_000, None)
    }

    fn asked(asked_per_sec: f64, achieved_per_sec: f64, unsent: u64) -> AskedRate {
        AskedRate {
            asked_per_sec,
            achieved_per_sec,
            ratio: achieved_per_sec / asked_per_sec,
            unsent,
        }
    }

    #[test]
    fn warns_only_past_the_limits() {
        let rows: &[(Option<analysis::Lag>, Option<AskedRate>, &[&str])] = &[
            (None, None, &[]),
            (Some(lag(1_000_000, 0)), Some(asked(100.0, 99.0, 0)), &[]),
            (
                Some(lag(3_200_000, 0)),
                None,
                &[
                    "the generator fell behind: send lag p99 was 3.2ms (> 1ms, and not under \
                     the median latency 0s); latencies above include the generator's own \
                     delay.",
                ],
            ),
            // Small beside 1 s answers: no banner (docs/DIAGNOSIS.md).
            (Some(lag(3_200_000, 1000)), None, &[]),
            (
                None,
                Some(asked(1000.0, 912.4, 0)),
                &[
                    "the generator sent 912.40 req/s of the 1000.00 asked (91.24% < 99%); \
                   the server saw less load than asked.",
                ],
            ),
            (
                Some(lag(2_000_001, 1)),
                Some(asked(1000.0, 500.0, 7)),
                &[
                    "send lag p99 was 2ms",
                    "(50.00% < 99%); the server saw less load than asked. 7 requests were \
                     due but never sent.",
                ],
            ),
            (
                None,
                Some(asked(100.0, 100.0, 3)),
                &["3 requests were due but never sent"],
            ),
        ];
        for (lag, asked, want) in rows {
            let health = analysis::GeneratorHealth::default();
            let got: Vec<String> = assess(*lag, asked.as_ref(), &health)
                .iter()
                .map(ToString::to_string)
                .collect();
            assert_eq!(got.len(), want.len(), "{got:?}");
            for (got, want) in got.iter().zip(want.iter()) {
                assert!(got.contains(want), "{got}\nwant {want}");
            }
        }
    }

    use record::{GeneratorStats, RunEnd, RunHeader, TornTail};

    fn attack(name: &str, model: LoadModel, rate: Option<f64>) -> AttackInfo {
        AttackInfo {
            name: name.to_owned(),
            model,
            rate_per_sec: rate,
            ..AttackInfo::default()
        }
    }

    fn summary(
        format: InputFormat,
        attacks: Vec<AttackInfo>,
        end: Option<RunEnd>,
    ) -> SourceSummary {
        SourceSummary {
            name: "run.llr".to_owned(),
            format,
            header: RunHeader {
                attacks,
                ..RunHeader::default()
            },
            stats: Vec::new(),
            end,
            torn: None,
            records: 100,
            samples: record::SampleSummary::default(),
            logged: 0,
        }
    }

    fn tables(names: &[&str]) -> RunTables {
        RunTables {
            attacks: names
                .iter()
                .map(|n| attack(n, LoadModel::Unknown, None))
                .collect(),
            ..RunTables::default()
        }
    }

    #[test]
    fn asked_rate_prefers_the_end_block() {
        let open = attack("a", LoadModel::Open, Some(500.0));
        let end = |asked, span_ns| AttackEnd {
            asked,
            sent: asked,
            unsent: 0,
            asked_span_ns: span_ns,
        };
        let rows: &[(AttackInfo, Option<AttackEnd>, Option<f64>)] = &[
            (open.clone(), Some(end(1000, 2_000_000_000)), Some(500.0)),
            (open.clone(), None, Some(500.0)),
            // No span to divide by: fall back to the header.
            (open, Some(end(1, 0)), Some(500.0)),
            (attack("a", LoadModel::Open, None), None, None),
            (
                attack("a", LoadModel::Open, Some(f64::INFINITY)),
                None,
                None,
            ),
            (attack("a", LoadModel::Closed, Some(5.0)), None, None),
            (attack("a", LoadModel::Unknown, Some(5.0)), None, None),
        ];
        for (info, end, want) in rows {
            assert_eq!(asked_rate(info, end.as_ref()), *want, "{info:?} {end:?}");
        }
    }

    #[test]
    fn facts_merge_inputs_by_attack_name() {
        let end = RunEnd {
            reason: StopReason::Interrupted,
            attacks: vec![AttackEnd {
                asked: 100,
                sent: 90,
                unsent: 10,
                asked_span_ns: 1_000_000_000,
            }],
            cpu_ns: 9_000,
            peak_rss_bytes: 1 << 20,
            ..RunEnd::default()
        };
        let binary = summary(
            InputFormat::Binary,
            vec![attack("b", LoadModel::Open, Some(100.0))],
            Some(end),
        );
        let mut cut = summary(
            InputFormat::Binary,
            vec![attack("b", LoadModel::Open, Some(50.0))],
            None,
        );
        cut.stats.push(GeneratorStats {
            cpu_ns: 1_000,
            sent: 10,
            rss_bytes: 4 << 20,
            ..GeneratorStats::default()
        });
        cut.torn = Some(TornTail {
            offset: 1,
            skipped_bytes: 2,
            reason: "x".to_owned(),
        });
        let import = summary(
            InputFormat::Json,
            vec![attack("", LoadModel::Unknown, None)],
            None,
        );
        let facts = RunFacts::from_inputs(&[binary, cut, import], &tables(&["b", ""]));
        assert!(facts.lag_recorded);
        assert_eq!(facts.attacks[0].asked_rate_per_sec, Some(150.0));
        assert_eq!(facts.attacks[0].unsent, 10);
        assert_eq!(facts.attacks[0].model, Some(LoadModel::Open));
        assert_eq!(facts.attacks[1].asked_rate_per_sec, None);
        assert_eq!(
            facts.generator,
            Some(GeneratorUse {
                cpu_ns: 10_000,
                cpu_per_request_ns: 100,
                peak_rss_bytes: 4 << 20
            })
        );
        assert_eq!(facts.stop.as_deref(), Some("interrupted + cut short"));
    }

    #[test]
    fn imports_have_no_run_facts() {
        let import = summary(
            InputFormat::VegetaCsv,
            vec![attack("", LoadModel::Unknown, None)],
            None,
        );
        let facts = RunFacts::from_inputs(&[import], &tables(&[""]));
        assert_eq!(
            (facts.lag_recorded, facts.generator, facts.stop),
            (false, None, None)
        );
    }

    #[test]
    fn rows_depend_on_scope_and_data() {
        use crate::metrics::Metrics;
        let record = |attack: u16, ms: u64| record::Record {
            attack,
            intended_unix_ns: ms * 1_000_000,
            send_lag_ns: 5_000,
            latency_ns: 1_000_000,
            status: 200,
            ..record::Record::default()
        };
        let mut metrics = Metrics::new(None);
        metrics.add_all(&[record(0, 0), record(0, 10), record(1, 5), record(1, 15)]);
        let report = metrics.close(&RunTables::default());
        let open = |rate| AttackFacts {
            model: Some(LoadModel::Open),
            asked_rate_per_sec: rate,
            ..AttackFacts::default()
        };
        let facts = |attacks: Vec<AttackFacts>| RunFacts {
            lag_recorded: true,
            attacks,
            generator: Some(GeneratorUse {
                cpu_ns: 1,
                cpu_per_request_ns: 1,
                peak_rss_bytes: 1,
            }),
            stop: Some("completed".to_owned()),
            resources: None,
            saturation: None,
            precision_ns: Some(100_000),
            ..RunFacts::default()
        };
        // (facts, scope, lag row, asked rate, generator row, run row)
        let rows: Vec<(RunFacts, Scope, bool, Option<f64>, bool, bool)> = vec![
            (
                facts(vec![open(Some(100.0)), open(Some(100.0))]),
                Scope::Run,
                true,
                Some(200.0),
                true,
                true,
            ),
            // A closed attack has no asked rate, so the run has none.
            (
                facts(vec![
                    open(Some(100.0)),
                    AttackFacts {
                        model: Some(LoadModel::Closed),
                        ..AttackFacts::default()
                    },
                ]),
                Scope::Run,
                true,
                None,
                true,
                true,
            ),
            (
                facts(vec![open(Some(100.0)), open(None)]),
                Scope::Attack(0),
                true,
                Some(100.0),
                false,
                false,
            ),
            (
                facts(vec![open(Some(100.0)), open(Some(1.0))]),
                Scope::Part,
                true,
                None,
                false,
                false,
            ),
            (RunFacts::default(), Scope::Run, true, None, false, false),
        ];
        for (facts, scope, lag, asked, generator, run) in rows {
            let extras = Extras::build(&report, &facts, scope);
            let got = (
                extras.send_lag.is_some(),
                extras.asked.map(|a| a.asked_per_sec),
                extras.generator.is_some(),
                extras.run.is_some(),
            );
            assert_eq!(got, (lag, asked, generator, run), "{scope:?} {facts:?}");
        }
        // Each attack's achieved rate is its own requests over its own send span.
        let extras = Extras::build(
            &report,
            &facts(vec![open(Some(100.0)), open(Some(100.0))]),
            Scope::Run,
        );
        assert_eq!(extras.asked.map(|a| a.achieved_per_sec), Some(400.0));
    }

    /// Timer jitter at a low rate: 2 ms of send lag beside 1 ms answers, at 100/s
    /// delivered (a 10 ms gap between sends), is not a generator that fell behind; the
    /// same lag with the rate not delivered is.
    /// 200 requests at 100 a second, each 2 ms late, with 1 ms answers.
    fn two_ms_late_at_100_a_second() -> Report {
        let record = |i: u64| record::Record {
            intended_unix_ns: i * 10_000_000,
            send_lag_ns: 2_000_000,
            latency_ns: 1_000_000,
            status: 200,
            ..record::Record::default()
        };
        let mut metrics = crate::metrics::Metrics::new(None);
        metrics.add_all(&(0..200).map(record).collect::<Vec<_>>());
        metrics.close(&RunTables::default())
    }

    #[test]
    fn a_lag_under_half_the_send_gap_with_the_rate_delivered_is_no_warning() {
        let report = two_ms_late_at_100_a_second();
        // (rate asked, requests due and never sent, the scope, the lag's weight, warnings):
        // a slice (`-by=step`) is weighed against the run's gap, when the run delivered.
        let rows = [
            (100.0, 0, Scope::Run, analysis::LagWeight::Light, 0),
            (150.0, 0, Scope::Run, analysis::LagWeight::Heavy, 2),
            (100.0, 0, Scope::Part, analysis::LagWeight::Light, 0),
            (100.0, 5, Scope::Part, analysis::LagWeight::Heavy, 1),
        ];
        for (asked, unsent, scope, weight, warnings) in rows {
            let facts = RunFacts {
                lag_recorded: true,
                attacks: vec![AttackFacts {
                    model: Some(LoadModel::Open),
                    asked_rate_per_sec: Some(asked),
                    unsent,
                    ..AttackFacts::default()
                }],
                ..RunFacts::default()
            };
            let extras = Extras::build(&report, &facts, scope);
            assert_eq!(
                extras.lag.map(|lag| lag.weight),
                Some(weight),
                "{asked}/s {scope:?}"
            );
            assert_eq!(
                extras.warnings.len(),
                warnings,
                "{asked}/s {scope:?}: {:?}",
                extras.warnings
            );
        }
    }

    #[test]
    fn a_closed_models_lag_is_weighed_against_one_users_gap_between_sends() {
        let report = two_ms_late_at_100_a_second();
        // (users, the lag's weight, warnings): 2 users send 20 ms apart each, so 2 ms
        // is under half a user's gap; 1,000 users would be 10 s apart; no users known
        // (an older file) leaves the median latency alone to weigh it.
        let rows = [
            (Some(2), analysis::LagWeight::Light, 0),
            (Some(1000), analysis::LagWeight::Light, 0),
            (None, analysis::LagWeight::Heavy, 1),
        ];
        for (users, weight, warnings) in rows {
            let facts = RunFacts {
                lag_recorded: true,
                attacks: vec![AttackFacts {
                    model: Some(LoadModel::Closed),
                    users,
                    ..AttackFacts::default()
                }],
                ..RunFacts::default()
            };
            let extras = Extras::build(&report, &facts, Scope::Run);
            let lag = extras.lag.expect("a lag");
            assert_eq!(lag.weight, weight, "{users:?} users");
            // 200 sends over 1.99 s: the rate is vegeta's, over the send span.
            let gap_ns = |users: u64| (users as f64 * 1e9 / report.rate_per_sec) as u64;
            let gap = users.map(|users| analysis::SendGap::User(gap_ns(users)));
            assert_eq!(lag.send_gap, gap, "{users:?} users");
            assert_eq!(extras.warnings.len(), warnings, "{:?}", extras.warnings);
        }
    }

    #[test]
    fn model_names() {
        use LoadModel::{Closed, Open, Unknown};
        let rows: &[(&[LoadModel], &str)] = &[
            (&[Open], "open"),
            (&[Open, Open], "open"),
            (&[Closed], "closed"),
            (&[Open, Closed], "mixed"),
            (&[Unknown], "unknown"),
            (&[], "unknown"),
        ];
        for (models, want) in rows {
            assert_eq!(model_name(models.iter().copied()), *want);
        }
    }

    #[test]
    fn only_open_model_loads_have_a_saturation_point() {
        use LoadModel::{Closed, Open, Unknown};
        use analysis::NoRamp::{ClosedModel, ModelUnknown};
        let rows: &[(&[LoadModel], Result<(), analysis::NoRamp>)] = &[
            (&[Open], Ok(())),
            (&[Open, Open], Ok(())),
            (&[Closed], Err(ClosedModel)),
            (&[Open, Closed], Ok(())),
            (&[Closed, Closed], Err(ClosedModel)),
            (&[Unknown, Closed], Err(ModelUnknown)),
            (&[Unknown], Err(ModelUnknown)),
            (&[], Err(ModelUnknown)),
        ];
        for (models, want) in rows {
            let facts = RunFacts {
                attacks: models
                    .iter()
                    .map(|&model| AttackFacts {
                        model: Some(model),
                        ..AttackFacts::default()
                    })
                    .collect(),
                ..RunFacts::default()
            };
            assert_eq!(&facts.open_model(), want, "{models:?}");
        }
    }
}
