//! The text report: vegeta's block character for character, then the flow checks (a
//! table of its own, only when some target has checks), then our extra rows aligned to
//! vegeta's columns (label 14 wide, bracket field 34 wide, values from column 49), then
//! plain warnings.

use std::fmt::Write as _;

use analysis::Finding;
use record::{Protocol, SamplerKind};
use units::GoDuration;

use crate::checks::CheckFigures;
use crate::extra_rows::Extras;
use crate::metrics::Report;
use crate::replay_render::write_replay_text;
use crate::resources::{ResourceSummary, SamplerFigures};
use crate::tabwriter::align;
use crate::words;
use crate::words::diagnosis::turn_name;

/// Width of vegeta's label column (`Status Codes` + padding).
pub const LABEL_WIDTH: usize = 14;
/// Width of vegeta's bracket column (`[min, mean, 50, 90, 95, 99, max]` + padding).
pub const BRACKET_WIDTH: usize = 34;

/// Appends the text report for `report` to `out`.
pub fn write_text(out: &mut String, report: &Report) {
    out.push_str(&align(&vegeta_block(report), &[]));
    // After a blank line: vegeta's readers take every line up to one as the error set.
    if !report.checks.is_empty() {
        out.push('\n');
        write_checks(out, &report.checks);
    }
    let mut extras = extra_rows(&report.extras);
    if let Some(resources) = &report.extras.resources {
        extras.push_str(&resource_rows(resources));
    }
    // Below every other extra row: a reader looks for it last, after the run's facts.
    if let Some(finding) = &report.extras.saturation {
        saturation_rows(&mut extras, finding);
    }
    if !extras.is_empty() {
        out.push('\n');
        out.push_str(&align(&extras, &[LABEL_WIDTH, BRACKET_WIDTH]));
    }
    if let Some(diagnosis) = &report.extras.diagnosis {
        write_diagnosis(out, diagnosis);
    }
    write_replay_text(out, &report.extras.replay);
    crate::traces::write_traces_text(out, report.extras.traces.as_ref());
    for warning in &report.extras.warnings {
        let _ = writeln!(out, "WARNING: {warning}");
    }
    // A diagnosis says what the resource warnings would, with its evidence and order.
    if report.extras.diagnosis.is_none() {
        for warning in report.extras.resources.iter().flat_map(|r| &r.warnings) {
            let _ = writeln!(out, "WARNING: {warning}");
        }
    }
}

/// The checks block: a header, one row per check in report order, the total over them
/// all; names left-aligned, counts and pass rates right-aligned so they line up by
/// digit. Pass rates round down, so a check that failed never reads `100.00%`.
///
/// ```text
/// Checks                      Passes  Fails  Pass Rate
/// login: status 200              998      2     99.80%
/// login: json $.token exists    1000      0    100.00%
/// Total                         1998      2     99.90%
/// ```
fn write_checks(out: &mut String, checks: &[CheckFigures]) {
    let row = |name: &str, passes: u64, fails: u64| {
        [
            name.to_owned(),
            passes.to_string(),
            fails.to_string(),
            words::floor_percent(passes, passes + fails),
        ]
    };
    let mut rows = vec![["Checks", "Passes", "Fails", "Pass Rate"].map(str::to_owned)];
    rows.extend(checks.iter().map(|c| row(&c.name, c.passes, c.fails)));
    let passes = checks.iter().map(|c| c.passes).sum();
    let fails = checks.iter().map(|c| c.fails).sum();
    rows.push(row("Total", passes, fails));
    let mut widths = [0; 4];
    for cells in &rows {
        for (width, cell) in widths.iter_mut().zip(cells) {
            *width = (*width).max(cell.chars().count());
        }
    }
    for [name, passes, fails, rate] in &rows {
        let _ = writeln!(
            out,
            "{name:<w0$}  {passes:>w1$}  {fails:>w2$}  {rate:>w3$}",
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2],
            w3 = widths[3]
        );
    }
}

/// The diagnosis block: sentences, not columns, as a reader pastes them.
fn write_diagnosis(out: &mut String, diagnosis: &analysis::Diagnosis) {
    out.push_str("Diagnosis:\n");
    for line in words::diagnosis::lines(diagnosis) {
        let _ = writeln!(out, "{line}");
    }
}

/// The resource rows, the diagnosis and warnings alone, for inputs without requests.
pub fn write_resources_text(
    out: &mut String,
    resources: &ResourceSummary,
    diagnosis: Option<&analysis::Diagnosis>,
) {
    out.push_str(&align(
        &resource_rows(resources),
        &[LABEL_WIDTH, BRACKET_WIDTH],
    ));
    match diagnosis {
        Some(diagnosis) => write_diagnosis(out, diagnosis),
        None => {
            for warning in &resources.warnings {
                let _ = writeln!(out, "WARNING: {warning}");
            }
        }
    }
}

fn mib(bytes: f64) -> String {
    format!("{:.1} MiB", bytes / f64::from(1 << 20))
}

/// One row per measure the samples hold: the host's, then each process group's, then
/// each database's, then the sample counts.
fn resource_rows(resources: &ResourceSummary) -> String {
    let mut text = String::new();
    for host in resources.of_kind(&SamplerKind::Host) {
        host_rows(&mut text, host);
    }
    for group in resources.of_kind(&SamplerKind::Process) {
        process_rows(&mut text, group);
    }
    for db in resources.of_kind(&SamplerKind::Postgres) {
        database_rows(&mut text, db);
    }
    let _ = writeln!(
        text,
        "Samples\t[series, values, gaps]\t{}, {}, {}",
        resources.series, resources.values, resources.gaps
    );
    text
}

/// The host's rows: CPU, memory, TCP sockets, file descriptors.
fn host_rows(text: &mut String, host: &SamplerFigures) {
    if let Some(cpu) = host.stat("cpu") {
        let _ = writeln!(
            text,
            "Host CPU\t[peak, mean]\t{:.2}%, {:.2}%",
            cpu.peak,
            cpu.mean()
        );
    }
    if let (Some(used), Some(total)) = (host.stat("memory_used"), host.stat("memory_total")) {
        let _ = writeln!(
            text,
            "Host Memory\t[peak used, total]\t{}, {}",
            mib(used.peak),
            mib(total.peak)
        );
    }
    if let Some(established) = host.stat("established") {
        let time_wait = host.stat("time_wait").map_or(0.0, |s| s.peak);
        let _ = writeln!(
            text,
            "TCP Sockets\t[peak estab, peak time_wait]\t{:.0}, {time_wait:.0}",
            established.peak
        );
    }
    if let (Some(open), Some(max)) = (host.stat("fds"), host.stat("fds_max")) {
        let _ = writeln!(
            text,
            "Host FDs\t[peak open, max]\t{:.0}, {:.0}",
            open.peak, max.peak
        );
    }
}

/// A process group's rows: CPU, RSS, file descriptors against the limit.
fn process_rows(text: &mut String, group: &SamplerFigures) {
    let name = &group.name;
    if let Some(cpu) = group.stat("cpu") {
        let _ = writeln!(
            text,
            "Process CPU\t[group: peak, mean]\t{name}: {:.2}%, {:.2}%",
            cpu.peak,
            cpu.mean()
        );
    }
    if let Some(rss) = group.stat("rss") {
        let _ = writeln!(
            text,
            "Process RSS\t[group: peak]\t{name}: {}",
            mib(rss.peak)
        );
    }
    if let (Some(fds), Some(limit), Some(used)) = (
        group.stat("fds"),
        group.stat("fd_limit"),
        group.stat("fd_use"),
    ) {
        let _ = writeln!(
            text,
            "Process FDs\t[group: peak, limit/proc, max %]\t{name}: {:.0}, {:.0}, {:.2}%",
            fds.peak, limit.peak, used.peak
        );
    }
}

/// A database's row: transactions per second and connections.
fn database_rows(text: &mut String, db: &SamplerFigures) {
    if let Some(tx) = db.stat("tx") {
        let connections = db.stat("connections").map_or(0.0, |s| s.peak);
        let _ = writeln!(
            text,
            "Database\t[server: peak tx/s, mean, conns]\t{}: {:.2}, {:.2}, {connections:.0}",
            db.name,
            tx.peak,
            tx.mean()
        );
    }
}

fn vegeta_block(report: &Report) -> String {
    let l = &report.latencies;
    let mut text = String::new();
    let _ = write!(
        text,
        "Requests\t[total, rate, throughput]\t{}, {:.2}, {:.2}\n\
         Duration\t[total, attack, wait]\t{}, {}, {}\n\
         Latencies\t[min, mean, 50, 90, 95, 99, max]\t{}, {}, {}, {}, {}, {}, {}\n\
         Bytes In\t[total, mean]\t{}, {:.2}\n\
         Bytes Out\t[total, mean]\t{}, {:.2}\n\
         Success\t[ratio]\t{:.2}%\n\
         Status Codes\t[code:count]\t",
        report.requests,
        report.rate_per_sec,
        report.throughput_per_sec,
        GoDuration::report_ns(report.duration_ns.saturating_add(report.wait_ns)),
        GoDuration::report_ns(report.duration_ns),
        GoDuration::report_ns(report.wait_ns),
        GoDuration::report_ns(l.min_ns),
        GoDuration::report_ns(l.mean_ns),
        GoDuration::report_ns(l.p50_ns),
        GoDuration::report_ns(l.p90_ns),
        GoDuration::report_ns(l.p95_ns),
        GoDuration::report_ns(l.p99_ns),
        GoDuration::report_ns(l.max_ns),
        report.bytes_in.total,
        report.bytes_in.mean,
        report.bytes_out.total,
        report.bytes_out.mean,
        report.success_ratio * 100.0,
    );
    for (code, count) in &report.status_codes {
        let _ = write!(text, "{code}:{count}  ");
    }
    text.push_str("\nError Set:\n");
    for error in &report.errors {
        let _ = writeln!(text, "{error}");
    }
    text
}

/// Our rows, only those with data: tab-separated like vegeta's.
fn extra_rows(extras: &Extras) -> String {
    let mut text = String::new();
    if let Some(lag) = &extras.send_lag {
        let _ = writeln!(
            text,
            "Send Lag\t[mean, 50, 99, max]\t{}, {}, {}, {}",
            GoDuration::report_ns(lag.mean_ns),
            GoDuration::report_ns(lag.p50_ns),
            GoDuration::report_ns(lag.p99_ns),
            GoDuration::report_ns(lag.max_ns)
        );
    }
    if let Some(precision_ns) = extras.precision_ns {
        let _ = writeln!(
            text,
            "Precision\t[wake-up budget]\t{}",
            GoDuration::report_ns(precision_ns)
        );
    }
    if let Some(asked) = &extras.asked {
        let _ = writeln!(
            text,
            "Asked Rate\t[asked, achieved, ratio, unsent]\t{:.2}, {:.2}, {:.2}%, {}",
            asked.asked_per_sec,
            asked.achieved_per_sec,
            asked.ratio * 100.0,
            asked.unsent
        );
    }
    if let Some(generator) = &extras.generator {
        let _ = writeln!(
            text,
            "Generator\t[cpu, cpu/request, peak rss]\t{}, {}, {}",
            GoDuration::report_ns(generator.cpu_ns),
            GoDuration::report_ns(generator.cpu_per_request_ns),
            mib(generator.peak_rss_bytes as f64)
        );
    }
    if let Some(run) = &extras.run {
        let _ = writeln!(
            text,
            "Run\t[model, attacks, stop]\t{}, {}, {}",
            run.model, run.attacks, run.stop
        );
    }
    if let Some(protocols) = &extras.protocols {
        protocol_row(&mut text, protocols);
    }
    text
}

/// `Protocols  [h2, http/1.1]  9900, 100`: names in the brackets, counts after, as
/// vegeta's rows pair them.
fn protocol_row(text: &mut String, protocols: &[(Protocol, u64)]) {
    let names: Vec<&str> = protocols.iter().map(|(p, _)| p.name()).collect();
    let counts: Vec<String> = protocols.iter().map(|(_, n)| n.to_string()).collect();
    let _ = writeln!(
        text,
        "Protocols\t[{}]\t{}",
        names.join(", "),
        counts.join(", ")
    );
}

/// The saturation point of a rising open-model load: one row for the point, one per
/// signal that turned with its reason; one row saying so when nothing turned; nothing
/// when the load did not rise (a constant rate, a closed model).
fn saturation_rows(text: &mut String, finding: &Finding) {
    match finding {
        Finding::NotARamp { .. } => {}
        Finding::NoSaturation { .. } => {
            let _ = writeln!(
                text,
                "Saturation\t[none]\t{}",
                words::saturation::finding(finding)
            );
        }
        Finding::Saturated {
            point,
            turns,
            peak_ok_per_sec,
        } => {
            let _ = writeln!(
                text,
                "Saturation\t[offered, peak ok, at, signal]\t{:.2}, {peak_ok_per_sec:.2}, {}, {}",
                point.offered_per_sec,
                GoDuration::report_ns(point.start_ns),
                turn_name(point.kind())
            );
            for turn in turns {
                let _ = writeln!(
                    text,
                    "Saturation\t[{}]\t{}",
                    turn_name(turn.kind()),
                    words::saturation::turn(turn)
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(name: &str, passes: u64, fails: u64) -> CheckFigures {
        CheckFigures {
            name: name.to_owned(),
            scenario: String::new(),
            step: String::new(),
            check: String::new(),
            passes,
            fails,
        }
    }

    #[test]
    fn checks_line_up_by_digit() {
        let rows: &[(&[CheckFigures], &str)] = &[
            (
                &[check("a: status 200", 5, 0)],
                "Checks         Passes  Fails  Pass Rate\n\
                 a: status 200       5      0    100.00%\n\
                 Total               5      0    100.00%\n",
            ),
            // Widths count characters; a failure never reads 100.00%; the total's
            // counts may be the widest.
            (
                &[
                    check("ü: latency < 1µs", 999_999, 1),
                    check("ü: never", 0, 999_999),
                ],
                "Checks            Passes    Fails  Pass Rate\n\
                 ü: latency < 1µs  999999        1     99.99%\n\
                 ü: never               0   999999      0.00%\n\
                 Total             999999  1000000     49.99%\n",
            ),
        ];
        for (checks, want) in rows {
            let mut out = String::new();
            write_checks(&mut out, checks);
            assert_eq!(out, *want);
        }
    }

    #[test]
    fn extra_labels_fit_vegeta_columns() {
        let extras = Extras {
            send_lag: Some(crate::extra_rows::LagStats::default()),
            lag: None,
            precision_ns: Some(100_000),
            asked: Some(crate::extra_rows::AskedRate {
                asked_per_sec: 1.0,
                achieved_per_sec: 1.0,
                ratio: 1.0,
                unsent: 0,
            }),
            generator: Some(crate::extra_rows::GeneratorUse {
                cpu_ns: 0,
                cpu_per_request_ns: 0,
                peak_rss_bytes: 0,
            }),
            run: Some(crate::extra_rows::RunShape {
                model: "open",
                attacks: 1,
                stop: "completed".to_owned(),
            }),
            protocols: Some(Protocol::ALL.iter().map(|&p| (p, 1)).collect()),
            warnings: Vec::new(),
            resources: None,
            saturation: None,
            diagnosis: None,
            replay: Vec::new(),
            traces: None,
        };
        let rows = extra_rows(&extras);
        assert_eq!(rows.lines().count(), 6);
        for line in rows.lines() {
            let cells: Vec<&str> = line.split('\t').collect();
            assert!(cells[0].len() + 2 <= LABEL_WIDTH, "{line}");
            assert!(cells[1].len() + 2 <= BRACKET_WIDTH, "{line}");
        }
        let aligned = align(&rows, &[LABEL_WIDTH, BRACKET_WIDTH]);
        for line in aligned.lines() {
            assert_eq!(line.chars().nth(LABEL_WIDTH - 1), Some(' '), "{line}");
            assert_eq!(line.chars().nth(LABEL_WIDTH), Some('['), "{line}");
            let values = line.chars().nth(LABEL_WIDTH + BRACKET_WIDTH);
            assert!(
                values.is_some_and(|c| c != ' '),
                "values at column 49: {line}"
            );
        }
    }
}
