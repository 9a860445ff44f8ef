//! Integration tests of extpool-config, through its public entry points
//! (`load`, `load_file`) on real files.

// Test helpers may unwrap: a failure there is a test failure with its location.
#![allow(clippy::unwrap_used)]

mod check;
mod props;
mod reading;
mod scale;
mod support;
