//! [`StepFields`]: a flow step's `[[scenario.step]]` table as written (with its
//! [`ExtractField`]s and [`CheckField`]s), for scenario files and plans alike;
//! [`crate::Flow::compile`] checks them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One `[[scenario.step]]` table, as written.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct StepFields {
    /// The step's name in reports.
    pub name: Option<String>,
    /// The request in vegeta's http target syntax.
    pub request: Option<String>,
    /// An inline body (a template).
    pub body: Option<String>,
    /// Variables to take from the answer: name -> expression.
    #[serde(default)]
    pub extract: BTreeMap<String, ExtractField>,
    /// Checks on the answer.
    #[serde(default)]
    pub checks: Vec<CheckField>,
    /// The pause after the answer: `2s`, `uniform(1s, 3s)`, `exp(2s)`.
    pub think: Option<String>,
    /// Times in a row the step is sent.
    pub repeat: Option<u32>,
    /// Run only when this variable was extracted or this check passed.
    #[serde(rename = "if")]
    pub condition: Option<String>,
    /// The line of the step's table, when the file says (set by the parser).
    #[serde(skip)]
    pub line: Option<u64>,
}

/// `token = "json $.token"` or `coupon = { from = "json $.coupon", optional = true }`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum ExtractField {
    /// The expression.
    Text(String),
    /// The expression, and whether finding nothing is fine.
    Table {
        /// The expression.
        from: String,
        /// Finding nothing is not an error (steps may test it with `if`).
        #[serde(default)]
        optional: bool,
    },
}

/// `"status 200"` or `{ name = "logged in", expect = "status 200" }`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum CheckField {
    /// The expression, which names the check too.
    Text(String),
    /// A named check.
    Named {
        /// The check's name.
        name: String,
        /// The expression.
        expect: String,
    },
}
