//! `loadlab plot` end to end at the library level: golden page and charts for a fixed
//! run, bad inputs, and the page in headless Chromium.

#![allow(clippy::unwrap_used)]

mod bad_input;
mod browser;
mod fixture;
mod golden;
mod samples;
