//! A folder comparison as text, Markdown or JSON: the legend of sides, the maximum
//! rate held per variant, then one table per matched step.

use std::fmt::Write as _;

use report::{CompareFormat, Unit, Versus, side_letter};

use super::model::{FolderComparison, StepLine, VariantLine};
use crate::cells::format_rate;
use crate::folder::Capacity;

/// What the noise column means, below the text and Markdown tables.
const NOISE_NOTE: &str = "noise: 95% block bootstrap of the difference of per-second means of the two steps' \
record files (beyond: the interval excludes 0); n/a: no per-second samples for that figure, \
or a single run without record files. A maximum rate held is one result per side: no noise estimate.\n";

impl FolderComparison {
    /// The comparison in `format`.
    pub fn render(&self, format: CompareFormat) -> String {
        match format {
            CompareFormat::Text => self.layout(&Layout::TEXT),
            CompareFormat::Markdown => self.layout(&Layout::MARKDOWN),
            CompareFormat::Json => {
                let mut json = serde_json::to_string_pretty(self).unwrap_or_default();
                json.push('\n');
                json
            }
        }
    }

    fn layout(&self, layout: &Layout) -> String {
        let mut out = String::new();
        for (index, name) in self.inputs.iter().enumerate() {
            let _ = writeln!(
                out,
                "{}{}: {}{name}{}",
                layout.bullet,
                side_letter(index),
                layout.quote,
                layout.quote
            );
        }
        let _ = writeln!(out, "\n{}{}\n", layout.heading, self.capacity_heading());
        let mut table = vec![self.header("variant", false)];
        for line in &self.variants {
            let unit = match line.capacity {
                Capacity::Rate => Unit::PerSec,
                Capacity::Users => Unit::Count,
            };
            let mut cells = vec![line.variant.clone(), held_text(line, line.held[0])];
            for (versus, held) in line.versus.iter().zip(&line.held[1..]) {
                cells.push(held_text(line, *held));
                cells.extend(versus_cells(unit, versus, false));
            }
            table.push(cells);
        }
        out.push_str(&layout.table(&table));
        for step in &self.steps {
            out.push_str(&self.step_block(step, layout));
        }
        if !self.unmatched.is_empty() {
            let _ = writeln!(out, "\n{}steps without a match in A\n", layout.heading);
            for name in &self.unmatched {
                let _ = writeln!(out, "{}{name}", layout.bullet);
            }
        }
        out.push('\n');
        out.push_str(NOISE_NOTE);
        out
    }

    /// The variants table's heading: what its lines count.
    fn capacity_heading(&self) -> &'static str {
        let users = |line: &VariantLine| line.capacity == Capacity::Users;
        if self.variants.iter().all(users) && !self.variants.is_empty() {
            "most users held"
        } else if self.variants.iter().any(users) {
            "capacity held (req/s, or users)"
        } else {
            "max rate held (req/s)"
        }
    }

    fn header(&self, first: &str, noise: bool) -> Vec<String> {
        let mut header = vec![first.to_owned(), "A".to_owned()];
        for index in 1..self.inputs.len() {
            let side = side_letter(index);
            header.push(side.clone());
            let columns: &[&str] = if noise {
                &["diff", "rel", "x", "noise"]
            } else {
                &["diff", "rel", "x"]
            };
            header.extend(columns.iter().map(|h| format!("{h} {side}")));
        }
        header
    }

    fn step_block(&self, step: &StepLine, layout: &Layout) -> String {
        let mut out = format!("\n{}step {}\n\n", layout.heading, step.title());
        let mut table = vec![self.header("figure", true)];
        let text = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".to_owned());
        let verdicts: Vec<Option<String>> = (step.verdicts.iter())
            .map(|v| v.map(|v| v.word().to_owned()))
            .collect();
        for (label, values) in [("step", &step.steps), ("verdict", &verdicts)] {
            let mut cells = vec![label.to_owned(), text(&values[0])];
            for value in &values[1..] {
                cells.push(text(value));
                cells.extend(["", "", "", ""].map(str::to_owned));
            }
            table.push(cells);
        }
        for row in &step.rows {
            let mut cells = vec![row.name.clone(), value_text(row.unit, row.values[0])];
            for (versus, value) in row.versus.iter().zip(&row.values[1..]) {
                cells.push(value_text(row.unit, *value));
                cells.extend(versus_cells(row.unit, versus, true));
            }
            table.push(cells);
        }
        out.push_str(&layout.table(&table));
        let _ = writeln!(out, "\n{}noise: {}", layout.bullet, step.noise);
        out
    }
}

/// Text or Markdown.
struct Layout {
    bullet: &'static str,
    quote: &'static str,
    heading: &'static str,
    markdown: bool,
}

impl Layout {
    const TEXT: Layout = Layout {
        bullet: "",
        quote: "",
        heading: "",
        markdown: false,
    };
    const MARKDOWN: Layout = Layout {
        bullet: "- ",
        quote: "`",
        heading: "### ",
        markdown: true,
    };

    fn table(&self, rows: &[Vec<String>]) -> String {
        if !self.markdown {
            let joined: String = rows.iter().map(|r| format!("{}\n", r.join("\t"))).collect();
            return report::tabwriter::align(&joined, &[]);
        }
        let mut out = String::new();
        for (index, row) in rows.iter().enumerate() {
            let _ = writeln!(out, "| {} |", row.join(" | "));
            if index == 0 {
                let _ = writeln!(out, "|{}", "---|".repeat(row.len()));
            }
        }
        out
    }
}

fn versus_cells(unit: Unit, versus: &Versus, noise: bool) -> Vec<String> {
    let mut cells = vec![
        versus.diff.map_or("-".to_owned(), |d| diff_text(unit, d)),
        versus
            .relative
            .map_or("-".to_owned(), |r| format!("{:+.2}%", r * 100.0)),
        versus
            .improvement
            .map_or("-".to_owned(), |x| format!("{x:.2}x")),
    ];
    if noise {
        cells.push(versus.noise_word().to_owned());
    }
    cells
}

/// A capacity held: a rate bare (the heading says req/s), users counted.
fn held_text(line: &VariantLine, held: Option<f64>) -> String {
    match (line.capacity, held) {
        (_, None) => "none".to_owned(),
        (Capacity::Rate, Some(rate)) => format_rate(rate),
        (Capacity::Users, Some(users)) => format!("{users:.0} users"),
    }
}

/// A step figure as the run folder's tables print it (`summary.md`'s precision).
fn value_text(unit: Unit, value: Option<f64>) -> String {
    let Some(value) = value else {
        return "-".to_owned();
    };
    match unit {
        Unit::Count | Unit::Bytes => format!("{value:.0}"),
        Unit::PerSec => format!("{value:.1}"),
        Unit::Ratio => format!("{:.2}%", value * 100.0),
        Unit::Millis => format!("{value:.2}ms"),
        Unit::Nanos => format!("{:.2}ms", value / 1e6),
    }
}

fn diff_text(unit: Unit, diff: f64) -> String {
    match unit {
        Unit::Ratio => format!("{:+.2}pp", diff * 100.0),
        Unit::Count | Unit::Bytes => format!("{diff:+.0}"),
        Unit::PerSec => format!("{diff:+.1}"),
        Unit::Millis => format!("{diff:+.2}ms"),
        Unit::Nanos => format!("{:+.2}ms", diff / 1e6),
    }
}
