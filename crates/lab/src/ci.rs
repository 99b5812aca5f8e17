//! What a CI job reads: JUnit XML (`-junit FILE`) and a Markdown summary for a job's
//! summary page (`-summary-md FILE`), worded from verdicts already made: a plan's step
//! rows ([`RunSummary`]) or an attack's stop rules. Nothing here judges.
//!
//! A plan is a `<testsuites>`, each variant a `<testsuite>` (its SLO as properties),
//! each step a `<testcase>`: `fail` is a `<failure>` whose message is the verdict's
//! reasons (the figure got and the bound, e.g. `p99 312.0ms over 200.0ms`) and whose
//! text has the step's figures; `inconclusive` (the generator did not deliver) and
//! `failed` (the step could not run) are `<error>`s, as neither says the server
//! missed; `skipped` and `interrupted` are `<skipped>`. The layout is the common
//! JUnit schema's (testsuites/testsuite/testcase with name, tests, failures, errors,
//! skipped and time), which GitHub, GitLab and Jenkins read.

use std::fmt::Write as _;

use analysis::Slo;

use crate::RunSummary;
use crate::folder::{StepRow, StepVerdict};

/// One JUnit test case.
#[derive(Clone, Debug, PartialEq)]
pub struct TestCase {
    /// What was judged (a step, a stop rule).
    pub name: String,
    /// Where it belongs (a plan's variant, an attack).
    pub classname: String,
    /// Seconds it took.
    pub seconds: f64,
    /// How it ended.
    pub outcome: Outcome,
    /// The figures, for `<system-out>` (empty: none).
    pub output: String,
}

/// How a test case ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// It held.
    Passed,
    /// The server missed: `message` says by how much.
    Failure {
        /// The verdict's reasons.
        message: String,
        /// `type`: the verdict's word.
        kind: String,
    },
    /// Nothing could be said about the server (generator short, step not run).
    Error {
        /// Why.
        message: String,
        /// `type`: the verdict's word.
        kind: String,
    },
    /// Not run.
    Skipped {
        /// Why.
        message: String,
    },
}

/// One JUnit test suite.
#[derive(Clone, Debug, PartialEq)]
pub struct TestSuite {
    /// Its name.
    pub name: String,
    /// (name, value) pairs: the bounds that judged its cases.
    pub properties: Vec<(String, String)>,
    /// Its cases.
    pub cases: Vec<TestCase>,
}

/// The JUnit XML of `suites`, named `name`.
pub fn junit_xml(name: &str, suites: &[TestSuite]) -> String {
    let count = |f: fn(&Outcome) -> bool| {
        suites
            .iter()
            .flat_map(|s| &s.cases)
            .filter(|c| f(&c.outcome))
            .count()
    };
    let tests: usize = suites.iter().map(|s| s.cases.len()).sum();
    let seconds: f64 = suites
        .iter()
        .flat_map(|s| &s.cases)
        .map(|c| c.seconds)
        .sum();
    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        xml,
        "<testsuites name=\"{}\" tests=\"{tests}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{seconds:.3}\">",
        escape(name),
        count(|o| matches!(o, Outcome::Failure { .. })),
        count(|o| matches!(o, Outcome::Error { .. })),
        count(|o| matches!(o, Outcome::Skipped { .. })),
    );
    for (id, suite) in suites.iter().enumerate() {
        suite_xml(&mut xml, id, suite);
    }
    xml.push_str("</testsuites>\n");
    xml
}

fn suite_xml(xml: &mut String, id: usize, suite: &TestSuite) {
    let count = |f: fn(&Outcome) -> bool| suite.cases.iter().filter(|c| f(&c.outcome)).count();
    let seconds: f64 = suite.cases.iter().map(|c| c.seconds).sum();
    let _ = writeln!(
        xml,
        "  <testsuite id=\"{id}\" name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{seconds:.3}\">",
        escape(&suite.name),
        suite.cases.len(),
        count(|o| matches!(o, Outcome::Failure { .. })),
        count(|o| matches!(o, Outcome::Error { .. })),
        count(|o| matches!(o, Outcome::Skipped { .. })),
    );
    if !suite.properties.is_empty() {
        xml.push_str("    <properties>\n");
        for (name, value) in &suite.properties {
            let _ = writeln!(
                xml,
                "      <property name=\"{}\" value=\"{}\"/>",
                escape(name),
                escape(value)
            );
        }
        xml.push_str("    </properties>\n");
    }
    for case in &suite.cases {
        case_xml(xml, case);
    }
    xml.push_str("  </testsuite>\n");
}

fn case_xml(xml: &mut String, case: &TestCase) {
    let _ = write!(
        xml,
        "    <testcase name=\"{}\" classname=\"{}\" time=\"{:.3}\"",
        escape(&case.name),
        escape(&case.classname),
        case.seconds
    );
    let element = match &case.outcome {
        Outcome::Passed => None,
        Outcome::Failure { message, kind } => Some(("failure", message, Some(kind))),
        Outcome::Error { message, kind } => Some(("error", message, Some(kind))),
        Outcome::Skipped { message } => Some(("skipped", message, None)),
    };
    if element.is_none() && case.output.is_empty() {
        xml.push_str("/>\n");
        return;
    }
    xml.push_str(">\n");
    if let Some((tag, message, kind)) = element {
        let kind = kind.map(|k| format!(" type=\"{}\"", escape(k)));
        let _ = writeln!(
            xml,
            "      <{tag} message=\"{}\"{}/>",
            escape(message),
            kind.unwrap_or_default()
        );
    }
    if !case.output.is_empty() {
        let _ = writeln!(
            xml,
            "      <system-out>{}</system-out>",
            escape(&case.output)
        );
    }
    xml.push_str("    </testcase>\n");
}

/// Text as XML character data or an attribute value: the markup characters escaped
/// as HTML's ([`plot::escape_html`], one escaper for both), line breaks and tabs kept
/// as character references (an attribute's value would fold them into spaces), and
/// the characters XML 1.0 cannot hold (most control characters) dropped.
pub fn escape(text: &str) -> String {
    let held = |c: &char| {
        matches!(c, '\n' | '\t' | '\r')
            || (u32::from(*c) >= 0x20 && !matches!(c, '\u{fffe}' | '\u{ffff}'))
    };
    let kept: String = text.chars().filter(held).collect();
    (plot::escape_html(&kept).replace('\n', "&#10;"))
        .replace('\t', "&#9;")
        .replace('\r', "&#13;")
}

/// A plan's run (judged by `slo`) as test suites: one per variant (in the order its steps ran), each
/// step a case.
pub fn plan_suites(slo: &Slo, summary: &RunSummary) -> Vec<TestSuite> {
    let properties = slo_properties(slo);
    let mut suites: Vec<TestSuite> = Vec::new();
    for row in &summary.steps {
        let case = step_case(&summary.plan, row);
        match suites.iter_mut().find(|s| s.name == row.variant) {
            Some(suite) => suite.cases.push(case),
            None => suites.push(TestSuite {
                name: row.variant.clone(),
                properties: properties.clone(),
                cases: vec![case],
            }),
        }
    }
    suites
}

/// The bounds of an SLO as properties: `slo.success >= 99%`, `slo.p99 <= 200ms`.
fn slo_properties(slo: &Slo) -> Vec<(String, String)> {
    let mut properties = Vec::new();
    if let Some(min) = slo.min_success_ratio {
        properties.push(("slo.success".to_owned(), format!(">= {}%", min * 100.0)));
    }
    for (percentile, max_ns) in &slo.max_latency_ns {
        properties.push((
            format!("slo.{percentile}"),
            format!(
                "<= {}",
                units::GoDuration(std::time::Duration::from_nanos(*max_ns))
            ),
        ));
    }
    for (kind, max) in &slo.max_error_ratio_by_kind {
        properties.push((format!("slo.errors.{kind}"), format!("<= {}%", max * 100.0)));
    }
    if let Some(min) = slo.min_check_pass_ratio {
        properties.push(("slo.checks".to_owned(), format!(">= {}%", min * 100.0)));
    }
    for (name, min) in &slo.min_pass_ratio_by_check {
        properties.push((format!("slo.checks.{name}"), format!(">= {}%", min * 100.0)));
    }
    properties
}

/// A step as a case: `400/s, steps/001-pool-400` (with its axis values and repeat when
/// it has them, and where its files are), its verdict as the outcome, its figures as
/// output.
fn step_case(plan_name: &str, row: &StepRow) -> TestCase {
    let mut name = row.offer();
    for (axis, value) in &row.params {
        let _ = write!(name, ", {axis}={value}");
    }
    if row.repeat > 1 {
        let _ = write!(name, ", repeat {}", row.repeat);
    }
    let _ = write!(name, ", steps/{}", row.step);
    let message = if row.why.is_empty() {
        row.verdict.word().to_owned()
    } else {
        row.why.clone()
    };
    let kind = row.verdict.word().to_owned();
    let outcome = match row.verdict {
        StepVerdict::Pass => Outcome::Passed,
        StepVerdict::Fail => Outcome::Failure { message, kind },
        StepVerdict::Inconclusive | StepVerdict::Failed => Outcome::Error { message, kind },
        StepVerdict::Skipped | StepVerdict::Interrupted => Outcome::Skipped { message },
    };
    let output = if row.verdict.is_judged() {
        let [achieved, success, p50, p90, p99, max] = row.figure_texts();
        format!(
            "asked/s {:.1} achieved/s {achieved} requests {} success {success} p50 {p50} p90 {p90} p99 {p99} max {max}",
            row.asked_per_sec, row.requests
        )
    } else {
        String::new()
    };
    TestCase {
        name,
        classname: format!("{plan_name}.{}", row.variant),
        seconds: row.seconds,
        outcome,
        output,
    }
}

/// The Markdown for a CI job's summary page: a line of counts, then `summary.md`.
pub fn plan_markdown(summary: &RunSummary) -> String {
    let mut counts: Vec<(StepVerdict, usize)> = Vec::new();
    for row in &summary.steps {
        match counts.iter_mut().find(|(v, _)| *v == row.verdict) {
            Some((_, n)) => *n += 1,
            None => counts.push((row.verdict, 1)),
        }
    }
    let counts: Vec<String> = counts.iter().map(|(v, n)| format!("{n} {v}")).collect();
    let mut md = summary.markdown().replacen("# ", "## loadlab run: ", 1);
    let at = md.find('\n').map_or(md.len(), |at| at + 1);
    md.insert_str(
        at,
        &format!(
            "\n**{} steps: {}**\n",
            summary.steps.len(),
            counts.join(", ")
        ),
    );
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(step: &str, variant: &str, verdict: StepVerdict, why: &str) -> StepRow {
        StepRow {
            step: step.to_owned(),
            variant: variant.to_owned(),
            rate_asked: Some(400.0),
            asked_per_sec: 400.0,
            achieved_per_sec: 399.5,
            requests: 4000,
            success: 0.95,
            p99_ms: Some(312.0),
            verdict,
            why: why.to_owned(),
            seconds: 10.5,
            ..StepRow::default()
        }
    }

    fn summary(steps: Vec<StepRow>) -> RunSummary {
        RunSummary {
            plan: "night".to_owned(),
            complete: true,
            steps,
            ..RunSummary::default()
        }
    }

    #[test]
    fn each_verdict_is_its_junit_outcome() {
        let rows = [
            (
                StepVerdict::Pass,
                "every bound held",
                "<testcase name=\"400/s, steps/001\" classname=\"night.a\" time=\"10.500\">",
            ),
            (
                StepVerdict::Fail,
                "p99 312.0ms over 200.0ms",
                "<failure message=\"p99 312.0ms over 200.0ms\" type=\"fail\"/>",
            ),
            (
                StepVerdict::Inconclusive,
                "generator sent 300.0/s of 400.0/s asked",
                "<error message=\"generator sent 300.0/s of 400.0/s asked\" type=\"inconclusive\"/>",
            ),
            (
                StepVerdict::Failed,
                "setup exited 1",
                "<error message=\"setup exited 1\" type=\"failed\"/>",
            ),
            (StepVerdict::Skipped, "", "<skipped message=\"skipped\"/>"),
            (
                StepVerdict::Interrupted,
                "",
                "<skipped message=\"interrupted\"/>",
            ),
        ];
        for (verdict, why, want) in rows {
            let summary = summary(vec![row("001", "a", verdict, why)]);
            let plan_suites = plan_suites(&Slo::default(), &summary);
            let xml = junit_xml("night", &plan_suites);
            assert!(xml.contains(want), "{verdict}: {xml}");
        }
    }

    #[test]
    fn a_fail_carries_its_figures() {
        let summary = summary(vec![row(
            "002",
            "a",
            StepVerdict::Fail,
            "success 95.00% under 99.00%",
        )]);
        let xml = junit_xml("night", &plan_suites(&Slo::default(), &summary));
        assert!(
            xml.contains("message=\"success 95.00% under 99.00%\""),
            "{xml}"
        );
        assert!(
            xml.contains("asked/s 400.0 achieved/s 399.5 requests 4000 success 95.00%"),
            "{xml}"
        );
        assert!(xml.contains("p99 312.0ms"), "{xml}");
    }

    #[test]
    fn markup_in_names_and_reasons_is_escaped() {
        let rows = [
            ("<&\"'>", "&lt;&amp;&quot;&#39;&gt;"),
            ("a\nb\tc\u{1}d", "a&#10;b&#9;cd"),
            ("plain é", "plain é"),
        ];
        for (input, want) in rows {
            assert_eq!(escape(input), want, "{input:?}");
        }
    }

    #[test]
    fn markup_in_names_survives_a_parser() {
        let name = "a <&\"'> b";
        let mut bad = row(
            "001",
            name,
            StepVerdict::Fail,
            "check \"login: <ok> & 'fine'\" 50.00% under 99%",
        );
        bad.params.insert("pool".to_owned(), "<&>".to_owned());
        let slo = Slo {
            min_pass_ratio_by_check: vec![("login: <ok>".to_owned(), 0.99)],
            ..Slo::default()
        };
        let xml = junit_xml(name, &plan_suites(&slo, &summary(vec![bad])));
        let doc = roxmltree::Document::parse(&xml).unwrap_or_else(|e| panic!("{e}\n{xml}"));
        let case = doc
            .descendants()
            .find(|n| n.has_tag_name("testcase"))
            .unwrap();
        assert_eq!(case.attribute("classname"), Some("night.a <&\"'> b"));
        assert_eq!(case.attribute("name"), Some("400/s, pool=<&>, steps/001"));
        let failure = case.first_element_child().unwrap();
        assert_eq!(
            failure.attribute("message"),
            Some("check \"login: <ok> & 'fine'\" 50.00% under 99%")
        );
        let property = doc
            .descendants()
            .find(|n| n.has_tag_name("property"))
            .unwrap();
        assert_eq!(property.attribute("name"), Some("slo.checks.login: <ok>"));
    }

    #[test]
    fn markdown_leads_with_the_counts() {
        let md = plan_markdown(&summary(vec![
            row("001", "a", StepVerdict::Pass, "every bound held"),
            row("002", "a", StepVerdict::Fail, "p99 312.0ms over 200.0ms"),
            row("003", "a", StepVerdict::Fail, "p99 400.0ms over 200.0ms"),
        ]));
        assert!(
            md.starts_with("## loadlab run: night\n\n**3 steps: 1 pass, 2 fail**\n"),
            "{md}"
        );
        assert!(md.contains("p99 400.0ms over 200.0ms"), "{md}");
    }
}
