//! Integration tests of the host: real testkit servers started as child
//! processes, real skill folders in temporary directories, everything
//! through the public API.
#![allow(clippy::unwrap_used)]

mod discovery;
mod embed;
mod embedded;
mod futures;
mod health;
mod lazy;
mod plugins;
mod shutdown;
mod support;
mod visibility;
