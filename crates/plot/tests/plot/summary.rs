//! The page reads the summary `loadlab report` prints: its figures are report's JSON of
//! the same file, and each attack's percentile curve is what `report -by attack` says.

use std::path::Path;

use plot::{PlotConfig, RunPlot};
use report::{GroupBy, ReportConfig, ReportType};

use crate::fixture;

fn report_json(path: &Path, by: Option<GroupBy>) -> String {
    let json = ReportType::Json { buckets: None };
    report_of(path, &ReportConfig::new(json, None, by).unwrap())
}

/// What `loadlab report` prints for `path` with `config`.
pub fn report_of(path: &Path, config: &ReportConfig) -> String {
    let (mut out, mut diagnostics) = (Vec::new(), Vec::new());
    report::run_report(
        &[path.display().to_string()],
        config,
        &mut out,
        &mut diagnostics,
    )
    .unwrap();
    String::from_utf8(out).unwrap()
}

/// `"90th":123` in one report's JSON.
fn percentile(json: &str, key: &str) -> f64 {
    let at = json.find(&format!("\"{key}\":")).unwrap() + key.len() + 3;
    let end = at + json[at..].find([',', '}']).unwrap();
    json[at..end].parse().unwrap()
}

#[test]
fn the_page_s_figures_are_report_s_json() {
    let dir = tempfile::tempdir().unwrap();
    // Two attacks, resource samples (the resource rows and the diagnosis), errors.
    let path = fixture::golden_run_with_samples(dir.path());
    let plot = RunPlot::read(&[path.display().to_string()], &PlotConfig::default()).unwrap();

    let mut page = String::new();
    report::render(
        &mut page,
        plot.report(),
        &ReportType::Json { buckets: None },
        None,
    );
    assert_eq!(page, report_json(&path, None));
    // A flow's checks are in both (the page's summary once lacked them).
    let flows = fixture::flow_run(dir.path());
    let flow_plot = RunPlot::read(&[flows.display().to_string()], &PlotConfig::default()).unwrap();
    let mut page = String::new();
    let json = ReportType::Json { buckets: None };
    report::render(&mut page, flow_plot.report(), &json, None);
    assert!(page.contains("\"checks\":["), "{page}");
    assert_eq!(page, report_json(&flows, None));

    let by_attack = report_json(&path, Some(GroupBy::Attack));
    let curves = plot
        .charts()
        .iter()
        .find(|chart| chart.id == "distribution")
        .unwrap();
    for (attack, json) in ["search", "news"].into_iter().zip(by_attack.lines()) {
        assert!(json.contains(&format!("\"name\":\"{attack}\"")), "{json}");
        let curve = (curves.series.iter())
            .find(|s| s.name.starts_with(&format!("{attack}: ")))
            .unwrap();
        let p90 = curve.x.iter().position(|&nines| nines == 1.0).unwrap();
        assert_eq!(curve.y[p90], percentile(json, "90th"), "{attack}");
        assert_eq!(curve.y.last(), Some(&percentile(json, "max")), "{attack}");
    }
}
