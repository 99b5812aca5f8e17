//! `loadlab plot` end to end at the library level: golden page and charts for a fixed
//! run, bad inputs, the diagnosis on the page, and the page in headless Chromium.

#![allow(clippy::unwrap_used)]

mod bad_input;
mod browser;
mod diagnosis;
mod fixture;
mod flows;
mod golden;
mod replay;
mod samples;
mod summary;
mod traces;
