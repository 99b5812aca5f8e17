//! [`Hub`]: turns samplers' [`Reading`]s (series named by name and labels) into
//! [`SampleFrame`]s (series named by id, new ids announced once), so samplers never
//! share state and the record file's tables stay append-only.

use std::collections::{BTreeMap, HashMap};

use crate::rates::Rate;

use record::{
    SampleBatch, SampleFrame, SampleGap, SampleTables, SampleValue, SamplerInfo, SeriesInfo,
    SeriesKind,
};

/// A series as a sampler names it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct SeriesDef {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub unit: String,
    pub kind: SeriesKind,
}

impl SeriesDef {
    pub(crate) fn new(name: &str, unit: &str, kind: SeriesKind) -> SeriesDef {
        SeriesDef {
            name: name.to_owned(),
            labels: BTreeMap::new(),
            unit: unit.to_owned(),
            kind,
        }
    }

    pub(crate) fn gauge(name: &str, unit: &str) -> SeriesDef {
        SeriesDef::new(name, unit, SeriesKind::Gauge)
    }

    pub(crate) fn rate(name: &str, unit: &str) -> SeriesDef {
        SeriesDef::new(name, unit, SeriesKind::Rate)
    }

    pub(crate) fn label(mut self, name: &str, value: &str) -> SeriesDef {
        self.labels.insert(name.to_owned(), value.to_owned());
        self
    }
}

/// What one sampler read at one instant.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Reading {
    pub sampler: SamplerInfo,
    pub at_unix_ns: u64,
    pub values: Vec<(SeriesDef, f64)>,
    /// `None`: the whole sampler (e.g. an endpoint that is down).
    pub gaps: Vec<(Option<SeriesDef>, String)>,
}

impl Reading {
    pub(crate) fn new(sampler: &SamplerInfo, at_unix_ns: u64) -> Reading {
        Reading {
            sampler: sampler.clone(),
            at_unix_ns,
            ..Reading::default()
        }
    }

    pub(crate) fn value(&mut self, series: SeriesDef, value: f64) {
        self.values.push((series, value));
    }

    pub(crate) fn gap(&mut self, series: Option<SeriesDef>, reason: impl Into<String>) {
        self.gaps.push((series, reason.into()));
    }

    /// Records a counter's `rate` for `series`: nothing on the first reading, the
    /// value per second, or a gap saying the counter was reset.
    pub(crate) fn rate(&mut self, series: SeriesDef, rate: Rate) {
        match rate {
            Rate::First => {}
            Rate::PerSec(value) => self.value(series, value),
            Rate::Reset { before, now } => self.gap(Some(series), Rate::reset_reason(before, now)),
        }
    }
}

/// Interns samplers and series; builds frames that carry the entries not yet delivered.
#[derive(Default)]
pub(crate) struct Hub {
    tables: SampleTables,
    sampler_ids: HashMap<SamplerInfo, u32>,
    series_ids: HashMap<(u32, SeriesDef), u32>,
    /// Entries already handed to the consumer in a frame it accepted.
    delivered_samplers: usize,
    delivered_series: usize,
}

impl Hub {
    /// A hub whose table starts with `samplers`, in that order.
    pub(crate) fn with_samplers(samplers: &[SamplerInfo]) -> Hub {
        let mut hub = Hub::default();
        for info in samplers {
            hub.sampler_id(info);
        }
        hub
    }

    /// A frame for `reading`, with every table entry the consumer has not yet seen.
    /// Values that are not finite become gaps (charts and sums cannot use them).
    pub(crate) fn frame(&mut self, reading: Reading) -> SampleFrame {
        let sampler = self.sampler_id(&reading.sampler);
        let mut batch = SampleBatch {
            at_unix_ns: reading.at_unix_ns,
            values: Vec::with_capacity(reading.values.len()),
            gaps: Vec::new(),
        };
        for (def, value) in reading.values {
            let series = self.series_id(sampler, def);
            if value.is_finite() {
                batch.values.push(SampleValue { series, value });
            } else {
                batch.gaps.push(SampleGap {
                    sampler,
                    series: Some(series),
                    reason: format!("value is {value}"),
                });
            }
        }
        for (def, reason) in reading.gaps {
            let series = def.map(|def| self.series_id(sampler, def));
            batch.gaps.push(SampleGap {
                sampler,
                series,
                reason,
            });
        }
        SampleFrame {
            first_sampler: self.delivered_samplers as u32,
            samplers: self.tables.samplers[self.delivered_samplers..].to_vec(),
            first_series: self.delivered_series as u32,
            series: self.tables.series[self.delivered_series..].to_vec(),
            batch,
        }
    }

    /// The consumer accepted `frame`: its entries need not be sent again. (A frame it
    /// refused leaves them pending, so the next frame carries them.)
    #[cfg(test)]
    pub(crate) fn delivered(&mut self, frame: &SampleFrame) {
        (self.delivered_samplers, self.delivered_series) = defined_through(frame);
    }

    #[cfg(test)]
    pub(crate) fn tables(&self) -> &SampleTables {
        &self.tables
    }

    fn sampler_id(&mut self, info: &SamplerInfo) -> u32 {
        if let Some(&id) = self.sampler_ids.get(info) {
            return id;
        }
        let id = self.tables.samplers.len() as u32;
        self.tables.samplers.push(info.clone());
        self.sampler_ids.insert(info.clone(), id);
        id
    }

    fn series_id(&mut self, sampler: u32, def: SeriesDef) -> u32 {
        let key = (sampler, def);
        if let Some(&id) = self.series_ids.get(&key) {
            return id;
        }
        let (sampler, def) = key;
        let id = self.tables.series.len() as u32;
        self.tables.series.push(SeriesInfo {
            sampler,
            name: def.name.clone(),
            labels: def.labels.clone(),
            unit: def.unit.clone(),
            kind: def.kind,
        });
        self.series_ids.insert((sampler, def), id);
        id
    }
}

/// The table sizes a consumer knows once it has `frame`.
pub(crate) fn defined_through(frame: &SampleFrame) -> (usize, usize) {
    (
        frame.first_sampler as usize + frame.samplers.len(),
        frame.first_series as usize + frame.series.len(),
    )
}

impl Hub {
    /// Like [`Hub::delivered`], from [`defined_through`] taken before the frame left.
    pub(crate) fn delivered_through(&mut self, (samplers, series): (usize, usize)) {
        (self.delivered_samplers, self.delivered_series) = (samplers, series);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sampler(name: &str) -> SamplerInfo {
        SamplerInfo {
            kind: record::SamplerKind::Process,
            name: name.to_owned(),
        }
    }

    #[test]
    fn frames_announce_each_entry_until_delivered() {
        let mut hub = Hub::default();
        let cpu = SeriesDef::gauge("process.cpu_percent", "percent").label("group", "nginx");
        let mut reading = Reading::new(&sampler("nginx"), 10);
        reading.value(cpu.clone(), 50.0);
        reading.value(SeriesDef::gauge("process.rss_bytes", "bytes"), f64::NAN);
        let first = hub.frame(reading.clone());
        assert_eq!((first.samplers.len(), first.series.len()), (1, 2));
        assert_eq!(
            first.batch.values,
            vec![SampleValue {
                series: 0,
                value: 50.0
            }]
        );
        assert_eq!(first.batch.gaps[0].reason, "value is NaN");
        // Refused: the next frame carries the same entries again.
        let again = hub.frame(reading.clone());
        assert_eq!((again.first_series, again.series.len()), (0, 2));
        hub.delivered(&again);
        let mut gone = Reading::new(&sampler("nginx"), 20);
        gone.gap(None, "no process matches nginx");
        gone.gap(Some(cpu), "exited");
        let third = hub.frame(gone);
        assert!(third.samplers.is_empty() && third.series.is_empty());
        assert_eq!((third.first_sampler, third.first_series), (1, 2));
        let gaps: Vec<(u32, Option<u32>)> = third
            .batch
            .gaps
            .iter()
            .map(|g| (g.sampler, g.series))
            .collect();
        assert_eq!(gaps, vec![(0, None), (0, Some(0))]);
        // A second sampler with the same series name gets its own series.
        let mut other = Reading::new(&sampler("haproxy"), 30);
        other.value(SeriesDef::gauge("process.rss_bytes", "bytes"), 1.0);
        let fourth = hub.frame(other);
        assert_eq!((fourth.first_sampler, fourth.samplers.len()), (1, 1));
        assert_eq!(fourth.series[0].sampler, 1);
        let mut tables = SampleTables::default();
        tables.extend_from(&again).unwrap();
        tables.extend_from(&fourth).unwrap();
        assert_eq!(&tables, hub.tables());
    }

    #[test]
    fn samplers_keep_the_order_they_were_given_in() {
        let mut hub = Hub::with_samplers(&[sampler("host"), sampler("nginx")]);
        // nginx's thread reads first: it still gets the second id.
        let mut reading = Reading::new(&sampler("nginx"), 10);
        reading.value(SeriesDef::gauge("process.rss_bytes", "bytes"), 1.0);
        let first = hub.frame(reading);
        let names: Vec<&str> = first.samplers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["host", "nginx"]);
        assert_eq!(first.series[0].sampler, 1);
        assert_eq!(first.batch.values[0].series, 0);
    }
}
