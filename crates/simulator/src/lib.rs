//! loadlab's origin / downstream / system-under-test simulator (being built).
