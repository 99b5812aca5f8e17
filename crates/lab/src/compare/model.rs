//! The comparison of run folders, as the renderers and `-format json` see it: per
//! variant the maximum rate held ([`VariantLine`]), per matching step its figures
//! ([`StepLine`], rows of `report::Row`).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use report::{Row, Versus};
use serde::Serialize;

use crate::folder::{StepKind, StepVerdict, VariantResult};

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

/// What a variant's capacity held counts: the highest rate that met the SLO, or (when
/// no side's steps had a rate: a search over users, a sweep of users) the most users.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Capacity {
    /// Requests (a flow's: runs started) per second.
    Rate,
    /// Users at once (a closed model).
    Users,
}

impl Capacity {
    /// The capacity of `sides`' results for one variant: users when none has a rate
    /// held and some has users held.
    pub fn of(results: &[Option<&VariantResult>]) -> Capacity {
        let any = |held: fn(&VariantResult) -> bool| results.iter().flatten().any(|v| held(v));
        if !any(|v| v.max_rate_held.is_some()) && any(|v| v.max_users_held.is_some()) {
            Capacity::Users
        } else {
            Capacity::Rate
        }
    }

    /// What `result` held, in this capacity.
    pub fn held(self, result: &VariantResult) -> Option<f64> {
        match self {
            Capacity::Rate => result.max_rate_held,
            Capacity::Users => result.max_users_held.map(|users| users as f64),
        }
    }

    /// How a regression's line names it: `max rate held`, `most users held`.
    pub fn name(self) -> &'static str {
        match self {
            Capacity::Rate => "max rate held",
            Capacity::Users => "most users held",
        }
    }
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
