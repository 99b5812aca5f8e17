//! loadlab units (being built).
