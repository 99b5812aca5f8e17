//! [`Evidence`]: what the diagnosis reads, gathered in the one pass over a run's records
//! and resource samples (its [`Seconds`] for the knee, its [`Pressures`] for the watched
//! resources), then [`Evidence::close`]d into [`ClosedEvidence`], which fills the
//! [`RunFacts`] that [`diagnose_run`] judges. `report` and `plot` both go this way, so
//! they say the same sentences for the same inputs. A held step's records (`ws`, `sse`,
//! a `stream` step's body, a streamed gRPC call: [`HeldSteps`]) stay out of the seconds,
//! whose signals are the requests'; their refusals ([`Refusals`]) are judged as a
//! connection limit.

use std::borrow::Cow;

use analysis::diagnosis::{Diagnosis, Failures, GeneratorState, Unjudged, Watched};
use analysis::{Finding, diagnose};
use record::{Connection, Record, RunTables, SampleBatch, SampleTables};

use crate::answers::Answers;
use crate::connections::Connections;
use crate::extra_rows::Extras;
use crate::extras::{RunFacts, Scope};
use crate::held::{HeldSteps, Judged, Refusals};
use crate::metrics::{Metrics, Report};
use crate::pressure::Pressures;
use crate::run_diagnosis::run_diagnosis;
use crate::seconds::Seconds;

/// gRPC targets whose calls' records are kept apart until their entries say whether
/// they stream (a run calling more methods judges the rest as requests): a target's
/// seconds cost what the run's do.
const CALL_TARGETS_APART: usize = 8;

/// The diagnosis's inputs as they stream by; see the module documentation. Adding
/// records neither allocates nor formats (the seconds grow once per new second);
/// memory is bounded by [`crate::MAX_SECONDS`] and the number of watched resources.
#[derive(Debug, Clone)]
pub struct Evidence {
    seconds: Seconds,
    held: HeldSteps,
    /// Records of held steps, left out of the seconds.
    held_records: u64,
    refusals: Refusals,
    /// gRPC calls' records by target until their entries say whether they stream:
    /// (target, its seconds, its records).
    calls: Vec<(u32, Seconds, u64)>,
    answers: Answers,
    pressures: Pressures,
    first_sample_unix_ns: Option<u64>,
}

impl Default for Evidence {
    fn default() -> Evidence {
        Evidence::new()
    }
}

impl Evidence {
    /// Nothing gathered yet. The knee is read from the open-model attacks alone
    /// ([`Seconds::open_model_only`]).
    pub fn new() -> Evidence {
        Evidence {
            seconds: Seconds::open_model_only(),
            held: HeldSteps::default(),
            held_records: 0,
            refusals: Refusals::default(),
            calls: Vec::new(),
            answers: Answers::default(),
            pressures: Pressures::default(),
            first_sample_unix_ns: None,
        }
    }

    /// Adds a batch of records; `tables` resolves their attacks, targets and errors.
    pub fn add_records(&mut self, records: &[Record], tables: &RunTables) {
        self.held.learn(tables);
        for record in records {
            match self.held.judge(record.target) {
                Judged::Request => self.seconds.add(record, tables),
                Judged::Held => {
                    self.seconds.note_start(record);
                    self.held_records += 1;
                    let head = self.held.head(record.target);
                    self.refusals.add(record, head, tables);
                }
                Judged::Call => self.add_call(record, tables),
            }
        }
        self.answers.add_all(records, tables);
    }

    /// A gRPC call's record, not known yet to stream: in its target's own seconds,
    /// judged at the close; past [`CALL_TARGETS_APART`] targets, as a request's.
    fn add_call(&mut self, record: &Record, tables: &RunTables) {
        let apart = match self.calls.iter().position(|(t, ..)| *t == record.target) {
            Some(at) => Some(at),
            None if self.calls.len() < CALL_TARGETS_APART => {
                self.calls
                    .push((record.target, Seconds::open_model_only(), 0));
                Some(self.calls.len() - 1)
            }
            None => None,
        };
        let Some(at) = apart else {
            self.seconds.add(record, tables);
            return;
        };
        self.seconds.note_start(record);
        let (_, seconds, count) = &mut self.calls[at];
        seconds.add(record, tables);
        *count += 1;
    }

    /// Learns from connection entries which gRPC calls streamed (their records are a
    /// held session's).
    pub fn add_connections(&mut self, connections: &[Connection]) {
        self.held.learn_calls(connections);
    }

    /// The seconds of the requests: the gRPC calls that did not stream joined in.
    fn request_seconds(&self) -> (Cow<'_, Seconds>, u64) {
        let mut seconds = Cow::Borrowed(&self.seconds);
        let mut held_records = self.held_records;
        for (target, calls, count) in &self.calls {
            if self.held.streams(*target) {
                held_records += count;
            } else {
                seconds.to_mut().merge(calls);
            }
        }
        (seconds, held_records)
    }

    /// Adds resource sample batches whose ids index `tables` (as read so far).
    pub fn add_samples(&mut self, tables: &SampleTables, batches: &[SampleBatch]) {
        if let Some(first) = batches.iter().map(|b| b.at_unix_ns).min() {
            let earliest = self.first_sample_unix_ns.map_or(first, |f| f.min(first));
            self.first_sample_unix_ns = Some(earliest);
        }
        self.pressures.add(tables, batches);
    }

    /// What the evidence says so far: its size does not grow with the run's length (a
    /// live page closes a copy each second rather than cloning the seconds).
    pub fn close(&self) -> ClosedEvidence {
        // The run's first intended send; a monitor file alone starts at its first sample.
        let start_unix_ns = self.seconds.start_unix_ns().or(self.first_sample_unix_ns);
        let (seconds, held_records) = self.request_seconds();
        let ramp = if held_records > 0 && seconds.is_empty() {
            Finding::NotARamp {
                reason: analysis::NoRamp::HeldOnly,
            }
        } else {
            seconds.saturation(Ok(()))
        };
        ClosedEvidence {
            ramp,
            refusals: self.refusals.clone(),
            answers: self.answers.clone(),
            failing_from: seconds.failing_from(),
            start_unix_ns,
            watched: self.pressures.close(start_unix_ns.unwrap_or(0)),
            unjudged: self.pressures.unjudged(start_unix_ns.unwrap_or(0)),
        }
    }
}

/// [`Evidence`] closed: the knee as if the load were an open-model one (the facts say
/// whether it is), the run's start, and each watched resource against its limit.
#[derive(Debug, Clone, PartialEq)]
pub struct ClosedEvidence {
    ramp: Finding,
    refusals: Refusals,
    answers: Answers,
    failing_from: Option<(u64, f64)>,
    start_unix_ns: Option<u64>,
    watched: Vec<Watched>,
    unjudged: Vec<Unjudged>,
}

impl ClosedEvidence {
    /// Sets `facts.saturation`, `facts.start_unix_ns`, what the failed requests said
    /// (`facts.unreached`, `facts.failures`; `tables` names their targets and errors),
    /// the held steps' connection limits (`facts.connection_limits`, with the most of
    /// `connections` held at once) and, when the run has resource samples
    /// (`facts.resources` set first), `facts.watched` and `facts.unjudged`.
    pub fn fill(self, facts: &mut RunFacts, tables: &RunTables, connections: &Connections) {
        facts.unreached = self.answers.unreached(tables);
        let kinds = self.answers.failed_as(tables);
        facts.failures = (!kinds.is_empty()).then(|| Failures {
            server: self.answers.server(tables),
            kinds,
            from: self.failing_from,
        });
        facts.saturation = Some(match facts.open_model() {
            Ok(()) => self.ramp,
            Err(reason) => Finding::NotARamp { reason },
        });
        facts.start_unix_ns = self.start_unix_ns;
        let start_unix_ns = self.start_unix_ns.unwrap_or_default();
        facts.connection_limits = self.refusals.limits(connections, tables, start_unix_ns);
        if facts.resources.is_some() {
            facts.watched = Some(self.watched);
            facts.unjudged = self.unjudged;
        }
    }

    /// The diagnosis of samples alone (a monitor file, no requests).
    pub fn diagnose_samples(&self) -> Diagnosis {
        diagnose_samples(&self.watched, &self.unjudged, self.start_unix_ns)
    }
}

/// The diagnosis of a whole run (`report`'s `Diagnosis:` block, the plot page's panel),
/// from `report` with its extra rows built and `facts` filled by
/// [`ClosedEvidence::fill`]: a run with requests when it has samples or a knee; samples
/// alone (a monitor file) when they hold a watched resource.
pub fn diagnose_run(report: &Report, facts: &RunFacts) -> Option<Diagnosis> {
    if report.requests > 0 {
        return run_diagnosis(report, facts);
    }
    let watched = facts.watched.as_deref()?;
    Some(diagnose_samples(
        watched,
        &facts.unjudged,
        facts.start_unix_ns,
    ))
}

/// Sets the whole run's diagnosis in `report.extras`, the one place `report` and `plot`
/// judge a run. When nothing listened, the generator's lag warning goes: beside
/// refused connects it shaped no answer (as a plan step's verdict holds,
/// [`analysis::judge`]), and "fell behind" above "nothing listened" would contradict it.
pub fn judge_run(report: &mut Report, facts: &RunFacts) {
    let diagnosis = diagnose_run(report, facts);
    if diagnosis
        .as_ref()
        .is_some_and(|d| matches!(d.verdict, analysis::diagnosis::Verdict::Unreachable(_)))
    {
        (report.extras.warnings).retain(|w| !matches!(w, crate::Warning::FellBehind { .. }));
    }
    report.extras.diagnosis = diagnosis;
}

/// The one summary of a run (or of one group of it, `scope`): `metrics` closed, its
/// extra rows built from `facts` and, for the whole run, judged ([`judge_run`]) once.
/// `report` and `plot` (and the live page through it) read this, never a fold of
/// their own.
pub fn close_run(metrics: Metrics, facts: &RunFacts, tables: &RunTables, scope: Scope) -> Report {
    let mut report = metrics.close(tables);
    report.extras = Extras::build(&report, facts, scope);
    if scope == Scope::Run {
        judge_run(&mut report, facts);
    }
    report
}

/// Samples alone have no knee and no generator: what reached its limit, in time order.
fn diagnose_samples(
    watched: &[Watched],
    unjudged: &[Unjudged],
    start_unix_ns: Option<u64>,
) -> Diagnosis {
    let mut diagnosis = diagnose(None, None, &GeneratorState::default(), watched);
    diagnosis.start_unix_ns = start_unix_ns;
    diagnosis.unjudged = unjudged.to_vec();
    diagnosis
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extras::AttackFacts;
    use crate::resources::ResourceSummary;
    use analysis::diagnosis::Resource;
    use record::{AttackInfo, LoadModel, SamplerInfo, SeriesInfo, SeriesKind};

    const S: u64 = 1_000_000_000;
    /// A whole second; the first request is due 0.3 s after it and leaves 50 µs late.
    const T0: u64 = 1_700_000_000 * S;
    const FIRST_NS: u64 = 300_000_000;
    const LAG_NS: u64 = 50_000;

    /// A ramp from 20/s up by 20/s each second for 20 s; past 200 a second, 503s.
    fn ramp() -> Vec<Record> {
        let mut records = Vec::new();
        for second in 0..20u64 {
            let offered = 20 + 20 * second;
            for n in 0..offered {
                records.push(Record {
                    intended_unix_ns: T0 + FIRST_NS + second * S + n * S / offered,
                    send_lag_ns: LAG_NS,
                    latency_ns: 1_000_000,
                    status: if n < 200 { 200 } else { 503 },
                    ..Record::default()
                });
            }
        }
        records
    }

    /// nginx's fds: 50% of 1024 until second 8 of the samples, 95% from it on.
    fn fds(first_unix_ns: u64) -> (SampleTables, Vec<SampleBatch>) {
        let series = |name: &str| SeriesInfo {
            sampler: 0,
            name: name.to_owned(),
            labels: [("group".to_owned(), "nginx".to_owned())].into(),
            unit: String::new(),
            kind: SeriesKind::Gauge,
        };
        let tables = SampleTables {
            samplers: vec![SamplerInfo {
                kind: "process".into(),
                name: "nginx".to_owned(),
            }],
            series: vec![series("process.fd_use_percent"), series("process.fd_limit")],
        };
        let batches = (0..20u64)
            .map(|t| {
                let percent = if t < 8 { 50.0 } else { 95.0 };
                SampleBatch::dense(first_unix_ns + t * S, &[percent, 1024.0])
            })
            .collect();
        (tables, batches)
    }

    /// What `report` would say of `records` and `samples`, with the attack's model.
    fn judged(
        records: &[Record],
        samples: Option<&(SampleTables, Vec<SampleBatch>)>,
        model: LoadModel,
    ) -> (Option<Diagnosis>, Vec<crate::Warning>) {
        let tables = RunTables {
            attacks: vec![AttackInfo {
                model,
                ..AttackInfo::default()
            }],
            targets: vec![record::TargetInfo {
                method: "GET".to_owned(),
                url: "http://127.0.0.1:18199/".to_owned(),
                ..record::TargetInfo::default()
            }],
            errors: vec![record::ErrorEntry {
                kind: record::ErrorKind::Connect,
                text: "connect: connection refused".to_owned(),
            }],
        };
        let mut evidence = Evidence::new();
        let mut metrics = Metrics::new(None);
        // In two batches, as a stream hands them over.
        for batch in records.chunks(records.len().div_ceil(2).max(1)) {
            evidence.add_records(batch, &tables);
            batch.iter().for_each(|record| metrics.add(record));
        }
        let mut attack = AttackFacts::default();
        attack.model = Some(model);
        let mut facts = RunFacts {
            attacks: vec![attack],
            ..RunFacts::default()
        };
        if let Some((sample_tables, batches)) = samples {
            evidence.add_samples(sample_tables, batches);
            facts.resources = Some(ResourceSummary::default());
        }
        evidence
            .close()
            .fill(&mut facts, &tables, &Connections::default());
        let report = close_run(metrics, &facts, &tables, Scope::Run);
        (report.extras.diagnosis, report.extras.warnings)
    }

    /// A flow's steps as the record file names them: a login, a chat (`ws`, its
    /// upgrade and a paced send of 2 s) and an event stream (`sse`, its first event and
    /// 2 s of events).
    fn chat_tables() -> RunTables {
        let target = |method: &str, url: &str, step: &str| record::TargetInfo {
            method: method.to_owned(),
            url: url.to_owned(),
            step: Some(step.to_owned()),
            checks: Vec::new(),
        };
        RunTables {
            attacks: vec![AttackInfo {
                flow: true,
                ..AttackInfo::default()
            }],
            targets: vec![
                target("GET", "http://127.0.0.1:18080/", "login"),
                target("WS", "ws://127.0.0.1:18080/chat", "chat"),
                target("SSE", "http://127.0.0.1:18080/ticks", "ticks"),
                target("WS", "ws://127.0.0.1:18080/chat", "chat send 1"),
                target("SSE", "http://127.0.0.1:18080/ticks", "ticks events"),
            ],
            errors: vec![record::ErrorEntry {
                kind: record::ErrorKind::Status,
                text: "503 Service Unavailable".to_owned(),
            }],
        }
    }

    /// Runs of the chat flow (with its login when `login`) starting at a rate rising by
    /// 2/s each second for 12 s: each step's record starts where the one before ended.
    fn chat_runs(login: bool) -> Vec<Record> {
        const MS: u64 = 1_000_000;
        let starts = (0..12u64).flat_map(|second| {
            let runs = 2 + 2 * second;
            (0..runs).map(move |n| second * S + n * S / runs)
        });
        let mut records = Vec::new();
        for (run, at_ns) in starts.enumerate() {
            let (run, start) = (run as u64, T0 + FIRST_NS + at_ns);
            // (target, starts after the run's start, latency)
            let steps = [
                (0, 0, MS),
                (1, MS, MS),
                (3, 2 * MS, 2_000 * MS),
                (2, 2_002 * MS, 100 * MS),
                (4, 2_102 * MS, 2_000 * MS),
            ];
            for (target, after_ns, latency_ns) in steps {
                if target == 0 && !login {
                    continue;
                }
                records.push(Record {
                    target,
                    seq: run << 16 | u64::from(target),
                    intended_unix_ns: start + after_ns,
                    send_lag_ns: LAG_NS,
                    latency_ns,
                    status: 200,
                    ..Record::default()
                });
            }
        }
        records.sort_by_key(|r| r.intended_unix_ns);
        records
    }

    /// The saturation finding and the diagnosis of `records` of the chat flow.
    fn judged_chat(records: &[Record]) -> (Option<Finding>, Option<Diagnosis>) {
        let tables = chat_tables();
        let mut evidence = Evidence::new();
        let mut metrics = Metrics::new(None);
        evidence.add_records(records, &tables);
        records.iter().for_each(|record| metrics.add(record));
        let mut attack = AttackFacts::default();
        attack.model = Some(LoadModel::Open);
        attack.flow = true;
        let mut facts = RunFacts {
            attacks: vec![attack],
            ..RunFacts::default()
        };
        evidence
            .close()
            .fill(&mut facts, &tables, &Connections::default());
        let report = close_run(metrics, &facts, &tables, Scope::Run);
        (facts.saturation, report.extras.diagnosis)
    }

    /// A held step's records last its session by design: read as requests, 2 s of paced
    /// sends passed "3x the early ramp's latency" and the events, done 2 s after their
    /// stream began, read as throughput that fell behind (the knee of issue 39's
    /// report). Judged apart, the run has no knee and no verdict (its logins, a rising
    /// load of plain requests, held up); a ramp of plain requests past a limit beside
    /// them keeps its knee.
    #[test]
    fn held_steps_are_judged_apart_from_the_requests() {
        use analysis::NoRamp;
        let ramp_beside_chats = || {
            let mut records = ramp();
            records.extend(chat_runs(false));
            records.sort_by_key(|r| r.intended_unix_ns);
            records
        };
        // (case, records, the saturation finding's kind, verdict)
        type Row = (
            &'static str,
            Vec<Record>,
            &'static str,
            Option<&'static str>,
        );
        let rows: [Row; 3] = [
            (
                "a chat and an event stream",
                chat_runs(false),
                "held only",
                None,
            ),
            (
                "the same after a login",
                chat_runs(true),
                "no saturation",
                None,
            ),
            (
                "a ramp past a limit beside them",
                ramp_beside_chats(),
                "saturated",
                Some("nothing_watched"),
            ),
        ];
        for (case, records, want, verdict) in rows {
            let (finding, diagnosis) = judged_chat(&records);
            let got = match &finding {
                Some(Finding::NotARamp {
                    reason: NoRamp::HeldOnly,
                }) => "held only",
                Some(Finding::NotARamp { .. }) => "not a ramp",
                Some(Finding::Saturated { .. }) => "saturated",
                Some(Finding::NoSaturation { .. }) => "no saturation",
                None => "none",
            };
            assert_eq!(got, want, "{case}: {finding:?}");
            let said = diagnosis.as_ref().map(Diagnosis::verdict_name);
            assert_eq!(said, verdict, "{case}: {diagnosis:?}");
        }
    }

    /// A gRPC call that streams writes a `grpc_call` entry, read beside the records in
    /// no fixed order: its records wait apart until the entries say, then are judged
    /// as a held session's (2 s of a server stream is no slow answer); unary calls'
    /// join the requests' seconds, their knee read as before.
    #[test]
    fn streamed_grpc_calls_are_judged_apart_once_their_entries_say() {
        use analysis::NoRamp;
        let target = |url: &str| record::TargetInfo {
            method: "GRPC".to_owned(),
            url: url.to_owned(),
            ..record::TargetInfo::default()
        };
        let tables = RunTables {
            attacks: vec![AttackInfo::default()],
            targets: vec![
                target("127.0.0.1:50051 routeguide.RouteGuide/GetFeature"),
                target("127.0.0.1:50051 routeguide.RouteGuide/ListFeatures"),
            ],
            ..RunTables::default()
        };
        // Server streams of 2 s at a rising rate; the unary calls are `ramp()`'s.
        let streams: Vec<Record> = chat_runs(false)
            .into_iter()
            .filter(|r| r.target == 1)
            .collect();
        let entries: Vec<Connection> = (streams.iter())
            .map(|r| Connection {
                kind: record::EntryKind::GrpcCall,
                target: 1,
                seq: r.seq,
                opened_unix_ns: r.intended_unix_ns,
                closed_unix_ns: r.end_unix_ns(),
                ..Connection::default()
            })
            .collect();
        let both = || {
            let mut records = ramp();
            records.extend(streams.iter().copied());
            records.sort_by_key(|r| r.intended_unix_ns);
            records
        };
        // (case, records, entries, the saturation finding's kind)
        type Row<'a> = (&'a str, Vec<Record>, &'a [Connection], &'a str);
        let rows: [Row<'_>; 4] = [
            (
                "streams, their entries after them",
                streams.clone(),
                &entries,
                "held only",
            ),
            // Without entries a call is a request's answer, as before: 2 s each, level.
            (
                "streams without entries",
                streams.clone(),
                &[],
                "no saturation",
            ),
            (
                "unary calls past a limit beside streams",
                both(),
                &entries,
                "saturated",
            ),
            ("unary calls alone", ramp(), &[], "saturated"),
        ];
        let judge = |records: &[Record], entries: &[Connection]| {
            let mut evidence = Evidence::new();
            // In two batches, the entries after the last.
            for batch in records.chunks(records.len().div_ceil(2)) {
                evidence.add_records(batch, &tables);
            }
            evidence.add_connections(entries);
            evidence.close().ramp
        };
        let knee_of = |finding: &Finding| match finding {
            Finding::Saturated { point, .. } => Some(point.start_ns),
            _ => None,
        };
        // The unary calls' knee alone: their 503s from 200/s on.
        let unary_knee = knee_of(&judge(&ramp(), &[]));
        assert!(unary_knee.is_some());
        for (case, records, entries, want) in rows {
            let finding = judge(&records, entries);
            let got = match &finding {
                Finding::NotARamp {
                    reason: NoRamp::HeldOnly,
                } => "held only",
                Finding::NoSaturation { .. } => "no saturation",
                Finding::Saturated { .. } => "saturated",
                other => panic!("{case}: {other:?}"),
            };
            if case.starts_with("unary") {
                assert_eq!(knee_of(&finding), unary_knee, "{case}: {finding:?}");
            }
            assert_eq!(got, want, "{case}");
        }
    }

    /// 12 ms of send lag beside 100 µs answers is a lag warning, unless nothing listened:
    /// then the run says so alone (the step verdict's rule).
    #[test]
    fn no_lag_warning_beside_a_target_nothing_listened_at() {
        let run = |status: u16, error: u32| -> Vec<Record> {
            (0..100u64)
                .map(|n| Record {
                    intended_unix_ns: T0 + n * S / 100,
                    send_lag_ns: 12_000_000,
                    latency_ns: 100_000,
                    status,
                    error,
                    ..Record::default()
                })
                .collect()
        };
        let fell_behind = |warnings: &[crate::Warning]| {
            warnings
                .iter()
                .any(|w| matches!(w, crate::Warning::FellBehind { .. }))
        };
        let (diagnosis, warnings) = judged(&run(0, 1), None, LoadModel::Open);
        let verdict = diagnosis.as_ref().map(Diagnosis::verdict_name);
        assert_eq!(verdict, Some("unreachable"), "{diagnosis:?}");
        assert!(!fell_behind(&warnings), "{warnings:?}");
        let (_, warnings) = judged(&run(200, 0), None, LoadModel::Open);
        assert!(fell_behind(&warnings), "{warnings:?}");
    }

    #[test]
    fn the_knee_and_the_crossings_count_from_the_first_intended_send() {
        let start = T0 + FIRST_NS;
        // (case, records, samples from, model, verdict or None, knee?, findings)
        type Case<'a> = (
            &'a str,
            Vec<Record>,
            Option<u64>,
            LoadModel,
            Option<&'a str>,
            bool,
            usize,
        );
        let cases: Vec<Case<'_>> = vec![
            (
                "a ramp past its knee, watched",
                ramp(),
                Some(T0),
                LoadModel::Open,
                Some("first_limit"),
                true,
                1,
            ),
            (
                "the same, unwatched",
                ramp(),
                None,
                LoadModel::Open,
                Some("nothing_watched"),
                true,
                0,
            ),
            // No knee (not a ramp) and nothing watched, but its failures are said.
            (
                "a closed model, unwatched",
                ramp(),
                None,
                LoadModel::Closed,
                Some("nothing_watched"),
                false,
                0,
            ),
            (
                "a closed model, watched",
                ramp(),
                Some(T0),
                LoadModel::Closed,
                Some("first_limit"),
                false,
                1,
            ),
            (
                "samples alone",
                Vec::new(),
                Some(T0 - 3 * S),
                LoadModel::Open,
                Some("first_limit"),
                false,
                1,
            ),
        ];
        for (case, records, samples_from, model, verdict, knee, findings) in cases {
            let samples = samples_from.map(fds);
            let (diagnosis, _) = judged(&records, samples.as_ref(), model);
            assert_eq!(
                diagnosis.as_ref().map(Diagnosis::verdict_name),
                verdict,
                "{case}"
            );
            let Some(diagnosis) = diagnosis else { continue };
            let origin = if records.is_empty() {
                samples_from
            } else {
                Some(start)
            };
            assert_eq!(diagnosis.start_unix_ns, origin, "{case}");
            let origin = origin.unwrap_or_default();
            assert_eq!(diagnosis.knee.is_some(), knee, "{case}");
            if let Some(knee) = &diagnosis.knee {
                // Windows are whole seconds: the knee is one on the clock.
                assert_eq!((origin + knee.at_ns) % S, 0, "{case}: {knee:?}");
            }
            assert_eq!(diagnosis.findings.len(), findings, "{case}");
            for finding in &diagnosis.findings {
                assert_eq!(finding.watched.resource, Resource::Fds, "{case}");
                let crossed_unix_ns = samples_from.unwrap_or_default() + 8 * S;
                assert_eq!(origin + finding.crossing.at_ns, crossed_unix_ns, "{case}");
            }
        }
    }
}
