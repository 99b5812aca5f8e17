//! loadlab record (being built).
