//! The Markdown of `loadlab compare` over two fixed run folders (summaries only, no
//! record files: every step is a single run without noise estimate), as a golden file.
//!
//! Regenerate after an intended change with `UPDATE_GOLDEN=1 cargo test -p loadlab-lab
//! --test compare` and review the diff.

#![allow(clippy::unwrap_used)]

use std::path::Path;

use lab::compare::{FolderInput, run_compare_folders};
use lab::{Mode, RunSummary, StepKind, StepRow, StepVerdict, VariantResult};
use report::CompareFormat;

fn variant(name: &str, held: Option<f64>, how: &str) -> VariantResult {
    VariantResult {
        variant: name.to_owned(),
        max_rate_held: held,
        how: how.to_owned(),
        ..VariantResult::default()
    }
}

/// A step at `rate`: `p50_ms` and four times that at p99, `failed` of 1000 answered 503.
fn step(
    n: usize,
    variant: &str,
    rate: f64,
    p50_ms: f64,
    failed: u64,
    verdict: StepVerdict,
) -> StepRow {
    StepRow {
        step: format!("{n:03}-{variant}-{rate}"),
        variant: variant.to_owned(),
        kind: StepKind::Sweep,
        repeat: 1,
        rate_asked: Some(rate),
        asked_per_sec: rate,
        achieved_per_sec: rate * 0.998,
        requests: 1000,
        success: 1.0 - failed as f64 / 1000.0,
        p50_ms: Some(p50_ms),
        p90_ms: Some(p50_ms * 2.0),
        p99_ms: Some(p50_ms * 4.0),
        max_ms: Some(p50_ms * 9.0),
        lag_p99_ms: 0.25,
        errors: if failed > 0 {
            [("503".to_owned(), failed)].into()
        } else {
            Default::default()
        },
        verdict,
        records: Some(format!("steps/{n:03}-{variant}-{rate}/records.llr")),
        ..StepRow::default()
    }
}

fn write(dir: &Path, variants: Vec<VariantResult>, steps: Vec<StepRow>) {
    std::fs::create_dir_all(dir).unwrap();
    RunSummary {
        plan: "001-pool-configurations".to_owned(),
        plan_file: "pool_configs_001.toml".to_owned(),
        mode: Mode::Sweep,
        complete: true,
        variants,
        steps,
        cells: Vec::new(),
        started: None,
    }
    .write(dir)
    .unwrap();
}

#[test]
fn markdown_of_two_runs_matches_the_golden_file() {
    let root = tempfile::tempdir().unwrap();
    let (before, after) = (root.path().join("before"), root.path().join("after"));
    write(
        &before,
        vec![
            variant("fixed-pool", Some(1000.0), "every step up to 1000/s passed"),
            variant(
                "overflow-pool",
                Some(1100.0),
                "every step up to 1100/s passed",
            ),
        ],
        vec![
            step(0, "fixed-pool", 1000.0, 1002.0, 0, StepVerdict::Pass),
            step(1, "fixed-pool", 1100.0, 1004.0, 412, StepVerdict::Fail),
            step(2, "overflow-pool", 1000.0, 1003.0, 0, StepVerdict::Pass),
            step(3, "overflow-pool", 1100.0, 1005.0, 0, StepVerdict::Pass),
        ],
    );
    write(
        &after,
        vec![
            variant("fixed-pool", Some(1100.0), "every step up to 1100/s passed"),
            variant(
                "overflow-pool",
                Some(1100.0),
                "every step up to 1100/s passed",
            ),
        ],
        vec![
            step(0, "fixed-pool", 1000.0, 1001.0, 0, StepVerdict::Pass),
            step(1, "fixed-pool", 1100.0, 1002.0, 0, StepVerdict::Pass),
            step(2, "fixed-pool", 1200.0, 1010.0, 97, StepVerdict::Fail),
            step(3, "overflow-pool", 1000.0, 1003.0, 0, StepVerdict::Pass),
            step(4, "overflow-pool", 1100.0, 1004.0, 0, StepVerdict::Pass),
        ],
    );
    let inputs = [&before, &after].map(|dir| FolderInput {
        dir: dir.clone(),
        variant: None,
    });
    let mut out = Vec::new();
    run_compare_folders(&inputs, CompareFormat::Markdown, (None, None), &mut out).unwrap();
    let root_text = root.path().to_string_lossy().into_owned();
    let markdown = String::from_utf8(out).unwrap().replace(&root_text, "runs");
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/compare_folders.md");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&golden, &markdown).unwrap();
    }
    let want = std::fs::read_to_string(&golden).unwrap_or_default();
    assert_eq!(
        markdown, want,
        "run with UPDATE_GOLDEN=1 after an intended change"
    );
}
