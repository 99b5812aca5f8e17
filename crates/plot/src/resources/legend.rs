//! What a resource series is called in its chart's legend: its place's label after
//! its sampler's short name, with its peak, cut to a readable length.

use std::collections::BTreeMap;

use record::{SamplerInfo, SamplerKind};

use super::{sampler_id, sampler_of};
use crate::format;
use crate::model::Unit;
use crate::place::Group;
use crate::sample_gather::{SampleData, SeriesData};

/// Legend entries longer than this (Prometheus names with many labels) are cut.
pub(super) const MAX_LEGEND_CHARS: usize = 72;

/// A sampler's name without what the reader does not need: the scheme, the user
/// (whose password is `REDACTED` anyway) and a `/metrics` path.
pub(super) fn short_name(sampler: &SamplerInfo) -> String {
    let Some((_, rest)) = sampler.name.split_once("://") else {
        return sampler.name.clone();
    };
    match rest.split_once('/') {
        Some((authority, path)) => {
            let host = authority
                .rsplit_once('@')
                .map_or(authority, |(_, host)| host);
            if path == "metrics" {
                host.to_owned()
            } else {
                format!("{host}/{path}")
            }
        }
        None => rest
            .rsplit_once('@')
            .map_or(rest, |(_, host)| host)
            .to_owned(),
    }
}

/// Who a gap belongs to, for hover and captions: `host`, `nginx`, `prom 127.0.0.1:9113`.
pub(super) fn sampler_text(sampler: &SamplerInfo) -> String {
    match sampler.kind {
        SamplerKind::Host | SamplerKind::Process => sampler.name.clone(),
        ref kind => format!("{kind} {}", short_name(sampler)),
    }
}

/// Host-wide series first, then process groups, databases, scrapes.
pub(super) fn kind_rank(kind: &SamplerKind) -> u8 {
    match kind {
        SamplerKind::Host => 0,
        SamplerKind::Process => 1,
        SamplerKind::Postgres => 2,
        SamplerKind::Prom => 3,
        SamplerKind::Agent | SamplerKind::Log | SamplerKind::Other(_) => 4,
    }
}

/// A value in a legend or caption: whole counts exactly (`1,024`, not `1.02k`: a limit
/// reads as the number it is), anything else as on the axis.
pub(super) fn legend_value(unit: Unit, value: f64) -> String {
    if unit == Unit::Count && value.fract() == 0.0 && (0.0..1e15).contains(&value) {
        format::grouped(value as u64)
    } else {
        unit.label(value)
    }
}

/// Legend names: the place's label, after the sampler's short name when the chart
/// draws series of two samplers of one kind (two hosts through agents, two servers).
pub(super) fn legend_names(data: &SampleData, group: Group, drawn: &[&SeriesData]) -> Vec<String> {
    let mut samplers_of_kind: BTreeMap<&SamplerKind, Vec<u32>> = BTreeMap::new();
    for one in drawn {
        if let Some(sampler) = sampler_of(data, one) {
            let ids = samplers_of_kind.entry(&sampler.kind).or_default();
            let id = sampler_id(data, one);
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
    }
    let distinct = samplers_of_kind.values().map(Vec::len).sum::<usize>();
    drawn
        .iter()
        .map(|one| {
            let sampler = sampler_of(data, one);
            let several = sampler.is_some_and(|s| {
                s.kind != SamplerKind::Process
                    && (samplers_of_kind.get(&s.kind).map_or(0, Vec::len) > 1
                        || matches!(group, Group::Other(_)) && distinct > 1)
            });
            let name = match sampler {
                Some(sampler) if several => format!("{} {}", short_name(sampler), one.place.label),
                _ => one.place.label.clone(),
            };
            cut(&name, MAX_LEGEND_CHARS)
        })
        .collect()
}

pub(super) fn cut(text: &str, chars: usize) -> String {
    if text.chars().count() <= chars {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(chars - 1).collect();
    out.push('…');
    out
}
