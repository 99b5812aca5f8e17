//! The comparison of run folders, as the renderers and `-format json` see it: per
//! variant the maximum rate held ([`VariantLine`]), per matching step its figures
//! ([`StepLine`], rows of `report::Row`).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use report::{Row, Versus};
use serde::Serialize;

use crate::folder::{Capacity, StepKind, StepVerdict};

/// A variant's capacity held on every side: its maximum rate, or its most users.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct VariantLine {
    /// The variant's name (`A-NAME vs B-NAME` when the sides picked different ones).
    pub variant: String,
    /// What [`VariantLine::held`] counts.
    pub capacity: Capacity,
    /// The capacity held per side: req/s, or users.
    pub held: Vec<Option<f64>>,
    /// How each side found it (`-` when the side lacks the variant).
    pub how: Vec<String>,
    /// Each side after A against A (never a noise estimate: one result per side).
    pub versus: Vec<Versus>,
}

/// One step of A and the matching steps of the others.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StepLine {
    /// The variant, or the sides' variants when they picked different ones.
    pub variant: String,
    /// `500/s`, `10 users` or `schedule`.
    pub offer: String,
    /// Axis values.
    pub params: BTreeMap<String, String>,
    /// What the step was to its plan.
    pub kind: StepKind,
    /// The repeat.
    pub repeat: u32,
    /// Each side's step folder name (None: no matching step).
    pub steps: Vec<Option<String>>,
    /// Each side's verdict.
    pub verdicts: Vec<Option<StepVerdict>>,
    /// How the noise was judged, or why it was not.
    pub noise: String,
    /// The figures (`achieved/s`, `p99`, `errors 503`, ...), each side's value and
    /// each side against A, as `report::compare` models every comparison.
    pub rows: Vec<Row>,
}

/// Every side against the first.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FolderComparison {
    /// Side names, A first.
    pub inputs: Vec<String>,
    /// Per variant, the maximum rate held.
    pub variants: Vec<VariantLine>,
    /// Per step of A, the matching steps of the others.
    pub steps: Vec<StepLine>,
    /// Steps of the other sides that match no step of A.
    pub unmatched: Vec<String>,
}

impl StepLine {
    /// `fixed-pool 1000/s`, `api 500/s replicas=2 r2`, `fixed-pool vs overflow-pool 1000/s`.
    pub fn title(&self) -> String {
        let mut title = format!("{} {}", self.variant, self.offer);
        for (k, v) in &self.params {
            let _ = write!(title, " {k}={v}");
        }
        if !matches!(self.kind, StepKind::Sweep | StepKind::Matrix) {
            let _ = write!(title, " ({})", self.kind);
        }
        if self.repeat > 1 {
            let _ = write!(title, " r{}", self.repeat);
        }
        title
    }
}
