//! Elsewhere than Linux: every profile is refused (see [`crate::Refusal`]).

use std::convert::Infallible;

use crate::Request;
use crate::error::SandboxError;
use crate::support::{Refusal, Support};

/// Never made here.
#[derive(Debug)]
pub struct Prepared {
    /// Never made here.
    pub child: ChildSteps,
    /// Never made here.
    pub parent: ParentSide,
}

/// Never made here.
#[derive(Debug)]
pub struct ChildSteps(Infallible);

/// Never made here.
#[derive(Debug)]
pub struct ParentSide(Infallible);

/// Never made here.
#[derive(Debug, Default)]
pub struct Running;

impl ChildSteps {
    /// Never called here.
    pub fn enter(&mut self) -> std::io::Result<()> {
        match self.0 {}
    }
}

impl ParentSide {
    /// Never called here.
    pub fn started(self) -> Result<Running, SandboxError> {
        match self.0 {}
    }

    /// Never called here.
    pub fn failed(self, _error: std::io::Error) -> std::io::Error {
        match self.0 {}
    }
}

/// Refuses: confinement is built on Linux's Landlock and namespaces.
pub fn prepare(_request: &Request<'_>) -> Result<Prepared, SandboxError> {
    Err(SandboxError::Refused(Refusal::Unsupported {
        os: Support::current().os,
    }))
}
