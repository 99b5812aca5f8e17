//! [`check_shards`]: the record files of one sharded run (`attack -shard I/N`) merge
//! into one report only if they are shards of the *same* run: the same plan
//! fingerprint and shard count, each shard once. Files of different runs, or the same
//! shard twice, would silently add up to a load nobody asked for.

use crate::RecordError;
use crate::source::SourceSummary;

/// Refuses sharded inputs (header `shard` with a count above 1) that are not shards
/// of one run, naming the files. Unsharded inputs are not checked: several runs may
/// still be read together, as before.
pub fn check_shards<'a>(
    summaries: impl IntoIterator<Item = &'a SourceSummary>,
) -> Result<(), RecordError> {
    let sharded: Vec<&SourceSummary> = summaries
        .into_iter()
        .filter(|s| s.header.shard.as_ref().is_some_and(|i| i.count > 1))
        .collect();
    let Some((first, rest)) = sharded.split_first() else {
        return Ok(());
    };
    let info = |s: &SourceSummary| s.header.shard.clone().unwrap_or_default();
    let head = info(first);
    for summary in rest {
        let other = info(summary);
        let reason = if other.count != head.count {
            format!(
                "{} is shard {}/{} but {} is shard {}/{}: the shards of one run share their count",
                first.name, head.index, head.count, summary.name, other.index, other.count
            )
        } else if other.plan_fingerprint != head.plan_fingerprint {
            format!(
                "{} and {} are shards of different runs (plan fingerprints {} and {}): start \
                 every shard with the same targets, schedule, options and -seed",
                first.name, summary.name, head.plan_fingerprint, other.plan_fingerprint
            )
        } else {
            continue;
        };
        return Err(RecordError::Shards(reason));
    }
    for (n, summary) in sharded.iter().enumerate() {
        let index = info(summary).index;
        if let Some(twin) = sharded[..n].iter().find(|s| info(s).index == index) {
            return Err(RecordError::Shards(format!(
                "{} and {} are both shard {index}/{}: give each shard once",
                twin.name, summary.name, head.count
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::ShardInfo;
    use crate::source::InputFormat;

    fn file(name: &str, index: u64, count: u64, fingerprint: &str) -> SourceSummary {
        let mut summary = SourceSummary::new(name, InputFormat::Binary);
        summary.header.shard = Some(ShardInfo {
            index,
            count,
            plan_fingerprint: fingerprint.to_owned(),
            ..ShardInfo::default()
        });
        summary
    }

    /// Files as (name, index, count, fingerprint), and a part of the error if refused.
    type Row<'a> = (&'a [(&'a str, u64, u64, &'a str)], Option<&'a str>);

    #[test]
    fn only_shards_of_one_run_merge() {
        let rows: &[Row<'_>] = &[
            (
                &[("a", 0, 4, "f"), ("b", 1, 4, "f"), ("c", 3, 4, "f")],
                None,
            ),
            (&[("a", 0, 1, "f"), ("b", 0, 1, "g")], None),
            (
                &[("a", 0, 4, "f"), ("b", 1, 4, "g")],
                Some("a and b are shards of different runs (plan fingerprints f and g)"),
            ),
            (
                &[("a", 0, 4, "f"), ("b", 1, 3, "f")],
                Some("a is shard 0/4 but b is shard 1/3"),
            ),
            (
                &[("a", 1, 4, "f"), ("b", 1, 4, "f")],
                Some("a and b are both shard 1/4"),
            ),
        ];
        for (files, want) in rows {
            let summaries: Vec<SourceSummary> = files
                .iter()
                .map(|&(name, index, count, fp)| file(name, index, count, fp))
                .collect();
            match (check_shards(&summaries), want) {
                (Ok(()), None) => {}
                (Err(err), Some(want)) => {
                    assert!(err.to_string().contains(want), "{err}");
                }
                (got, _) => panic!("{files:?}: {got:?}"),
            }
        }
    }
}
