//! Which step of each side matches which step of A (the same variant unless the sides
//! picked theirs, kind, offer, axis values and repeat), and each variant's capacity
//! held (its maximum rate, or its most users) side by side.

use std::collections::BTreeMap;

use analysis::Direction;
use report::Versus;

use super::figures::{joined_names, step_line};
use super::inputs::Side;
use super::model::{FolderComparison, VariantLine};
use crate::folder::Capacity;
use crate::folder::StepRow;

/// Reads the sides' steps and compares every side with the first.
pub fn compare_sides(sides: &[Side]) -> FolderComparison {
    let selecting = sides.iter().any(|s| s.variant.is_some());
    let mut steps = Vec::new();
    let mut used: Vec<Vec<bool>> = sides
        .iter()
        .map(|s| vec![false; s.summary.steps.len()])
        .collect();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for row in &sides[0].summary.steps {
        if !side_has(&sides[0], row) {
            continue;
        }
        let key = step_key(row, selecting);
        let occurrence = seen.entry(key.clone()).or_default();
        let matched: Vec<Option<&StepRow>> = sides
            .iter()
            .zip(used.iter_mut())
            .map(|(side, used)| nth_match(side, used, &key, *occurrence, selecting))
            .collect();
        *occurrence += 1;
        steps.push(step_line(sides, &matched));
    }
    let unmatched = sides
        .iter()
        .zip(&used)
        .skip(1)
        .flat_map(|(side, used)| {
            side.summary
                .steps
                .iter()
                .zip(used)
                .filter(|(row, used)| !**used && side_has(side, row))
                .map(|(row, _)| format!("{}: {}", side.name, row.step))
        })
        .collect();
    FolderComparison {
        inputs: sides.iter().map(|s| s.name.clone()).collect(),
        variants: variant_lines(sides),
        steps,
        unmatched,
    }
}

fn side_has(side: &Side, row: &StepRow) -> bool {
    side.variant.as_ref().is_none_or(|v| *v == row.variant)
}

/// What makes two steps the same step: the variant (unless the sides picked theirs),
/// the kind, the offer, the axis values and the repeat.
fn step_key(row: &StepRow, selecting: bool) -> String {
    let variant = if selecting { "" } else { row.variant.as_str() };
    let params: Vec<String> = row.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!(
        "{variant}\u{1f}{}\u{1f}{}\u{1f}{}\u{1f}{}",
        row.kind,
        row.offer(),
        params.join(","),
        row.repeat
    )
}

fn nth_match<'a>(
    side: &'a Side,
    used: &mut [bool],
    key: &str,
    nth: usize,
    selecting: bool,
) -> Option<&'a StepRow> {
    let (index, row) = side
        .summary
        .steps
        .iter()
        .enumerate()
        .filter(|(_, row)| side_has(side, row) && step_key(row, selecting) == key)
        .nth(nth)?;
    used[index] = true;
    Some(row)
}

fn variant_lines(sides: &[Side]) -> Vec<VariantLine> {
    let labels: Vec<Vec<String>> = if sides.iter().any(|s| s.variant.is_some()) {
        vec![
            sides
                .iter()
                .map(|s| s.variant.clone().unwrap_or_default())
                .collect(),
        ]
    } else {
        let mut names: Vec<String> = Vec::new();
        for v in sides.iter().flat_map(|s| &s.summary.variants) {
            if !names.contains(&v.variant) {
                names.push(v.variant.clone());
            }
        }
        names.into_iter().map(|n| vec![n; sides.len()]).collect()
    };
    labels
        .into_iter()
        .map(|per_side| {
            let found: Vec<_> = sides
                .iter()
                .zip(&per_side)
                .map(|(side, name)| side.summary.variants.iter().find(|v| &v.variant == name))
                .collect();
            let capacity = Capacity::of(found.iter().flatten().copied());
            let held: Vec<Option<f64>> = (found.iter())
                .map(|v| v.and_then(|v| capacity.held(v)))
                .collect();
            VariantLine {
                variant: joined_names(per_side.iter().map(String::as_str)),
                capacity,
                how: found
                    .iter()
                    .map(|v| v.map_or("-".to_owned(), |v| v.how.clone()))
                    .collect(),
                versus: held[1..]
                    .iter()
                    .map(|b| Versus::of(held[0], *b, Some(Direction::HigherIsBetter), None))
                    .collect(),
                held,
            }
        })
        .collect()
}
