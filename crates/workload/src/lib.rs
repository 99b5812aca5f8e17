//! loadlab workload (being built).
