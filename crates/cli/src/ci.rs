//! `-junit FILE` and `-summary-md FILE` of `run` and `attack`: the verdicts already
//! made, written for a CI job ([`lab::ci`] words them). They change no exit code.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use engine::RunOutcome;
use lab::RunSummary;
use lab::ci::{Outcome, TestCase, TestSuite, junit_xml, plan_markdown, plan_suites};
use workload::StopRule;

/// The flags of what a CI job reads, shared by `run` and `attack`.
#[derive(clap::Args, Debug, Default)]
#[command(next_help_heading = "CI")]
pub struct CiArgs {
    /// Write JUnit XML here: each plan step (run) or -stop-when rule (attack) a test
    /// case, a miss a failure with its figures and bound (docs/CI.md)
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Append a Markdown summary here, for a CI job's summary page (GitHub Actions:
    /// -summary-md "$GITHUB_STEP_SUMMARY")
    #[arg(long, value_name = "FILE")]
    summary_md: Option<PathBuf>,
}

impl CiArgs {
    /// Fails before anything runs when a file cannot be written (the JUnit file is
    /// created empty; the summary is opened for appending, nothing written yet).
    pub fn check(&self) -> anyhow::Result<()> {
        if let Some(path) = &self.junit {
            std::fs::File::create(path).with_context(|| format!("-junit {}", path.display()))?;
        }
        if let Some(path) = &self.summary_md {
            append(path, "")?;
        }
        Ok(())
    }

    /// Writes a plan's run: a suite per variant, a case per step.
    pub fn write_plan(&self, plan: &lab::Plan, summary: &RunSummary) -> anyhow::Result<()> {
        if let Some(path) = &self.junit {
            let xml = junit_xml(&summary.plan, &plan_suites(&plan.slo, summary));
            std::fs::write(path, xml).with_context(|| format!("-junit {}", path.display()))?;
        }
        if let Some(path) = &self.summary_md {
            append(path, &format!("{}\n", plan_markdown(summary)))?;
        }
        Ok(())
    }

    /// Writes an attack's stop rules: a case per rule, the one that fired a failure.
    pub fn write_attack(
        &self,
        name: &str,
        rules: &[StopRule],
        outcome: &RunOutcome,
        seconds: f64,
    ) -> anyhow::Result<()> {
        if self.junit.is_none() && self.summary_md.is_none() {
            return Ok(());
        }
        let suite = attack_suite(name, rules, outcome, seconds);
        if let Some(path) = &self.junit {
            let xml = junit_xml(name, std::slice::from_ref(&suite));
            std::fs::write(path, xml).with_context(|| format!("-junit {}", path.display()))?;
        }
        if let Some(path) = &self.summary_md {
            append(path, &format!("{}\n", attack_markdown(&suite, outcome)))?;
        }
        Ok(())
    }
}

/// Appends, as `$GITHUB_STEP_SUMMARY` wants (each step of a job adds its part).
fn append(path: &Path, text: &str) -> anyhow::Result<()> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut file| file.write_all(text.as_bytes()))
        .with_context(|| format!("-summary-md {}", path.display()))
}

/// Each rule a case: the one that fired is a failure saying when and at what value;
/// the others held for the whole run.
fn attack_suite(name: &str, rules: &[StopRule], outcome: &RunOutcome, seconds: f64) -> TestSuite {
    let cases = rules
        .iter()
        .map(|rule| {
            let fired = outcome.fired.as_ref().filter(|fired| fired.rule == *rule);
            TestCase {
                name: format!("stop rule '{rule}'"),
                classname: name.to_owned(),
                seconds,
                outcome: match fired {
                    Some(fired) => Outcome::Failure {
                        message: fired.describe(),
                        kind: format!("exit {}", rule.kind().exit_code()),
                    },
                    None => Outcome::Passed,
                },
                output: String::new(),
            }
        })
        .collect();
    TestSuite {
        name: name.to_owned(),
        properties: Vec::new(),
        cases,
    }
}

fn attack_markdown(suite: &TestSuite, outcome: &RunOutcome) -> String {
    let mut md = format!(
        "## loadlab attack: {}\n\n{} requests sent, {} completed, {} due but never sent.\n\n",
        suite.name, outcome.sent, outcome.completed, outcome.unsent
    );
    if suite.cases.is_empty() {
        md.push_str("No -stop-when rule was given.\n");
        return md;
    }
    md.push_str("| stop rule | outcome |\n|---|---|\n");
    for case in &suite.cases {
        let said = match &case.outcome {
            Outcome::Failure { message, .. } => format!("**fired**: {message}"),
            _ => "held".to_owned(),
        };
        let rule = case.name.trim_start_matches("stop rule ");
        md.push_str(&format!("| `{rule}` | {} |\n", said.replace('|', "\\|")));
    }
    md
}
