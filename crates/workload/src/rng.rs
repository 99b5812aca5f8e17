//! [`Rng`]: the counter-based generator behind templates' random values and random
//! data rows, keyed by (seed, request index, stream) so a run with the same seed sends
//! the same requests whatever the thread count.

/// SplitMix64: tiny, fast, and good enough to vary requests; seeded per request and
/// placeholder so values do not depend on which thread sends the request.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn for_request(seed: u64, seq: u64, stream: u64) -> Rng {
        let mut rng = Rng(seed
            ^ seq.wrapping_mul(0x9e37_79b9_7f4a_7c15)
            ^ stream.wrapping_mul(0xd1b5_4a32_d192_ed03));
        rng.next();
        rng
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A value in `[0, bound)` (Lemire's multiply-shift; the bias is below 2^-32 for
    /// the bounds templates use).
    pub(crate) fn below(&mut self, bound: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(bound.max(1))) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_key_gives_the_same_values_and_bounds_hold() {
        let values = |seed, seq, stream| {
            let mut rng = Rng::for_request(seed, seq, stream);
            [rng.next(), rng.next(), rng.below(10)]
        };
        assert_eq!(values(1, 2, 3), values(1, 2, 3));
        assert_ne!(values(1, 2, 3), values(1, 3, 3));
        assert_ne!(values(1, 2, 3), values(1, 2, 4));
        let mut rng = Rng::for_request(7, 0, 0);
        assert!((0..1000).all(|_| rng.below(6) < 6));
        assert_eq!(rng.below(0), 0, "a zero bound is read as 1");
    }
}
