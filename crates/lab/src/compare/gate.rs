//! The regression gate of `loadlab compare -threshold` over run folders: a lower
//! maximum rate held, or a gated step figure worse beyond the threshold and the noise
//! (the same rule as record files', `report::Row::regressions`).

use report::Row;

use super::model::{FolderComparison, StepLine};

/// The step rows a regression is judged on.
pub const GATED_FIGURES: [&str; 3] = ["achieved/s", "success", "p99"];

/// A figure on which a side is worse than A beyond the threshold.
#[derive(Clone, Debug, PartialEq)]
pub struct FolderRegression {
    /// e.g. `max rate held of fixed-pool`, `p99 at fixed-pool 1000/s`.
    pub what: String,
    /// The side that regressed.
    pub input: String,
    /// How much worse, as a share of A's value.
    pub worse_by: f64,
    /// Whether the noise was judged (a step with record files), or not (a maximum rate
    /// held: one result per side).
    pub beyond_noise: bool,
}

impl FolderComparison {
    /// Lower maximum rates held by more than `threshold` (a share) of A's, and the gated
    /// step figures ([`GATED_FIGURES`]) worse by more than `threshold` of A's value and
    /// beyond the noise.
    pub fn regressions(&self, threshold: f64) -> Vec<FolderRegression> {
        let mut found = Vec::new();
        for line in &self.variants {
            let Some(a) = line.held[0].filter(|a| *a > 0.0) else {
                continue;
            };
            for (index, b) in line.held.iter().enumerate().skip(1) {
                let worse = a - b.unwrap_or(0.0);
                if worse > threshold * a {
                    found.push(FolderRegression {
                        what: format!("{} of {}", line.capacity.name(), line.variant),
                        input: self.inputs[index].clone(),
                        worse_by: worse / a,
                        beyond_noise: false,
                    });
                }
            }
        }
        for step in &self.steps {
            for row in step
                .rows
                .iter()
                .filter(|r| GATED_FIGURES.contains(&r.name.as_str()))
            {
                found.extend(row_regressions(step, row, &self.inputs, threshold));
            }
        }
        found
    }
}

fn row_regressions(
    step: &StepLine,
    row: &Row,
    inputs: &[String],
    threshold: f64,
) -> Vec<FolderRegression> {
    row.regressions(threshold)
        .into_iter()
        .map(|(input, worse_by)| FolderRegression {
            what: format!("{} at {}", row.name, step.title()),
            input: inputs[input].clone(),
            worse_by,
            beyond_noise: true,
        })
        .collect()
}
