//! Folder comparisons: matching, figures, the gate, inputs and summaries.

use std::path::{Path, PathBuf};

use super::*;
use crate::folder::VariantResult;
use crate::folder::{RunSummary, StepKind, StepRow, StepVerdict};
use crate::plan::Mode;

fn step(name: &str, variant: &str, rate: f64, p99_ms: f64) -> StepRow {
    StepRow {
        step: name.to_owned(),
        variant: variant.to_owned(),
        kind: StepKind::Sweep,
        repeat: 1,
        rate_asked: Some(rate),
        achieved_per_sec: rate,
        requests: rate as u64 * 10,
        success: 1.0,
        p50_ms: Some(p99_ms / 4.0),
        p99_ms: Some(p99_ms),
        verdict: StepVerdict::Pass,
        ..StepRow::default()
    }
}

fn side(
    name: &str,
    variant: Option<&str>,
    held: &[(&str, Option<f64>)],
    steps: Vec<StepRow>,
) -> Side {
    Side {
        name: name.to_owned(),
        dir: PathBuf::from(name),
        summary: RunSummary {
            mode: Mode::Sweep,
            variants: held
                .iter()
                .map(|(v, h)| VariantResult {
                    variant: (*v).to_owned(),
                    max_rate_held: *h,
                    how: "sweep".to_owned(),
                    ..VariantResult::default()
                })
                .collect(),
            steps,
            ..RunSummary::default()
        },
        variant: variant.map(str::to_owned),
    }
}

fn matched(comparison: &FolderComparison) -> Vec<(String, Vec<Option<String>>)> {
    comparison
        .steps
        .iter()
        .map(|s| (s.title(), s.steps.clone()))
        .collect()
}

fn names(names: &[Option<&str>]) -> Vec<Option<String>> {
    names.iter().map(|n| n.map(str::to_owned)).collect()
}

#[test]
fn steps_match_by_variant_offer_params_kind_and_repeat() {
    let mut repeat2 = step("002-go-100-r2", "go", 100.0, 4.0);
    repeat2.repeat = 2;
    let mut probe = step("003-go-100", "go", 100.0, 4.0);
    probe.kind = StepKind::Probe;
    let mut replicas = step("004-go-100-replicas-2", "go", 100.0, 4.0);
    replicas
        .params
        .insert("replicas".to_owned(), "2".to_owned());
    let a = side(
        "a",
        None,
        &[("go", Some(100.0)), ("ruby", Some(50.0))],
        vec![
            step("000-go-100", "go", 100.0, 4.0),
            step("001-ruby-100", "ruby", 100.0, 9.0),
            repeat2.clone(),
            probe.clone(),
            replicas.clone(),
        ],
    );
    let b = side(
        "b",
        None,
        &[("go", Some(200.0)), ("ruby", Some(50.0))],
        vec![
            step("000-ruby-100", "ruby", 100.0, 8.0),
            step("001-go-100", "go", 100.0, 2.0),
            step("002-go-200", "go", 200.0, 3.0),
            repeat2,
            probe,
        ],
    );
    let comparison = compare_sides(&[a, b]);
    let want = vec![
        (
            "go 100/s".to_owned(),
            names(&[Some("000-go-100"), Some("001-go-100")]),
        ),
        (
            "ruby 100/s".to_owned(),
            names(&[Some("001-ruby-100"), Some("000-ruby-100")]),
        ),
        (
            "go 100/s r2".to_owned(),
            names(&[Some("002-go-100-r2"), Some("002-go-100-r2")]),
        ),
        (
            "go 100/s (probe)".to_owned(),
            names(&[Some("003-go-100"), Some("003-go-100")]),
        ),
        (
            "go 100/s replicas=2".to_owned(),
            names(&[Some("004-go-100-replicas-2"), None]),
        ),
    ];
    assert_eq!(matched(&comparison), want);
    assert_eq!(comparison.unmatched, ["b: 002-go-200"]);
    // Variants picked by name match across names; the other variants' steps stay out.
    let a = side(
        "a",
        Some("go"),
        &[("go", None), ("ruby", None)],
        comparison_steps(),
    );
    let b = side(
        "a",
        Some("ruby"),
        &[("go", None), ("ruby", None)],
        comparison_steps(),
    );
    let picked = compare_sides(&[a, b]);
    assert_eq!(
        matched(&picked),
        vec![(
            "go vs ruby 100/s".to_owned(),
            names(&[Some("000-go-100"), Some("001-ruby-100")])
        )]
    );
    assert!(picked.unmatched.is_empty(), "{:?}", picked.unmatched);
}

fn comparison_steps() -> Vec<StepRow> {
    vec![
        step("000-go-100", "go", 100.0, 4.0),
        step("001-ruby-100", "ruby", 100.0, 8.0),
    ]
}

#[test]
fn differences_and_improvement_per_figure_and_variant() {
    let a = side(
        "a",
        None,
        &[("go", Some(100.0)), ("ruby", None)],
        vec![step("s", "go", 100.0, 4.0)],
    );
    let mut slower = step("s", "go", 100.0, 8.0);
    slower.success = 0.9;
    slower.errors.insert("503".to_owned(), 10);
    let b = side(
        "b",
        None,
        &[("go", Some(150.0)), ("ruby", Some(10.0))],
        vec![slower],
    );
    let comparison = compare_sides(&[a, b]);
    // (variant, held per side, diff, relative, x)
    let held: Vec<_> = comparison
        .variants
        .iter()
        .map(|v| {
            (
                v.variant.as_str(),
                v.held.clone(),
                v.versus[0].diff,
                v.versus[0].relative,
                v.versus[0].improvement,
            )
        })
        .collect();
    assert_eq!(
        held,
        [
            (
                "go",
                vec![Some(100.0), Some(150.0)],
                Some(50.0),
                Some(0.5),
                Some(1.5)
            ),
            ("ruby", vec![None, Some(10.0)], None, None, None),
        ]
    );
    let rows = &comparison.steps[0].rows;
    // (figure, diff, relative, improvement, noise)
    let want: [(&str, f64, Option<f64>, Option<f64>); 4] = [
        ("p99", 4.0, Some(1.0), Some(0.5)),
        ("success", -0.1, Some(-0.1), Some(0.9)),
        ("requests", 0.0, Some(0.0), None),
        ("errors 503", 10.0, None, None),
    ];
    for (name, diff, relative, x) in want {
        let row = rows
            .iter()
            .find(|r| r.name == name)
            .unwrap_or_else(|| panic!("{name}"));
        let versus = row.versus[0];
        assert!(
            (versus.diff.unwrap() - diff).abs() < 1e-9,
            "{name}: {versus:?}"
        );
        assert_eq!(
            versus.relative.map(|r| (r * 1e9).round() / 1e9),
            relative,
            "{name}"
        );
        assert_eq!(versus.improvement, x, "{name}");
        assert_eq!(versus.noise_word(), "n/a", "{name}: no record files");
    }
    assert!(
        comparison.steps[0].noise.contains("no noise estimate"),
        "{}",
        comparison.steps[0].noise
    );
}

#[test]
fn regressions_are_lower_rates_held_or_gated_figures_beyond_the_noise() {
    let a = side(
        "a",
        None,
        &[("go", Some(100.0))],
        vec![step("s", "go", 100.0, 4.0)],
    );
    let rows = [
        (Some(96.0), 0),
        (Some(90.0), 1),
        (None, 1),
        (Some(200.0), 0),
    ];
    for (held, want) in rows {
        // p99 twice as slow, but no record files: no noise estimate, no regression.
        let b = side(
            "b",
            None,
            &[("go", held)],
            vec![step("s", "go", 100.0, 8.0)],
        );
        let found = compare_sides(&[a.clone(), b]).regressions(0.05);
        assert_eq!(found.len(), want, "{held:?}: {found:?}");
        assert!(
            found
                .iter()
                .all(|r| r.what == "max rate held of go" && !r.beyond_noise)
        );
    }
}

/// A side of one variant whose search over users found `users` (none: none held).
fn users_side(name: &str, users: Option<u64>) -> Side {
    let mut side = side(name, None, &[("ws", None)], Vec::new());
    side.summary.variants[0].max_users_held = users;
    side
}

#[test]
fn a_search_over_users_compares_the_most_users_held() {
    // (B's users held, B's cell, B against A, regressions at 5%)
    let rows = [
        (Some(60), "60 users", "1.50x", 0),
        (Some(38), "38 users", "0.95x", 0),
        (Some(30), "30 users", "0.75x", 1),
        (None, "none", "-", 1),
    ];
    for (users, cell, factor, regressions) in rows {
        let sides = [users_side("a", Some(40)), users_side("b", users)];
        let comparison = compare_sides(&sides);
        let line = &comparison.variants[0];
        assert_eq!(line.capacity, Capacity::Users, "{users:?}");
        assert_eq!(line.held, vec![Some(40.0), users.map(|u| u as f64)]);
        let text = comparison.render(CompareFormat::Text);
        assert!(text.contains("most users held\n"), "{text}");
        let table_row = (text.lines())
            .find(|l| l.starts_with("ws "))
            .unwrap_or_else(|| panic!("{text}"));
        assert!(
            table_row.contains("40 users") && table_row.contains(cell),
            "{users:?}: {table_row}"
        );
        assert!(table_row.contains(factor), "{users:?}: {table_row}");
        let found = comparison.regressions(0.05);
        assert_eq!(found.len(), regressions, "{users:?}: {found:?}");
        assert!(found.iter().all(|r| r.what == "most users held of ws"));
    }
    // A rate on either side keeps the rate: the two are not compared as one.
    let mut rate = users_side("b", Some(50));
    rate.summary.variants[0].max_rate_held = Some(120.0);
    let comparison = compare_sides(&[users_side("a", Some(40)), rate]);
    assert_eq!(comparison.variants[0].capacity, Capacity::Rate);
    assert_eq!(comparison.variants[0].held, vec![None, Some(120.0)]);
}

#[test]
fn inputs_are_sorted_into_files_and_folders() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    std::fs::create_dir(&run).unwrap();
    std::fs::write(run.join("summary.json"), "{}").unwrap();
    let file = dir.path().join("a.llr");
    std::fs::write(&file, "x").unwrap();
    let hashed = dir.path().join("b#c.llr");
    std::fs::write(&hashed, "x").unwrap();
    let path = |p: &Path| p.to_string_lossy().into_owned();
    let folder = |variant: Option<&str>| FolderInput {
        dir: run.clone(),
        variant: variant.map(str::to_owned),
    };
    let rows: Vec<(Vec<String>, Result<CompareArgs, &str>)> = vec![
        (
            vec![path(&file), path(&hashed)],
            Ok(CompareArgs::RecordFiles(vec![path(&file), path(&hashed)])),
        ),
        (
            vec![path(&run)],
            Ok(CompareArgs::Folders(vec![folder(None)])),
        ),
        (
            vec![
                format!("{}#fast", path(&run)),
                format!("{}#slow", path(&run)),
            ],
            Ok(CompareArgs::Folders(vec![
                folder(Some("fast")),
                folder(Some("slow")),
            ])),
        ),
        (vec![path(&run), path(&file)], Err("not both")),
        (vec![path(&run.join("fast"))], Err("#fast")),
    ];
    for (args, want) in rows {
        match (classify(&args), want) {
            (Ok(got), Ok(want)) => assert_eq!(got, want, "{args:?}"),
            (Err(err), Err(want)) => assert!(err.to_string().contains(want), "{args:?}: {err}"),
            (got, want) => panic!("{args:?}: {got:?} want {want:?}"),
        }
    }
}

#[test]
fn bad_summaries_name_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let rows = [
        (None, "summary.json: not found"),
        (
            Some("{\n  \"plan\": \"p\",\n  \"mode\": ,\n}"),
            "summary.json:3: expected value",
        ),
        (Some("{\"plan\": 1}"), "summary.json:1: invalid type"),
    ];
    for (text, want) in rows {
        if let Some(text) = text {
            std::fs::write(dir.path().join("summary.json"), text).unwrap();
        }
        let err = read_summary(dir.path()).unwrap_err().to_string();
        assert!(err.contains(want), "{err}");
    }
    let one = FolderInput {
        dir: dir.path().to_owned(),
        variant: None,
    };
    std::fs::write(
        dir.path().join("summary.json"),
        r#"{"plan":"p","plan_file":"p.toml","mode":"sweep","complete":true,"variants":[{"variant":"a","max_rate_held":null,"how":"sweep","probes":null,"seconds":null}],"steps":[]}"#,
    )
    .unwrap();
    let err = sides(std::slice::from_ref(&one)).unwrap_err().to_string();
    assert!(err.contains("has one variant (a)"), "{err}");
    let picked = FolderInput {
        variant: Some("b".to_owned()),
        ..one.clone()
    };
    let err = sides(&[picked.clone(), picked.clone()])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("no variant \"b\"") && err.contains("variants: a"),
        "{err}"
    );
    let err = sides(&[one, picked]).unwrap_err().to_string();
    assert!(err.contains("not both"), "{err}");
}

/// Each side says what ran out first in the step where its variant's limit shows: the
/// first step that did not pass (in the order they ran, as docs/PLANS.md says; a
/// search bisects below it later), with its verdict and why as the steps' table says
/// them, else its highest; a picked variant only.
#[test]
fn each_side_says_what_ran_out_first_where_its_limit_shows() {
    let diagnosed = |name: &str, variant: &str, rate: f64, verdict, line: &str| StepRow {
        verdict,
        why: match verdict {
            StepVerdict::Pass => "every bound held".to_owned(),
            _ => format!("success 98.48% under 99.00% at {rate}"),
        },
        diagnosis: vec![line.to_owned(), "held (peak of each): ...".to_owned()],
        ..step(name, variant, rate, 4.0)
    };
    let steps = vec![
        diagnosed("000-go-100", "go", 100.0, StepVerdict::Pass, "held"),
        diagnosed("001-go-400", "go", 400.0, StepVerdict::Fail, "pool at 400"),
        diagnosed("002-go-200", "go", 200.0, StepVerdict::Fail, "pool at 200"),
        diagnosed(
            "003-ruby-100",
            "ruby",
            100.0,
            StepVerdict::Pass,
            "nothing ran out",
        ),
        step("004-php-100", "php", 100.0, 4.0),
    ];
    let held = [("go", None), ("ruby", Some(100.0)), ("php", Some(100.0))];
    let whole = side("a", None, &held, steps.clone());
    assert_eq!(
        ran_out_first(&[whole]),
        [
            (
                "a#go".to_owned(),
                "step 001-go-400 (fail: success 98.48% under 99.00% at 400): pool at 400"
                    .to_owned()
            ),
            (
                "a#ruby".to_owned(),
                "step 003-ruby-100 (pass): nothing ran out".to_owned()
            ),
        ]
    );
    let picked = side("b#ruby", Some("ruby"), &held, steps);
    assert_eq!(
        ran_out_first(&[picked]),
        [(
            "b#ruby".to_owned(),
            "step 003-ruby-100 (pass): nothing ran out".to_owned()
        )]
    );
}
