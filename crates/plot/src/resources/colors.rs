//! The colours of resource series: process groups keep theirs on every chart, host-wide
//! series are darker and warmer, limits gray.

use record::SamplerKind;

use super::{sampler_id, sampler_of};
use crate::place::Group;
use crate::sample_gather::{SampleData, SeriesData};

/// Process groups keep their colour on every chart.
pub(super) const GROUP_COLORS: [&str; 8] = [
    "#2563eb", "#0d9488", "#7c3aed", "#c2410c", "#0891b2", "#65a30d", "#db2777", "#4f46e5",
];
/// Host-wide series, darker and warmer, so they stand apart from the groups.
pub(super) const HOST_COLORS: [&str; 6] = [
    "#111827", "#ea580c", "#a16207", "#dc2626", "#9333ea", "#0f766e",
];
/// Everything else, by position.
pub(super) const PALETTE: [&str; 8] = [
    "#2563eb", "#ea580c", "#16a34a", "#9333ea", "#0891b2", "#dc2626", "#a16207", "#db2777",
];
pub(super) const LIMIT_COLOR: &str = "#9ca3af";

/// Process groups by their page-wide colour on the CPU, memory and connections
/// charts; limits gray; everything else by position.
pub(super) fn colors(data: &SampleData, group: Group, drawn: &[&SeriesData]) -> Vec<&'static str> {
    let process_samplers: Vec<usize> = data
        .tables
        .samplers
        .iter()
        .enumerate()
        .filter(|(_, s)| s.kind == SamplerKind::Process)
        .map(|(id, _)| id)
        .collect();
    let (mut host, mut other) = (0, 0);
    drawn
        .iter()
        .map(|one| {
            if one.place.limit {
                return LIMIT_COLOR;
            }
            let kind = sampler_of(data, one).map(|s| &s.kind);
            let sampler = sampler_id(data, one) as usize;
            if group.by_group_colour() && kind == Some(&SamplerKind::Process) {
                let position = process_samplers.iter().position(|&id| id == sampler);
                return GROUP_COLORS[position.unwrap_or(0) % GROUP_COLORS.len()];
            }
            if group.by_group_colour() {
                host += 1;
                return HOST_COLORS[(host - 1) % HOST_COLORS.len()];
            }
            other += 1;
            PALETTE[(other - 1) % PALETTE.len()]
        })
        .collect()
}
