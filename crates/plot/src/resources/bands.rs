//! Gap bands: the stretches of time a drawn series had no sample, shaded behind the
//! chart and named on hover, and the caption's sentence about them.

use std::fmt::Write as _;

use super::legend::sampler_text;
use super::sampler_id;
use crate::model::{Band, x_seconds};
use crate::sample_gather::{GapSpan, SampleData, SeriesData};

/// Gap bands shaded per chart; more are counted in the caption.
pub(super) const MAX_BANDS_PER_CHART: usize = 64;

/// Gap reasons named in a caption.
pub(super) const MAX_CAPTION_REASONS: usize = 3;

/// The chart's gap bands (overlapping ones merged, their reasons listed together) and
/// the caption's sentence about them.
pub(super) fn bands(
    data: &SampleData,
    drawn: &[&SeriesData],
    origin_unix_ns: u64,
) -> (Vec<Band>, String) {
    let (raw, reasons) = gap_stretches(data, drawn, origin_unix_ns);
    if raw.is_empty() {
        return (Vec::new(), String::new());
    }
    let mut bands = merge_overlaps(raw);
    let mut note = reasons_note(&reasons);
    if bands.len() > MAX_BANDS_PER_CHART {
        let _ = write!(
            note,
            " The first {MAX_BANDS_PER_CHART} of {} gap stretches are shaded.",
            bands.len()
        );
        bands.truncate(MAX_BANDS_PER_CHART);
    }
    if data.dropped_spans > 0 {
        let _ = write!(note, " {} more gaps were not kept.", data.dropped_spans);
    }
    (bands, note)
}

/// A gap stretch on the page's time axis: from and to in seconds, and its label.
type Stretch = (f64, f64, String);

/// The gap stretches of the drawn series and their samplers, labelled `who: reason`,
/// and each label's count of missed samples in order of first appearance.
fn gap_stretches(
    data: &SampleData,
    drawn: &[&SeriesData],
    origin_unix_ns: u64,
) -> (Vec<Stretch>, Vec<(String, u64)>) {
    let samplers: Vec<u32> = drawn.iter().map(|s| sampler_id(data, s)).collect();
    let relevant = |span: &&GapSpan| match span.series {
        None => samplers.contains(&span.sampler),
        Some(series) => drawn.iter().any(|s| s.id == series),
    };
    let mut raw: Vec<Stretch> = Vec::new();
    let mut reasons: Vec<(String, u64)> = Vec::new();
    for span in data.spans.iter().filter(relevant) {
        let Some(label) = gap_label(data, drawn, span) else {
            continue;
        };
        match reasons.iter_mut().find(|(text, _)| *text == label) {
            Some((_, count)) => *count += span.count,
            None => reasons.push((label.clone(), span.count)),
        }
        // A gap stands for the interval around its tick.
        let half_ns = data.step_ns(span.sampler) / 2;
        raw.push((
            x_seconds(origin_unix_ns, span.first_unix_ns.saturating_sub(half_ns)),
            x_seconds(origin_unix_ns, span.last_unix_ns.saturating_add(half_ns)),
            label,
        ));
    }
    (raw, reasons)
}

/// `who: reason` for a gap: the sampler, and the series' label when the gap names one.
fn gap_label(data: &SampleData, drawn: &[&SeriesData], span: &GapSpan) -> Option<String> {
    let sampler = data.tables.samplers.get(span.sampler as usize)?;
    let mut who = sampler_text(sampler);
    if let Some(series) = span.series {
        let label = drawn
            .iter()
            .find(|s| s.id == series)
            .map_or_else(String::new, |s| s.place.label.clone());
        if !label.is_empty() && label != who {
            let _ = write!(who, " {label}");
        }
    }
    let reason = data
        .reasons
        .get(span.reason as usize)
        .map_or("", String::as_str);
    Some(format!("{who}: {reason}"))
}

/// Overlapping stretches merged into one band, their labels joined with `; `.
fn merge_overlaps(mut raw: Vec<Stretch>) -> Vec<Band> {
    raw.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut bands: Vec<Band> = Vec::new();
    for (from_s, to_s, label) in raw {
        match bands.last_mut() {
            Some(last) if from_s <= last.to_s => {
                last.to_s = last.to_s.max(to_s);
                if !last.label.split("; ").any(|l| l == label) {
                    let _ = write!(last.label, "; {label}");
                }
            }
            _ => bands.push(Band {
                from_s,
                to_s,
                label,
            }),
        }
    }
    bands
}

/// " Shaded: no sample (...)." naming the first [`MAX_CAPTION_REASONS`] reasons.
fn reasons_note(reasons: &[(String, u64)]) -> String {
    let mut note = String::from(" Shaded: no sample (");
    let named: Vec<String> = reasons
        .iter()
        .take(MAX_CAPTION_REASONS)
        .map(|(label, count)| {
            let samples = if *count == 1 { "sample" } else { "samples" };
            format!("{label}: {count} {samples}")
        })
        .collect();
    note.push_str(&named.join("; "));
    if reasons.len() > MAX_CAPTION_REASONS {
        let _ = write!(note, "; and {} more", reasons.len() - MAX_CAPTION_REASONS);
    }
    note.push_str(").");
    note
}
