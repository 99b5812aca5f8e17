//! Quantiles of a Prometheus histogram over one interval: the difference of two
//! scrapes' cumulative buckets, interpolated linearly inside the bucket that holds the
//! rank, as PromQL's `histogram_quantile(q, rate(x_bucket[1s]))` does.

/// Cumulative bucket counts by upper bound (`le`), sorted, the last one `+Inf`.
pub(crate) type Buckets = Vec<(f64, f64)>;

/// Why an interval has no quantile.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum NoQuantile {
    /// No observation fell in the interval.
    Empty,
    /// A bucket went down: the histogram was reset.
    Reset,
    /// The buckets changed shape, or have no `+Inf` bucket.
    Malformed(String),
}

/// The observations in each bucket between `before` and `now` (still cumulative).
pub(crate) fn interval_buckets(before: &Buckets, now: &Buckets) -> Result<Buckets, NoQuantile> {
    if before.len() != now.len() || before.iter().zip(now).any(|(b, n)| b.0 != n.0) {
        return Err(NoQuantile::Malformed(
            "the bucket bounds changed".to_owned(),
        ));
    }
    now.iter()
        .zip(before)
        .map(|(&(le, n), &(_, b))| {
            if n < b {
                Err(NoQuantile::Reset)
            } else {
                Ok((le, n - b))
            }
        })
        .collect()
}

/// The `q` quantile of cumulative `buckets`.
pub(crate) fn quantile(q: f64, buckets: &Buckets) -> Result<f64, NoQuantile> {
    let Some(&(last_le, total)) = buckets.last() else {
        return Err(NoQuantile::Malformed("no buckets".to_owned()));
    };
    if last_le != f64::INFINITY {
        return Err(NoQuantile::Malformed("no +Inf bucket".to_owned()));
    }
    if total <= 0.0 {
        return Err(NoQuantile::Empty);
    }
    let rank = q * total;
    let index = buckets
        .iter()
        .position(|&(_, count)| count >= rank)
        .unwrap_or(buckets.len() - 1);
    if index == buckets.len() - 1 {
        // In the +Inf bucket: the highest finite bound is all we know.
        return Ok(buckets.len().checked_sub(2).map_or(0.0, |i| buckets[i].0));
    }
    let (upper, count) = buckets[index];
    let (lower, below) = match index {
        0 if upper > 0.0 => (0.0, 0.0),
        0 => return Ok(upper),
        _ => buckets[index - 1],
    };
    let in_bucket = count - below;
    if in_bucket <= 0.0 {
        return Ok(upper);
    }
    Ok(lower + (upper - lower) * (rank - below) / in_bucket)
}

#[cfg(test)]
mod tests {
    use super::*;

    const INF: f64 = f64::INFINITY;

    #[test]
    fn quantiles_interpolate_inside_buckets() {
        let buckets: Buckets = vec![(0.1, 50.0), (0.5, 90.0), (1.0, 99.0), (INF, 100.0)];
        let rows: &[(f64, f64)] = &[
            (0.5, 0.1),
            (0.25, 0.05),
            (0.7, 0.1 + 0.4 * 20.0 / 40.0),
            (0.9, 0.5),
            (0.99, 1.0),
            // Past the last finite bound: that bound.
            (0.999, 1.0),
        ];
        for &(q, want) in rows {
            let got = quantile(q, &buckets).unwrap();
            assert!((got - want).abs() < 1e-12, "q{q}: {got} want {want}");
        }
        let rows: Vec<(Buckets, NoQuantile)> = vec![
            (vec![(0.1, 0.0), (INF, 0.0)], NoQuantile::Empty),
            (vec![], NoQuantile::Malformed("no buckets".to_owned())),
            (
                vec![(0.1, 3.0)],
                NoQuantile::Malformed("no +Inf bucket".to_owned()),
            ),
        ];
        for (buckets, want) in rows {
            assert_eq!(quantile(0.5, &buckets), Err(want));
        }
        assert_eq!(quantile(0.5, &vec![(INF, 3.0)]), Ok(0.0));
        assert_eq!(quantile(0.5, &vec![(-1.0, 3.0), (INF, 3.0)]), Ok(-1.0));
    }

    #[test]
    fn intervals_subtract_and_spot_resets() {
        let before: Buckets = vec![(0.1, 10.0), (INF, 12.0)];
        let rows: Vec<(Buckets, Result<Buckets, NoQuantile>)> = vec![
            (
                vec![(0.1, 15.0), (INF, 20.0)],
                Ok(vec![(0.1, 5.0), (INF, 8.0)]),
            ),
            (vec![(0.1, 2.0), (INF, 3.0)], Err(NoQuantile::Reset)),
            (
                vec![(0.2, 15.0), (INF, 20.0)],
                Err(NoQuantile::Malformed(
                    "the bucket bounds changed".to_owned(),
                )),
            ),
            (
                vec![(INF, 20.0)],
                Err(NoQuantile::Malformed(
                    "the bucket bounds changed".to_owned(),
                )),
            ),
        ];
        for (now, want) in rows {
            assert_eq!(interval_buckets(&before, &now), want, "{now:?}");
        }
    }
}
