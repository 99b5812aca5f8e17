//! A step's attacks as the fields `attack` reads: the plan's `[load]` with the cell's
//! offer and the variant's targets, then each background scenario; and the step's
//! measured length. The one description of a step, for a step run here and for the
//! plan's shards (`sharded`).

use std::time::Duration;

use workload::{AttackFields, Origin, TextOrNumber};

use crate::cells::{Cell, Offer};
use crate::plan::{Plan, TargetSource, Variant};

/// The step's measured length (a schedule's own length when it is one).
pub(crate) fn measured(plan: &Plan, cell: &Cell) -> Duration {
    match &cell.offer {
        Offer::Schedule(text) => workload::Schedule::parse(text)
            .ok()
            .and_then(|s| s.duration_ns())
            .map_or(plan.load.step_duration, Duration::from_nanos)
            .saturating_sub(plan.load.warmup),
        _ => plan.load.step_duration,
    }
}

/// The cell's attacks as fields, each with where it was written: the plan's `[load]`
/// fields with the step's offer and the variant's targets, then each background
/// scenario (which run the step's whole length, warm-up included, at their own rate;
/// attacks 1.. in the records, in plan order).
pub(crate) fn step_fields(plan: &Plan, cell: &Cell) -> Vec<(AttackFields, Origin)> {
    let load = &plan.load;
    let variant = &plan.variants[cell.variant];
    let mut fields = load.attack.clone();
    fields.name = Some(variant.name.clone());
    match &cell.offer {
        Offer::Rate(rate) => fields.rate = Some(TextOrNumber::Text(format!("{rate}/1s"))),
        Offer::Users(users) => fields.concurrency = Some(TextOrNumber::Integer(*users as i64)),
        Offer::Schedule(schedule) => fields.schedule = Some(schedule.clone()),
    }
    if !matches!(cell.offer, Offer::Schedule(_)) {
        fields.duration = Some(format!(
            "{}ns",
            (load.warmup + load.step_duration).as_nanos()
        ));
    }
    let mut origin = load.attack_origin.clone();
    variant_targets(plan, variant, &mut fields, &mut origin);
    let mut attacks = vec![(fields, origin)];
    let length = load.warmup + measured(plan, cell);
    for scenario in &load.scenarios {
        let mut fields = scenario.attack.clone();
        fields.duration = Some(format!("{}ns", length.as_nanos()));
        fields.base_url.clone_from(&variant.base_url());
        attacks.push((fields, scenario.origin.clone()));
    }
    attacks
}

/// The variant's own targets, or the plan's (rebased onto its base URL when it has one).
fn variant_targets(plan: &Plan, variant: &Variant, fields: &mut AttackFields, origin: &mut Origin) {
    let own = |field: &str| {
        let label = format!(
            "{}:{}: variant {:?}: {field}",
            plan.source_name, variant.line, variant.name
        );
        (field.to_owned(), label)
    };
    match &variant.targets {
        TargetSource::Inline(list) => {
            (fields.targets, fields.targets_file, fields.step) = (Some(list.clone()), None, None);
            origin.field_labels.extend([own("targets")]);
        }
        TargetSource::File(path) => {
            let file = path.display().to_string();
            (fields.targets, fields.targets_file, fields.step) = (None, Some(file), None);
            origin.field_labels.extend([own("targets_file")]);
        }
        TargetSource::Rebased(base) => fields.base_url = Some(base.clone()),
        TargetSource::Shared => {}
    }
}
