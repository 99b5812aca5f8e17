//! Memory caps on what recipes make the simulator hold: each body (a route's payload or
//! a mix entry's own body) at most `max_body_bytes`, all bodies of the routes in force
//! at most `max_recipe_memory_bytes`. Without them, `"body_file": "/dev/zero"` or eight
//! routes of `"<<256mb>>"` in a 500-byte POST would grow the simulator until it died.
//!
//! Sizes are charged before the memory is allocated wherever they are known from the
//! recipe (placeholders, `random_content`), and files and origins are read with a bound
//! of what is left, so a refused recipe never allocates past its cap.

use crate::duration_size::format_size;
use crate::error::Invalid;

/// What the bodies still to be built may cost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Budget {
    max_body_bytes: u64,
    max_total_bytes: u64,
    left_bytes: u64,
}

impl Budget {
    /// A budget of `max_total_bytes` of which `held_bytes` are already taken by routes
    /// that stay in force.
    pub fn new(max_body_bytes: u64, max_total_bytes: u64, held_bytes: u64) -> Self {
        Self {
            max_body_bytes,
            max_total_bytes,
            left_bytes: max_total_bytes.saturating_sub(held_bytes),
        }
    }

    /// Most bytes the next body may have: a bound for reading files and origins.
    pub fn room_bytes(&self) -> u64 {
        self.max_body_bytes.min(self.left_bytes)
    }

    /// Charges a body of `served_bytes` (the size of one answer) that costs `held_bytes`
    /// of memory (more for a gzip size range held as several variants).
    pub fn charge(
        &mut self,
        field: &str,
        served_bytes: u64,
        held_bytes: u64,
    ) -> Result<(), Invalid> {
        if served_bytes > self.max_body_bytes {
            return Err(Invalid::new(
                field,
                format!(
                    "body larger than the {} cap on one body (simulate -max-body-size)",
                    format_size(self.max_body_bytes)
                ),
            ));
        }
        if held_bytes > self.left_bytes {
            return Err(Invalid::new(
                field,
                format!(
                    "the routes in force would hold more than {} of bodies (simulate -max-recipe-memory)",
                    format_size(self.max_total_bytes)
                ),
            ));
        }
        self.left_bytes -= held_bytes;
        Ok(())
    }

    /// Bytes charged so far, out of what was left at the start.
    pub fn spent_since(&self, start: &Budget) -> u64 {
        start.left_bytes - self.left_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_until_a_cap_is_hit() {
        let mut budget = Budget::new(100, 250, 50);
        let start = budget.clone();
        assert_eq!(budget.room_bytes(), 100);
        budget.charge("a", 100, 100).unwrap();
        assert_eq!(budget.room_bytes(), 100);
        let over_body = budget.charge("b.body", 101, 101).unwrap_err();
        assert_eq!(over_body.field, "b.body");
        assert!(
            over_body.message.contains("-max-body-size"),
            "{over_body:?}"
        );
        budget.charge("c", 60, 60).unwrap();
        assert_eq!(budget.room_bytes(), 40);
        let over_total = budget.charge("d", 41, 41).unwrap_err();
        assert!(
            over_total.message.contains("more than 250b"),
            "{over_total:?}"
        );
        assert!(
            over_total.message.contains("-max-recipe-memory"),
            "{over_total:?}"
        );
        assert_eq!(budget.spent_since(&start), 160);
        assert_eq!(Budget::new(10, 5, 9).room_bytes(), 0);
    }
}
