//! [`Shard`]: one of N processes that together send one run's load, exactly.
//!
//! Sharding is a property of the schedule, not of a coordinator: shard `I` of `N` owns
//! the requests whose index `k` has `k mod N == I` (and, in the closed model, the users
//! `u` with `u mod N == I`). Indices are striped, as k6's execution segments are, so the
//! shards interleave in time instead of firing in lock-step bursts, and the union of
//! the N shards' requests is the one-machine schedule request for request.

use std::fmt;

/// Shard `index` of `count` (0-based). [`Shard::WHOLE`] (0/1) is an unsharded run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Shard {
    index: u64,
    count: u64,
}

impl Default for Shard {
    fn default() -> Shard {
        Shard::WHOLE
    }
}

impl Shard {
    /// The whole run: one process sends everything.
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// Shard `index` of `count`; `index < count` and `count >= 1`.
    pub fn new(index: u64, count: u64) -> Result<Shard, String> {
        if count == 0 {
            return Err("the shard count must be at least 1".to_owned());
        }
        if index >= count {
            return Err(format!(
                "shard {index}/{count}: the index counts from 0 and must be below the count \
                 (0/{count} to {}/{count})",
                count - 1
            ));
        }
        Ok(Shard { index, count })
    }

    /// Parses `I/N`, e.g. `0/4` .. `3/4`.
    pub fn parse(text: &str) -> Result<Shard, String> {
        let bad = || format!("{text:?} is not a shard: write I/N, e.g. 0/4 (0-based, I < N)");
        let (index, count) = text.trim().split_once('/').ok_or_else(bad)?;
        let number = |part: &str| part.trim().parse::<u64>().map_err(|_| bad());
        Shard::new(number(index)?, number(count)?)
    }

    /// This shard's 0-based index.
    pub fn index(self) -> u64 {
        self.index
    }

    /// How many shards share the run.
    pub fn count(self) -> u64 {
        self.count
    }

    /// True for an unsharded run (0/1).
    pub fn is_whole(self) -> bool {
        self.count == 1
    }

    /// The run-wide index of this shard's `local`-th request (or user): `I + local·N`.
    /// `None` when it does not fit in a `u64`.
    pub fn global(self, local: u64) -> Option<u64> {
        local.checked_mul(self.count)?.checked_add(self.index)
    }

    /// Whether the run-wide index `global` (a request or a user) is this shard's.
    pub fn owns(self, global: u64) -> bool {
        global % self.count == self.index
    }

    /// How many of the run-wide indices `0..total` are this shard's.
    pub fn share_of(self, total: u64) -> u64 {
        total / self.count + u64::from(total % self.count > self.index)
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A shard's text, and its (index, count) or a part of the error.
    type Row<'a> = (&'a str, Result<(u64, u64), &'a str>);

    #[test]
    fn parses_good_shards_and_refuses_bad_ones() {
        let rows: &[Row<'_>] = &[
            ("0/1", Ok((0, 1))),
            ("3/4", Ok((3, 4))),
            (" 1 / 2 ", Ok((1, 2))),
            ("3/3", Err("must be below the count (0/3 to 2/3)")),
            ("0/0", Err("at least 1")),
            ("a/b", Err("\"a/b\" is not a shard: write I/N")),
            ("2", Err("is not a shard")),
            ("-1/4", Err("is not a shard")),
            ("", Err("is not a shard")),
        ];
        for (text, want) in rows {
            match (Shard::parse(text), want) {
                (Ok(shard), Ok((index, count))) => {
                    assert_eq!((shard.index(), shard.count()), (*index, *count), "{text}");
                }
                (Err(err), Err(part)) => assert!(err.contains(part), "{text}: {err}"),
                (got, _) => panic!("{text}: {got:?}"),
            }
        }
    }

    #[test]
    fn shares_add_up_to_the_whole() {
        for count in 1..9 {
            for total in 0..40 {
                let sum: u64 = (0..count)
                    .map(|i| Shard::new(i, count).unwrap().share_of(total))
                    .sum();
                assert_eq!(sum, total, "{total} over {count}");
                for i in 0..count {
                    let shard = Shard::new(i, count).unwrap();
                    let owned = (0..total).filter(|&g| shard.owns(g)).count() as u64;
                    assert_eq!(owned, shard.share_of(total));
                }
            }
        }
        assert_eq!(Shard::new(1, 4).unwrap().global(2), Some(9));
        assert_eq!(Shard::new(1, 4).unwrap().global(u64::MAX), None);
    }
}

/// The union of the shards is the one-machine plan, request for request and user for
/// user, over rates, ramps, steps, bounds and shard counts.
#[cfg(test)]
mod proptests {
    use proptest::prelude::*;

    use super::Shard;
    use crate::{Pacing, Plan, Schedule};

    /// At most this many requests per case, so a case stays fast.
    const MOST_REQUESTS: u64 = 20_000;

    fn schedule_text() -> impl Strategy<Value = String> {
        prop_oneof![
            (1u32..3000, 1u32..5).prop_map(|(rate, s)| format!("const({rate}, {s}s)")),
            (0u32..2000, 1u32..2000, 1u32..5).prop_map(|(a, b, s)| format!("line({a}, {b}, {s}s)")),
            (1u32..200, 1u32..5, 1u32..3)
                .prop_map(|(a, steps, s)| format!("step({a}, {}, {a}, {s}s)", a * steps)),
            (1u32..500, 1u32..500).prop_map(|(a, b)| format!("const({a}, 1s) line({a}, {b}, 2s)")),
        ]
    }

    fn plan(text: &str, duration_ms: Option<u64>, max_requests: Option<u64>) -> Plan {
        Plan {
            pacing: Pacing::Open(Schedule::parse(text).unwrap_or_else(|_| Schedule::constant(1.0))),
            duration_ns: duration_ms.map(|ms| ms * 1_000_000),
            max_requests,
            shard: Shard::WHOLE,
        }
    }

    /// (global index, intended time) of every request `plan` sends.
    fn requests(plan: &Plan) -> Vec<(u64, u64)> {
        (0..MOST_REQUESTS)
            .map_while(|k| plan.intended_ns(k).map(|t| (plan.global_index(k), t)))
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            failure_persistence: None,
            ..ProptestConfig::with_cases(64)
        })]

        #[test]
        fn proptest_shards_union_is_the_whole_schedule(
            text in schedule_text(),
            duration_ms in prop::option::of(1u64..6000),
            max_requests in prop::option::of(0u64..8000),
            count in 1u64..8,
            probe_ms in 0u64..7000,
        ) {
            let whole = plan(&text, duration_ms, max_requests);
            let expected = requests(&whole);
            prop_assume!((expected.len() as u64) < MOST_REQUESTS / 8);
            let mut union = Vec::new();
            let mut asked = 0;
            for index in 0..count {
                let shard = whole.clone().sharded(Shard::new(index, count).unwrap());
                let mine = requests(&shard);
                prop_assert!(mine.iter().all(|&(k, _)| k % count == index), "striped");
                prop_assert!(mine.windows(2).all(|w| w[0].1 <= w[1].1), "in time order");
                union.extend(mine);
                asked += shard.asked_by(probe_ms * 1_000_000).unwrap();
            }
            union.sort_unstable();
            prop_assert_eq!(&union, &expected);
            prop_assert_eq!(Some(asked), whole.asked_by(probe_ms * 1_000_000));
        }

        #[test]
        fn proptest_shards_split_users_exactly(
            users in 1u32..300,
            ramp_to in 1u32..300,
            count in 1u64..8,
            probe_ms in 0u64..4000,
        ) {
            let schedule = Schedule::parse(&format!("const({users}, 1s) line({users}, {ramp_to}, 2s)")).unwrap();
            let whole = Plan {
                pacing: Pacing::Closed { users: schedule, think_ns: 0 },
                duration_ns: None,
                max_requests: None,
                shard: Shard::WHOLE,
            };
            let at = probe_ms * 1_000_000;
            let shards: Vec<Plan> = (0..count)
                .map(|i| whole.clone().sharded(Shard::new(i, count).unwrap()))
                .collect();
            let users_at: u64 = shards.iter().map(|p| p.users_at(at)).sum();
            prop_assert_eq!(users_at, whole.users_at(at));
            let max_users: u64 = shards.iter().map(Plan::max_users).sum();
            prop_assert_eq!(max_users, whole.max_users());
            // User u belongs to shard u mod N, and nowhere else.
            for u in 0..whole.users_at(at) {
                let owners = shards.iter().filter(|p| p.shard.owns(u)).count();
                prop_assert_eq!(owners, 1);
            }
        }
    }
}
