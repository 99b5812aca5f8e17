//! The diagnosis in words ("what ran out first"): the sentences `report` prints, its
//! JSON carries, `plot`'s panel and markers show and a plan's write-up quotes, all from
//! one typed [`Diagnosis`]. The rules and thresholds are in `docs/DIAGNOSIS.md`.

use std::fmt::Write as _;

use analysis::TurnKind;
use analysis::diagnosis::{
    Behind, Diagnosis, FailedAs, Failures, Finding, Hole, Knee, Note, Resource, Timing, Trouble,
    Unjudged, Unreached, Verdict, Watched,
};
use units::GoDuration;

/// The answer as sentences a reader can paste into a write-up, one per line: the
/// verdict first, then each finding in time order, then the headroom of the rest.
pub fn lines(diagnosis: &Diagnosis) -> Vec<String> {
    let mut lines = vec![headline(diagnosis)];
    let first = diagnosis.first_limit();
    for index in 0..diagnosis.findings.len() {
        // The first limit is the headline's.
        if first != Some(index) {
            lines.push(finding_line(diagnosis, index));
        }
    }
    if !diagnosis.held.is_empty() {
        let held: Vec<String> = diagnosis.held.iter().map(headroom).collect();
        lines.push(format!("held (peak of each): {}", held.join("; ")));
    }
    for what in &diagnosis.unjudged {
        lines.push(format!("not judged: {}", unjudged(what)));
    }
    lines
}

/// Finding `index` in the words of [`lines`]: `first limit ...` for the verdict's (the
/// headline's tail), `before it: ...` for a symptom ahead of it, `then: ...` for the
/// rest. A chart names a finding's moment with it.
pub fn finding_line(diagnosis: &Diagnosis, index: usize) -> String {
    let first = diagnosis.first_limit();
    let text = finding(
        &diagnosis.findings[index],
        diagnosis.knee.as_ref(),
        diagnosis.start_unix_ns,
    );
    // Symptoms (log lines of timeouts) may come before the first limit.
    match first {
        Some(first) if index == first => format!("first limit {text}"),
        Some(first) if index < first => format!("before it: {text}"),
        _ => format!("then: {text}"),
    }
}

/// The verdict in one sentence.
pub fn headline(diagnosis: &Diagnosis) -> String {
    let knee_at = diagnosis.knee.as_ref();
    match &diagnosis.verdict {
        Verdict::Unreachable(unreached) => {
            let each: Vec<String> = unreached.iter().map(self::unreached).collect();
            each.join("; ")
        }
        Verdict::GeneratorRanOut(how) => format!(
            "the generator ran out ({}): this run says nothing about the server",
            behind(how)
        ),
        Verdict::FirstLimit { finding: index } => {
            let first = &diagnosis.findings[*index];
            match knee_at {
                Some(at) => format!(
                    "{}: first limit {}",
                    knee(at),
                    finding(first, Some(at), diagnosis.start_unix_ns)
                ),
                None => {
                    let text = finding(first, None, diagnosis.start_unix_ns);
                    match &diagnosis.trouble {
                        Some(how) => format!("{}: first limit {text}", trouble(how)),
                        None => format!("first limit {text}"),
                    }
                }
            }
        }
        Verdict::NothingWatchedRanOut => {
            let what = knee_at
                .map(knee)
                .or_else(|| diagnosis.trouble.as_ref().map(trouble))
                .unwrap_or_default();
            let watched = if diagnosis.held.is_empty() && diagnosis.findings.is_empty() {
                "with nothing watched"
            } else {
                "while no watched resource was near its limit"
            };
            match diagnosis.failures.as_ref().filter(|f| !f.kinds.is_empty()) {
                // The answers say what happened; the unwatched is not guessed at.
                Some(answers) => format!(
                    "{what}: {} {watched}: {}",
                    failures(answers),
                    meaning(answers)
                ),
                None => format!(
                    "{what}: nothing monitored reached its limit; the limit lies in \
                     something not watched (a downstream, a lock, a pool without a gauge)"
                ),
            }
        }
        Verdict::Held => match &diagnosis.no_knee {
            Some(why) => format!(
                "{}; nothing monitored reached its limit",
                super::saturation::finding(why)
            ),
            None => "no knee, and nothing monitored reached its limit".to_owned(),
        },
        Verdict::NotJudged => {
            "not judged: nothing was monitored and the load has no knee".to_owned()
        }
    }
}

/// How the generator fell behind, and what to change.
pub fn behind(how: &Behind) -> String {
    match how {
        Behind::AtCap { cap } => format!(
            "requests in flight reached its cap (-max-workers {cap}) while the answers kept \
             their pace: the rate asked needs more in flight; raise -max-workers"
        ),
        Behind::Lag(lag) => format!(
            "send lag p99 {} over {} and against a median latency of {}{}, with requests \
             in flight under the cap; give it more CPU or less load",
            GoDuration::report_ns(lag.p99_ns),
            GoDuration::report_ns(lag.limit_ns),
            GoDuration::report_ns(lag.latency_p50_ns),
            super::lag_gap(lag)
        ),
        Behind::SentShort {
            asked_per_sec,
            achieved_per_sec,
        } => format!(
            "it sent {achieved_per_sec:.0} req/s of the {asked_per_sec:.0} asked; give it more \
             CPU or less load"
        ),
    }
}

/// `16.8% of the requests failed`.
fn trouble(how: &Trouble) -> String {
    format!("{:.1}% of the requests failed", how.failed_ratio * 100.0)
}

/// `nothing listened at 127.0.0.1:18199: connection refused, every request (100)`.
pub fn unreached(target: &Unreached) -> String {
    format!(
        "nothing listened at {}: {}, every request ({})",
        target.address, target.error, target.requests
    )
}

/// `127.0.0.1:8080 answered 503 (1234) from 714/s`, `answers from 127.0.0.1:8080 did
/// not hold what the flow asks: step "login": check "status 200" failed (12)`,
/// `requests to 127.0.0.1:8080 failed with timeout (12) from 714/s`: the statuses
/// first, then what a flow did not accept, then the errors.
pub fn failures(answers: &Failures) -> String {
    let (mut statuses, mut unmet, mut errors) = (Vec::new(), Vec::new(), Vec::new());
    for (kind, count) in &answers.kinds {
        match kind {
            FailedAs::Status(code) => statuses.push(format!("{code} ({count})")),
            FailedAs::Unmet(text) => unmet.push(format!("{text} ({count})")),
            FailedAs::Error(name) => errors.push(format!("{name} ({count})")),
        }
    }
    let server = &answers.server;
    let mut parts = Vec::new();
    if !statuses.is_empty() {
        parts.push(format!("{server} answered {}", statuses.join(", ")));
    }
    if !unmet.is_empty() {
        let whose = if parts.is_empty() {
            format!("answers from {server}")
        } else {
            "answers".to_owned()
        };
        parts.push(format!(
            "{whose} did not hold what the flow asks: {}",
            unmet.join("; ")
        ));
    }
    if !errors.is_empty() {
        let whose = if parts.is_empty() {
            format!("requests to {server}")
        } else {
            "requests".to_owned()
        };
        parts.push(format!("{whose} failed with {}", errors.join(", ")));
    }
    let mut text = parts.join(", and ");
    if let Some((_, per_sec)) = answers.from {
        let _ = write!(text, " from {}", value(per_sec, "/s"));
    }
    text
}

/// What answers like these mean (the most frequent decides), without guessing at what
/// was not watched.
fn meaning(answers: &Failures) -> &'static str {
    match answers.kinds.first().map(|(kind, _)| kind) {
        Some(FailedAs::Status(429 | 503)) => {
            "a limit the server is configured with (a rate limit, a queue, an upstream)"
        }
        Some(FailedAs::Status(502 | 504)) => {
            "what is behind the server (an upstream) failed or did not answer in time"
        }
        Some(FailedAs::Status(400..=499)) => {
            "the server refused the requests themselves (their URL, headers or body): \
             not a limit of its capacity"
        }
        Some(FailedAs::Status(_)) => "the server's own errors; its logs say why",
        Some(FailedAs::Unmet(_)) => {
            "the server answered, but not as the flow asks (the checks table says which)"
        }
        Some(FailedAs::Error(_)) | None => {
            "the server (or what is between) stopped answering in time; its logs or a \
             monitor of it say why"
        }
    }
}

/// The knee in the headline's words: `max 4699 req/s held; the knee at 5084/s
/// offered, 11.7 s (throughput turned first)`.
pub fn knee(knee: &Knee) -> String {
    format!(
        "max {:.0} req/s held; the knee at {:.0}/s offered, {} ({} turned first)",
        knee.peak_ok_per_sec,
        knee.offered_per_sec,
        seconds(knee.at_ns),
        turn_name(knee.signal)
    )
}

/// A saturation signal's name: `throughput`, `errors`, `latency`.
pub fn turn_name(kind: TurnKind) -> &'static str {
    match kind {
        TurnKind::Throughput => "throughput",
        TurnKind::Errors => "errors",
        TurnKind::Latency => "latency",
    }
}

/// One sentence: who did what against which limit, when (from the run's start, and
/// on the wall clock when `start_unix_ns` is known), against the knee, the evidence,
/// and what it means.
pub fn finding(finding: &Finding, knee: Option<&Knee>, start_unix_ns: Option<u64>) -> String {
    let w = &finding.watched;
    let (what, meaning) = what(w, finding.crossing.value);
    let mut text = format!("{} {what} from {}", w.name, seconds(finding.crossing.at_ns));
    if let Some(start) = start_unix_ns {
        let _ = write!(text, " ({})", wall_clock(start + finding.crossing.at_ns));
    }
    match (finding.timing, knee) {
        (Timing::Before, Some(knee)) => {
            let ahead = knee.at_ns - finding.crossing.at_ns;
            let _ = write!(text, ", {} before the knee", seconds(ahead));
        }
        (Timing::AtKnee, _) => text.push_str(", at the knee"),
        (Timing::After, Some(knee)) => {
            let behind = finding.crossing.at_ns - knee.at_ns;
            let _ = write!(text, ", {} after the knee", seconds(behind));
        }
        (Timing::Before | Timing::After | Timing::NoKnee, _) => {}
    }
    // A connection limit without the connections' entries has no peak to say.
    if w.resource == Resource::Connections && w.limit.is_none() {
        let _ = write!(text, " ({}){meaning}", w.series);
    } else {
        let _ = write!(
            text,
            " (peak {} at {}; {}){meaning}",
            value(w.peak, w.unit),
            seconds(w.peak_at_ns),
            w.series
        );
    }
    if let Some(more) = &w.note {
        let _ = write!(text, "; {}", note(more));
    }
    if let Some(line) = &w.example {
        let first = match w.resource {
            Resource::Connections => "the first refusal",
            _ => "first line",
        };
        let _ = write!(text, "; {first}: {line:?}");
    }
    text
}

/// More evidence beside a watched resource.
pub fn note(note: &Note) -> String {
    match note {
        Note::Steal { peak_percent } => format!(
            "meanwhile the hypervisor took up to {peak_percent:.0}% of the host's CPU (steal): \
             a core gave less than a whole one"
        ),
        Note::Transactions { peak_per_sec } => {
            format!("transactions peaked at {peak_per_sec:.0}/s")
        }
        Note::Refused {
            refused,
            status,
            cut,
        } => {
            let mut text = format!("{refused} new connections refused with {status}");
            if *cut > 0 {
                let _ = write!(text, ", {cut} held ones cut");
            }
            text
        }
    }
}

/// What could not be judged of one sampler: `db: 12 readings missing from 3.0 s
/// (login refused); its resources are judged on the readings it has`.
pub fn unjudged(what: &Unjudged) -> String {
    let name = &what.sampler;
    let s = |ns: u64| ns as f64 / 1e9;
    match &what.hole {
        Hole::NeverRead { reason } => {
            format!("{name}: every reading missing ({reason}): nothing of it was watched")
        }
        Hole::Missed {
            readings,
            from_ns,
            reason,
        } => format!(
            "{name}: {readings} reading{} missing from {:.1} s ({reason}); its resources are \
             judged on the readings it has",
            if *readings == 1 { "" } else { "s" },
            s(*from_ns)
        ),
        Hole::ClockBack { by_ns, at_ns } => format!(
            "{name}: its clock went back {:.1} s at {:.1} s; no stretch across it counts as \
             sustained",
            s(*by_ns),
            s(*at_ns)
        ),
        Hole::Silent { for_ns, from_ns } => format!(
            "{name}: no readings for {:.1} s from {:.1} s; what happened then is not known",
            s(*for_ns),
            s(*from_ns)
        ),
    }
}

/// Who and what in a few words, for a chart's label: `nginx fds`, `host CPU`,
/// `host listen overflows`; a log by its name alone (`nginx log (timeout)`).
pub fn short_name(w: &Watched) -> String {
    match w.resource {
        Resource::Log | Resource::LogSymptom => w.name.clone(),
        resource => format!("{} {}", w.name, noun(resource)),
    }
}

/// What the resource did, in its own words, and what that means (after a `; `), if
/// it needs saying.
fn what(w: &Watched, at: f64) -> (String, &'static str) {
    let limit = w.limit.map(|l| value(l, w.unit)).unwrap_or_default();
    let percent = |at: f64| value(at, "%");
    match w.resource {
        Resource::CpuAllowance => (
            format!("CPU at {} of one core, its allowance {limit}", percent(at)),
            "; its affinity or quota, not the host, set the ceiling",
        ),
        Resource::OneCore => (
            match w.limit {
                Some(_) => format!(
                    "held at {} of one core while it may use {limit}",
                    percent(at)
                ),
                None => format!(
                    "held at {} of one core (its allowance was not sampled)",
                    percent(at)
                ),
            },
            "; one thread's ceiling (a single-threaded server, a global lock)",
        ),
        Resource::HostCpu => (format!("CPU at {} of the host", percent(at)), ""),
        Resource::OneCoreOfHost => (
            format!(
                "busiest core at {} while the host as a whole was not",
                percent(at)
            ),
            "; one busy thread or interrupt handling",
        ),
        Resource::Steal => (
            format!("CPU steal at {}", percent(at)),
            "; the hypervisor took it",
        ),
        Resource::Iowait => (
            format!("iowait at {}", percent(at)),
            "; CPU waited for disk",
        ),
        Resource::Fds => (
            format!(
                "fds at {} of their limit ({limit})",
                percent(share(at, w.limit))
            ),
            "; beyond it accept() fails with \"too many open files\"",
        ),
        Resource::Memory => (
            format!("memory at {} of {limit}", percent(share(at, w.limit))),
            "; past it the kernel reclaims and swaps, then kills (OOM)",
        ),
        Resource::Swap => (
            format!("swapping out {}", value(at, w.unit)),
            "; memory ran short and pages went to disk",
        ),
        Resource::Network => (
            format!(
                "network at {} of its link speed ({limit})",
                percent(share(at, w.limit))
            ),
            "; the link, not the server, set the ceiling",
        ),
        Resource::EphemeralPorts => (
            format!(
                "TIME_WAIT sockets at {} of the ephemeral port range ({limit})",
                percent(share(at, w.limit))
            ),
            "; new connections from this host fail (EADDRNOTAVAIL) once it is used up",
        ),
        Resource::ListenQueue => (
            format!(
                "listen queue overflowing, {} connections dropped",
                value(at, "/s")
            ),
            "; the server did not accept connections fast enough",
        ),
        Resource::TcpErrors => (format!("TCP connects failing at {}", value(at, "/s")), ""),
        Resource::Retransmits => (
            format!("TCP retransmitting {} of the segments it sent", percent(at)),
            "; packets were lost (a full queue or link, or a drop on the way)",
        ),
        Resource::TcpResets => (
            format!("sending TCP resets, {}", value(at, "/s")),
            "; connections were refused or cut",
        ),
        Resource::Pool => (
            format!("at {} of its size ({limit})", percent(share(at, w.limit))),
            "; beyond it requests wait, or are turned away",
        ),
        Resource::DbConnections => (
            format!(
                "connections at {} of max_connections ({limit})",
                percent(share(at, w.limit))
            ),
            "; more are refused",
        ),
        Resource::DbBusy => (
            format!(
                "connections busy {} of the time ({at:.2} of {:.0} open)",
                percent(share(at, w.limit)),
                w.limit.unwrap_or_default()
            ),
            "; every connection it was given was in use, so transactions could not go \
             faster: the app's pool (its number of connections), not the server, set the \
             ceiling",
        ),
        Resource::Log | Resource::LogSymptom => {
            (format!("wrote matching lines, {}", value(at, "/s")), "")
        }
        Resource::Connections => (
            match w.limit {
                Some(_) => format!(
                    "held at most {} at once, then refused more",
                    value(at, w.unit)
                ),
                None => {
                    "refused new connections (how many it held is not in the records)".to_owned()
                }
            },
            "; a connection limit (the server's, a proxy's or a pool's): past it new \
             connections are turned away",
        ),
    }
}

/// `14:03:07Z`: the time of day (UTC) of a unix instant.
fn wall_clock(unix_ns: u64) -> String {
    let of_day = unix_ns / 1_000_000_000 % 86_400;
    format!(
        "{:02}:{:02}:{:02}Z",
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60
    )
}

fn share(value: f64, limit: Option<f64>) -> f64 {
    match limit {
        Some(limit) if limit > 0.0 => value / limit * 100.0,
        _ => 0.0,
    }
}

/// A watched resource that did not cross its threshold: `app fds peak 12% of 1024
/// fds`, `host CPU peak 54%`, `app CPU peak 27% of its allowance 200%`; a peak past
/// the threshold says why it did not count (`host iowait peak 32%, past its threshold
/// (20%) for fewer than 3 readings in a row`).
fn headroom(w: &Watched) -> String {
    let mut text = peak_words(w);
    if let Some(brief) = w.brief {
        let threshold = match w.limit {
            Some(_) => format!("{:.0}% of its limit", brief.threshold),
            None => value(brief.threshold, w.unit),
        };
        let _ = write!(
            text,
            ", past its threshold ({threshold}) for fewer than {} readings in a row",
            brief.sustain
        );
    }
    text
}

fn peak_words(w: &Watched) -> String {
    let noun = noun(w.resource);
    let name = &w.name;
    match (w.resource, w.peak_percent(), w.limit) {
        (Resource::CpuAllowance, Some(percent), Some(limit)) => format!(
            "{name} CPU peak {} of one core, {percent:.0}% of its allowance {}",
            value(w.peak, "%"),
            value(limit, "%")
        ),
        (Resource::HostCpu | Resource::OneCoreOfHost, Some(percent), _) => {
            format!("{name} {noun} peak {percent:.0}%")
        }
        (_, Some(percent), Some(limit)) => {
            format!(
                "{name} {noun} peak {percent:.0}% of {}",
                value(limit, w.unit)
            )
        }
        _ if w.peak > 0.0 => format!("{name} {noun} peak {}", value(w.peak, w.unit)),
        _ => format!("{name} {noun} none"),
    }
}

fn noun(resource: Resource) -> &'static str {
    match resource {
        Resource::CpuAllowance | Resource::OneCore | Resource::HostCpu => "CPU",
        Resource::OneCoreOfHost => "busiest core",
        Resource::Steal => "steal",
        Resource::Iowait => "iowait",
        Resource::Fds => "fds",
        Resource::Memory => "memory",
        Resource::Swap => "swap out",
        Resource::Network => "network",
        Resource::EphemeralPorts => "TIME_WAIT",
        Resource::ListenQueue => "listen overflows",
        Resource::TcpErrors => "TCP errors",
        Resource::Retransmits => "retransmits",
        Resource::TcpResets => "resets sent",
        Resource::Pool => "use",
        Resource::DbConnections => "connections",
        Resource::DbBusy => "busy connections",
        Resource::Log | Resource::LogSymptom => "lines",
        Resource::Connections => "connections",
    }
}

/// A value in its unit: `97%`, `256 fds`, `12.5/s`, `1.2 GiB`.
fn value(value: f64, unit: &str) -> String {
    match unit {
        "%" => format!("{value:.0}%"),
        "/s" if value < 10.0 => format!("{value:.1}/s"),
        "/s" => format!("{value:.0}/s"),
        "bytes" => format!("{:.1} MiB", value / (1024.0 * 1024.0)),
        "bytes/s" => format!("{:.1} MiB/s", value / (1024.0 * 1024.0)),
        "connections busy" => format!("{value:.2} {unit}"),
        "" => format!("{value:.0}"),
        unit => format!("{value:.0} {unit}"),
    }
}

/// An offset from the run's start, to a tenth of a second.
fn seconds(ns: u64) -> String {
    format!("{:.1} s", ns as f64 / 1e9)
}

#[cfg(test)]
mod tests {
    use super::*;
    use analysis::diagnosis::{Brief, Crossing, GeneratorState, HOST, diagnose};

    const S: u64 = 1_000_000_000;

    fn watched(
        name: &str,
        resource: Resource,
        limit: f64,
        peak: f64,
        crossed_s: Option<u64>,
    ) -> Watched {
        Watched {
            name: name.to_owned(),
            resource,
            series: "test.series".to_owned(),
            limit: Some(limit),
            unit: if resource == Resource::Fds {
                "fds"
            } else {
                "%"
            },
            peak,
            peak_at_ns: 30 * S,
            brief: None,
            crossed: crossed_s.map(|at| Crossing {
                at_ns: at * S,
                value: peak,
            }),
            example: None,
            note: None,
        }
    }

    fn knee_at(seconds: u64) -> Knee {
        Knee {
            at_ns: seconds * S,
            offered_per_sec: 1000.0,
            peak_ok_per_sec: 950.0,
            signal: TurnKind::Latency,
        }
    }

    #[test]
    fn verdicts_without_a_first_limit_in_words() {
        let cpu = watched("app", Resource::CpuAllowance, 100.0, 40.0, None);
        let lag = analysis::GeneratorHealth::default().weigh_lag(8_000_000, 100_000, None);
        let failed = Some(Trouble {
            failed_ratio: 0.168,
        });
        // (case, knee, trouble, generator, watched, the headline holds)
        type Case<'a> = (
            &'a str,
            Option<Knee>,
            Option<Trouble>,
            Option<Behind>,
            &'a [Watched],
            &'a str,
        );
        let only_cpu = std::slice::from_ref(&cpu);
        let cases: &[Case<'_>] = &[
            (
                "generator lag",
                Some(knee_at(20)),
                None,
                Some(Behind::Lag(lag)),
                only_cpu,
                "the generator ran out (send lag p99 8ms over 1ms and against a median latency \
                 of 100µs, with requests in flight under the cap; give it more CPU or less load)",
            ),
            (
                "generator at its cap",
                Some(knee_at(20)),
                None,
                Some(Behind::AtCap { cap: 100 }),
                only_cpu,
                "the generator ran out (requests in flight reached its cap (-max-workers 100) \
                 while the answers kept their pace",
            ),
            (
                "generator short",
                Some(knee_at(20)),
                None,
                Some(Behind::SentShort {
                    asked_per_sec: 4000.0,
                    achieved_per_sec: 3000.0,
                }),
                only_cpu,
                "the generator ran out (it sent 3000 req/s of the 4000 asked; give it more CPU",
            ),
            (
                "nothing watched",
                Some(knee_at(20)),
                None,
                None,
                only_cpu,
                "nothing monitored reached its limit",
            ),
            (
                "a constant load that failed",
                None,
                failed,
                None,
                only_cpu,
                "16.8% of the requests failed: nothing monitored reached",
            ),
            (
                "held",
                None,
                None,
                None,
                only_cpu,
                "no knee, and nothing monitored",
            ),
            (
                "not judged",
                None,
                None,
                None,
                &[],
                "not judged: nothing was monitored",
            ),
        ];
        for (case, knee, trouble, behind, resources, want) in cases {
            let generator = GeneratorState {
                fell_behind: behind.clone(),
            };
            let diagnosis = diagnose(knee.clone(), *trouble, &generator, resources);
            assert!(
                headline(&diagnosis).contains(want),
                "{case}: {}",
                headline(&diagnosis)
            );
        }
    }

    #[test]
    fn log_lines_quote_their_first_line_and_symptoms_never_come_first() {
        let log = |resource, crossed_s, example: &str| Watched {
            name: "nginx log (too_many_open_files)".to_owned(),
            unit: "/s",
            limit: None,
            example: Some(example.to_owned()),
            ..watched("log", resource, 1.0, 40.0, Some(crossed_s))
        };
        let timeouts = log(Resource::LogSymptom, 5, "upstream timed out");
        let fds = log(
            Resource::Log,
            9,
            "accept4() failed (24: Too many open files)",
        );
        let diagnosis = diagnose(
            Some(knee_at(10)),
            None,
            &GeneratorState::default(),
            &[timeouts, fds],
        );
        let Verdict::FirstLimit { finding } = diagnosis.verdict else {
            panic!("{:?}", diagnosis.verdict);
        };
        assert_eq!(diagnosis.findings[finding].watched.resource, Resource::Log);
        assert!(
            headline(&diagnosis)
                .ends_with("; first line: \"accept4() failed (24: Too many open files)\""),
            "{}",
            headline(&diagnosis)
        );
        assert!(
            lines(&diagnosis)[1].starts_with("before it: nginx log"),
            "{:?}",
            lines(&diagnosis)
        );
    }

    #[test]
    fn resets_follow_and_a_busy_db_pool_leads_with_its_transactions() {
        let resets = Watched {
            unit: "/s",
            limit: None,
            ..watched(HOST, Resource::TcpResets, 1.0, 30.0, Some(4))
        };
        let busy = Watched {
            unit: "connections busy",
            note: Some(Note::Transactions {
                peak_per_sec: 212.0,
            }),
            ..watched("db", Resource::DbBusy, 1.0, 0.98, Some(8))
        };
        let link = Watched {
            name: "host eth0".to_owned(),
            unit: "bytes/s",
            ..watched("host eth0", Resource::Network, 125e6, 40e6, None)
        };
        let diagnosis = diagnose(
            Some(knee_at(9)),
            None,
            &GeneratorState::default(),
            &[resets, busy, link],
        );
        let Verdict::FirstLimit { finding } = diagnosis.verdict else {
            panic!("{:?}", diagnosis.verdict);
        };
        assert_eq!(finding, 1, "{:?}", lines(&diagnosis));
        let headline = headline(&diagnosis);
        assert!(
            headline.contains("db connections busy 98% of the time (0.98 of 1 open)")
                && headline.ends_with("; transactions peaked at 212/s"),
            "{headline}"
        );
        let lines = lines(&diagnosis);
        assert!(
            lines[1].starts_with("before it: host sending TCP resets, 30/s"),
            "{lines:?}"
        );
        assert!(
            lines[2].contains("host eth0 network peak 32% of 119.2 MiB/s"),
            "{lines:?}"
        );
    }

    /// A held step's connection limit: the most held, the refusals and their status,
    /// the first one quoted; without a knee, after what failed. Cuts are said when
    /// there were some.
    #[test]
    fn a_connection_limit_says_the_most_held_and_the_refusals() {
        let limit = |cut| Watched {
            name: "ws://127.0.0.1:8080/room".to_owned(),
            series: "connections of step \"room\"".to_owned(),
            unit: "connections",
            example: Some("websocket upgrade refused: 503 Service Unavailable".to_owned()),
            note: Some(Note::Refused {
                refused: 25,
                status: 503,
                cut,
            }),
            peak_at_ns: 1_900_000_000,
            ..watched("room", Resource::Connections, 10.0, 10.0, Some(2))
        };
        let failed = Some(Trouble { failed_ratio: 0.1 });
        // (case, the limit, the knee, the headline)
        let rows = [
            (
                "no knee",
                limit(0),
                None,
                "10.0% of the requests failed: first limit ws://127.0.0.1:8080/room held at \
                 most 10 connections at once, then refused more from 2.0 s (peak 10 \
                 connections at 1.9 s; connections of step \"room\"); a connection limit \
                 (the server's, a proxy's or a pool's): past it new connections are turned \
                 away; 25 new connections refused with 503; the first refusal: \"websocket \
                 upgrade refused: 503 Service Unavailable\"",
            ),
            (
                "cut too, before a knee",
                limit(3),
                Some(knee_at(9)),
                "max 950 req/s held; the knee at 1000/s offered, 9.0 s (latency turned \
                 first): first limit ws://127.0.0.1:8080/room held at most 10 connections at \
                 once, then refused more from 2.0 s, 7.0 s before the knee (peak 10 \
                 connections at 1.9 s; connections of step \"room\"); a connection limit \
                 (the server's, a proxy's or a pool's): past it new connections are turned \
                 away; 25 new connections refused with 503, 3 held ones cut; the first \
                 refusal: \"websocket upgrade refused: 503 Service Unavailable\"",
            ),
        ];
        let unknown = Watched {
            limit: None,
            peak: 0.0,
            ..limit(0)
        };
        let diagnosis = diagnose(None, failed, &GeneratorState::default(), &[unknown]);
        assert!(
            headline(&diagnosis).contains(
                "ws://127.0.0.1:8080/room refused new connections (how many it held is not \
                 in the records) from 2.0 s (connections of step \"room\"); a connection \
                 limit"
            ),
            "{}",
            headline(&diagnosis)
        );
        for (case, limit, knee, want) in rows {
            let trouble = if knee.is_none() { failed } else { None };
            let diagnosis = diagnose(knee, trouble, &GeneratorState::default(), &[limit]);
            assert_eq!(diagnosis.verdict_name(), "first_limit", "{case}");
            assert_eq!(headline(&diagnosis), want, "{case}");
            assert_eq!(
                short_name(&diagnosis.findings[0].watched),
                "ws://127.0.0.1:8080/room connections",
                "{case}"
            );
        }
    }

    #[test]
    fn a_generator_that_fell_behind_hides_the_server_findings_from_the_verdict() {
        let fds = watched("nginx", Resource::Fds, 256.0, 250.0, Some(5));
        let behind = GeneratorState {
            fell_behind: Some(Behind::SentShort {
                asked_per_sec: 4000.0,
                achieved_per_sec: 3000.0,
            }),
        };
        let diagnosis = diagnose(Some(knee_at(10)), None, &behind, &[fds]);
        assert!(matches!(diagnosis.verdict, Verdict::GeneratorRanOut { .. }));
        assert!(
            !headline(&diagnosis).contains("nginx"),
            "{}",
            headline(&diagnosis)
        );
    }

    #[test]
    fn lines_say_the_limit_its_evidence_and_the_headroom_of_the_rest() {
        let resources = [
            watched("nginx", Resource::Fds, 256.0, 251.0, Some(9)),
            watched("nginx", Resource::CpuAllowance, 200.0, 150.0, None),
            watched("host", Resource::HostCpu, 100.0, 60.0, None),
            watched("app", Resource::OneCore, 200.0, 99.0, Some(25)),
        ];
        let mut diagnosis = diagnose(
            Some(knee_at(10)),
            None,
            &GeneratorState::default(),
            &resources,
        );
        assert_eq!(
            lines(&diagnosis),
            [
                "max 950 req/s held; the knee at 1000/s offered, 10.0 s (latency turned first): first limit \
                 nginx fds at 98% of their limit (256 fds) from 9.0 s, at the knee (peak 251 fds at 30.0 s; \
                 test.series); beyond it accept() fails with \"too many open files\"",
                "then: app held at 99% of one core while it may use 200% from 25.0 s, 15.0 s after the knee \
                 (peak 99% at 30.0 s; test.series); one thread's ceiling (a single-threaded server, a global lock)",
                "held (peak of each): nginx CPU peak 150% of one core, 75% of its allowance 200%; host CPU peak 60%",
            ]
        );
        // 2026-11-25T14:00:00Z: each time also on the wall clock.
        diagnosis.start_unix_ns = Some(1_795_615_200 * S);
        assert!(
            lines(&diagnosis)[0].contains("from 9.0 s (14:00:09Z), at the knee"),
            "{:?}",
            lines(&diagnosis)
        );
    }

    #[test]
    fn a_peak_past_its_threshold_that_did_not_last_says_why_it_held() {
        let iowait = Watched {
            limit: None,
            brief: Some(Brief {
                threshold: 20.0,
                sustain: 3,
            }),
            ..watched("host", Resource::Iowait, 0.0, 32.0, None)
        };
        let fds = Watched {
            brief: Some(Brief {
                threshold: 90.0,
                sustain: 3,
            }),
            ..watched("nginx", Resource::Fds, 1024.0, 1000.0, None)
        };
        let diagnosis = diagnose(None, None, &GeneratorState::default(), &[iowait, fds]);
        assert_eq!(
            lines(&diagnosis).last().map(String::as_str),
            Some(
                "held (peak of each): nginx fds peak 98% of 1024 fds, past its threshold (90% of \
                 its limit) for fewer than 3 readings in a row; host iowait peak 32%, past its \
                 threshold (20%) for fewer than 3 readings in a row"
            )
        );
    }

    #[test]
    fn failed_requests_are_said_in_the_answers_words_and_an_unreached_target_first() {
        let host = watched("host", Resource::HostCpu, 100.0, 40.0, None);
        let behind = GeneratorState {
            fell_behind: Some(Behind::AtCap { cap: 100 }),
        };
        let failures = |kinds: Vec<(FailedAs, u64)>| Failures {
            server: "127.0.0.1:8080".to_owned(),
            kinds,
            from: Some((2 * S, 714.0)),
        };
        let trouble = Some(Trouble {
            failed_ratio: 0.023,
        });
        // (case, generator, watched, failures, unreached, headline)
        type Row<'a> = (
            &'a str,
            GeneratorState,
            Vec<Watched>,
            Option<Failures>,
            Vec<Unreached>,
            &'a str,
        );
        let rows: Vec<Row<'_>> = vec![
            (
                "a rate limit's 503s",
                GeneratorState::default(),
                vec![host.clone()],
                Some(failures(vec![(FailedAs::Status(503), 1234)])),
                vec![],
                "2.3% of the requests failed: 127.0.0.1:8080 answered 503 (1234) from 714/s \
                 while no watched resource was near its limit: a limit the server is configured \
                 with (a rate limit, a queue, an upstream)",
            ),
            (
                "timeouts, nothing watched",
                GeneratorState::default(),
                vec![],
                Some(failures(vec![(FailedAs::Error("timeout".to_owned()), 9)])),
                vec![],
                "2.3% of the requests failed: requests to 127.0.0.1:8080 failed with timeout (9) \
                 from 714/s with nothing watched: the server (or what is between) stopped \
                 answering in time; its logs or a monitor of it say why",
            ),
            (
                "nothing listened, the generator behind too",
                behind,
                vec![host],
                Some(failures(vec![(FailedAs::Error("connect".to_owned()), 50)])),
                vec![Unreached {
                    address: "127.0.0.1:18199".to_owned(),
                    error: "connection refused".to_owned(),
                    requests: 50,
                }],
                "nothing listened at 127.0.0.1:18199: connection refused, every request (50)",
            ),
        ];
        for (case, generator, watched, failures, unreached, want) in rows {
            let mut diagnosis = diagnose(None, trouble, &generator, &watched);
            diagnosis.failures = failures;
            let diagnosis = diagnosis.with_unreached(unreached);
            assert_eq!(headline(&diagnosis), want, "{case}");
        }
    }

    #[test]
    fn each_finding_has_its_line_and_a_short_name_for_a_chart() {
        let resources = [
            watched("nginx", Resource::Fds, 256.0, 251.0, Some(9)),
            watched(HOST, Resource::ListenQueue, 1.0, 40.0, Some(25)),
            watched(
                "nginx log (timeout)",
                Resource::LogSymptom,
                1.0,
                3.0,
                Some(4),
            ),
        ];
        let diagnosis = diagnose(
            Some(knee_at(10)),
            None,
            &GeneratorState::default(),
            &resources,
        );
        // (finding's name, its line's start, its short name)
        let rows = [
            (
                "nginx log (timeout)",
                "before it: nginx log",
                "nginx log (timeout)",
            ),
            ("nginx", "first limit nginx fds at 98%", "nginx fds"),
            (HOST, "then: host listen queue", "host listen overflows"),
        ];
        assert_eq!(diagnosis.findings.len(), rows.len());
        for (index, (name, line, short)) in rows.into_iter().enumerate() {
            let finding = &diagnosis.findings[index];
            assert_eq!(finding.watched.name, name);
            let got = finding_line(&diagnosis, index);
            assert!(got.starts_with(line), "{got}");
            assert_eq!(short_name(&finding.watched), short);
        }
        // The same words as the lines: the headline ends with the first limit's, the
        // others are lines of their own.
        let lines = lines(&diagnosis);
        let first = finding_line(&diagnosis, 1);
        assert!(lines[0].ends_with(&first), "{lines:?}");
        assert_eq!(lines[1], finding_line(&diagnosis, 0));
        assert_eq!(lines[2], finding_line(&diagnosis, 2));
        let knee = diagnosis.knee.as_ref().map(knee);
        assert!(knee.is_some_and(|knee| lines[0].starts_with(&knee)));
        let held = diagnose(None, None, &GeneratorState::default(), &resources[..1]);
        assert_eq!(held.first_limit(), Some(0));
        assert!(finding_line(&held, 0).starts_with("first limit nginx fds"));
    }
}
