//! [`TargetRegistry`]: the run's target table (method and display URL per record
//! target id): every attack's fixed targets first, then the lazily read ones as the
//! feeders discover them. The launcher fills it, the feeders add to it and the
//! collector copies new entries into dictionary blocks.

use std::sync::{Mutex, MutexGuard, PoisonError};

use record::TargetInfo;

/// The lock is taken once per distinct target, never per request.
#[derive(Default)]
pub(crate) struct TargetRegistry {
    targets: Mutex<Vec<TargetInfo>>,
}

impl TargetRegistry {
    pub(crate) fn prefill(&self, targets: impl Iterator<Item = TargetInfo>) {
        self.lock().extend(targets);
    }

    pub(crate) fn snapshot(&self) -> Vec<TargetInfo> {
        self.lock().clone()
    }

    /// Entries from position `from` on.
    pub(crate) fn since(&self, from: usize) -> Vec<TargetInfo> {
        self.lock()
            .get(from..)
            .map(<[TargetInfo]>::to_vec)
            .unwrap_or_default()
    }

    /// Adds a target; its record id.
    pub(crate) fn push(&self, target: TargetInfo) -> u32 {
        let mut targets = self.lock();
        targets.push(target);
        (targets.len() - 1) as u32
    }

    fn lock(&self) -> MutexGuard<'_, Vec<TargetInfo>> {
        self.targets.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// How a target is named in the record file (its URL redacted; a gRPC call's method
/// is `GRPC`, as its target is written, so `report -by=target` names it so).
pub(crate) fn target_info(target: &workload::Target) -> TargetInfo {
    let method = if target.is_grpc() {
        "GRPC".to_owned()
    } else {
        target.method.clone()
    };
    TargetInfo {
        step: None,
        checks: Vec::new(),
        method,
        url: target.display_url(),
    }
}
