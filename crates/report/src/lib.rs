//! loadlab report (being built).
