//! The diagnosis on the time axis: a [`Marker`] at the knee and one at each finding's
//! crossing, labelled in a few words (`knee`, `nginx fds`) and titled with the
//! diagnosis's own sentence, for every time chart of the page.
//!
//! The diagnosis counts its times from its `start_unix_ns` (the run's first intended
//! send, or the first sample without requests); the page's x = 0 is its own origin (the
//! first request's intended time). Each marker goes through the wall clock, so the two
//! origins need not be the same instant.

use analysis::Diagnosis;
use report::words::diagnosis as words;

use crate::model::{Marker, MarkerKind, x_seconds};

/// Labels longer than this are cut with an ellipsis (the hover has the whole sentence).
pub const MAX_LABEL_CHARS: usize = 24;

/// The markers of `diagnosis` on a time axis whose x = 0 is `origin_unix_ns`, in time
/// order; none without a knee or a finding.
pub fn diagnosis_markers(diagnosis: &Diagnosis, origin_unix_ns: u64) -> Vec<Marker> {
    let start_unix_ns = diagnosis.start_unix_ns.unwrap_or(origin_unix_ns);
    let at_s = |at_ns: u64| x_seconds(origin_unix_ns, start_unix_ns.saturating_add(at_ns));
    let mut markers: Vec<Marker> = diagnosis
        .knee
        .iter()
        .map(|knee| Marker {
            at_s: at_s(knee.at_ns),
            label: "knee".to_owned(),
            title: format!("the knee: {}", words::knee(knee)),
            kind: MarkerKind::Knee,
        })
        .collect();
    let first = diagnosis.first_limit();
    for (index, finding) in diagnosis.findings.iter().enumerate() {
        markers.push(Marker {
            at_s: at_s(finding.crossing.at_ns),
            label: short_label(&words::short_name(&finding.watched)),
            title: words::finding_line(diagnosis, index),
            kind: if first == Some(index) {
                MarkerKind::FirstLimit
            } else {
                MarkerKind::Finding
            },
        });
    }
    // Stable: at one instant the knee comes first, then the findings in their order.
    markers.sort_by(|a, b| a.at_s.total_cmp(&b.at_s));
    markers
}

/// `label`, cut to [`MAX_LABEL_CHARS`] characters with an ellipsis.
fn short_label(label: &str) -> String {
    if label.chars().count() <= MAX_LABEL_CHARS {
        return label.to_owned();
    }
    let mut cut: String = label.chars().take(MAX_LABEL_CHARS - 1).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use analysis::diagnosis::{Crossing, GeneratorState, Knee, Resource, Watched};

    const S: u64 = 1_000_000_000;
    const ORIGIN: u64 = 1_700_000_000 * S;

    fn watched(name: &str, resource: Resource, crossed_s: f64) -> Watched {
        Watched {
            name: name.to_owned(),
            resource,
            series: "test.series".to_owned(),
            limit: Some(100.0),
            unit: "%",
            peak: 99.0,
            peak_at_ns: 0,
            brief: None,
            crossed: Some(Crossing {
                at_ns: (crossed_s * S as f64) as u64,
                value: 99.0,
            }),
            example: None,
            note: None,
        }
    }

    fn knee(at_s: u64) -> Knee {
        Knee {
            at_ns: at_s * S,
            offered_per_sec: 220.0,
            peak_ok_per_sec: 200.0,
            signal: analysis::TurnKind::Errors,
        }
    }

    #[test]
    fn markers_stand_at_the_knee_and_each_crossing_on_the_page_s_axis() {
        let pool = "app some_very_long_pool_gauge_busy{pool=\"orders\"}";
        // (case, knee at, crossings, the diagnosis's start from the page's origin in
        //  ms or none, the markers: label, kind, seconds on the axis)
        type Case<'a> = (
            &'a str,
            Option<u64>,
            Vec<Watched>,
            Option<u64>,
            Vec<(&'a str, MarkerKind, f64)>,
        );
        let cases: Vec<Case<'_>> = vec![
            ("nothing to mark", None, vec![], Some(0), vec![]),
            (
                "the knee only",
                Some(10),
                vec![],
                Some(0),
                vec![("knee", MarkerKind::Knee, 10.0)],
            ),
            (
                "a limit before the knee, a consequence after it",
                Some(10),
                vec![
                    watched("host", Resource::ListenQueue, 15.0),
                    watched("nginx", Resource::Fds, 7.0),
                ],
                Some(0),
                vec![
                    ("nginx fds", MarkerKind::FirstLimit, 7.0),
                    ("knee", MarkerKind::Knee, 10.0),
                    ("host listen overflows", MarkerKind::Finding, 15.0),
                ],
            ),
            (
                "at the knee's instant, the knee first",
                Some(10),
                vec![watched("nginx", Resource::Fds, 10.0)],
                Some(0),
                vec![
                    ("knee", MarkerKind::Knee, 10.0),
                    ("nginx fds", MarkerKind::FirstLimit, 10.0),
                ],
            ),
            (
                "no knee: the first crossing is the limit",
                None,
                vec![watched("nginx", Resource::Fds, 5.5)],
                Some(0),
                vec![("nginx fds", MarkerKind::FirstLimit, 5.5)],
            ),
            (
                "the diagnosis starts 250 ms after the page's zero",
                Some(10),
                vec![watched("nginx", Resource::Fds, 7.0)],
                Some(250),
                vec![
                    ("nginx fds", MarkerKind::FirstLimit, 7.25),
                    ("knee", MarkerKind::Knee, 10.25),
                ],
            ),
            (
                "without a start, the page's zero",
                Some(3),
                vec![],
                None,
                vec![("knee", MarkerKind::Knee, 3.0)],
            ),
            (
                "a long name is cut",
                None,
                vec![watched(pool, Resource::Pool, 2.0)],
                Some(0),
                vec![("app some_very_long_pool…", MarkerKind::FirstLimit, 2.0)],
            ),
        ];
        for (case, knee_s, watched, start_ms, want) in cases {
            let mut diagnosis =
                analysis::diagnose(knee_s.map(knee), None, &GeneratorState::default(), &watched);
            diagnosis.start_unix_ns = start_ms.map(|ms| ORIGIN + ms * 1_000_000);
            let markers = diagnosis_markers(&diagnosis, ORIGIN);
            let got: Vec<(&str, MarkerKind, f64)> = markers
                .iter()
                .map(|m| (m.label.as_str(), m.kind, (m.at_s * 1e6).round() / 1e6))
                .collect();
            assert_eq!(got, want, "{case}");
            for marker in &markers {
                // The hover says what the report says.
                let said = words::lines(&diagnosis)
                    .iter()
                    .any(|line| line.contains(&marker.title))
                    || marker.kind == MarkerKind::Knee;
                assert!(said, "{case}: {}", marker.title);
                assert!(marker.label.chars().count() <= MAX_LABEL_CHARS, "{case}");
            }
        }
    }
}
