//! loadlab engine (being built).
