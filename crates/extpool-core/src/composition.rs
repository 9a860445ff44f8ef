//! Composition safety: capabilities that own children (a skill that owns MCP
//! servers) must not form cycles, and deep nesting is flagged.
//!
//! Cycle detection happens at registration (walking [`crate::Capability::children`])
//! and whenever a composite adds a child through a [`ParentChain`], so no
//! query ever pays for it.

use std::sync::Arc;

use crate::Capability;

/// A capability appears in its own ancestor chain.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("circular composition: {}", chain.join(" -> "))]
pub struct CircularCompositionError {
    /// The chain of capability ids, ending with the repeated one.
    pub chain: Vec<String>,
}

/// The ancestors of a capability, root first. Composites use it to add children safely.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParentChain {
    ids: Vec<String>,
}

impl ParentChain {
    /// The chain of a root capability.
    pub fn root(id: impl Into<String>) -> Self {
        Self {
            ids: vec![id.into()],
        }
    }

    /// The chain of a child with `id`; refuses a child that is already an ancestor.
    pub fn child(&self, id: &str) -> Result<Self, CircularCompositionError> {
        let mut ids = self.ids.clone();
        ids.push(id.to_owned());
        if self.ids.iter().any(|a| a == id) {
            return Err(CircularCompositionError { chain: ids });
        }
        Ok(Self { ids })
    }

    /// Depth counted root-inclusive (a root alone is 1).
    pub fn depth(&self) -> usize {
        self.ids.len()
    }

    /// The ids, root first.
    pub fn ids(&self) -> &[String] {
        &self.ids
    }
}

/// Walks `cap`'s composition tree; returns its depth (root-inclusive) or the cycle.
pub fn check(cap: &Arc<dyn Capability>) -> Result<usize, CircularCompositionError> {
    fn walk(
        cap: &Arc<dyn Capability>,
        chain: &ParentChain,
    ) -> Result<usize, CircularCompositionError> {
        let mut deepest = chain.depth();
        for child in cap.children() {
            let sub = chain.child(child.id())?;
            deepest = deepest.max(walk(&child, &sub)?);
        }
        Ok(deepest)
    }
    walk(cap, &ParentChain::root(cap.id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn child_of_an_ancestor_is_refused() {
        let chain = ParentChain::root("skill").child("github").unwrap();
        assert_eq!(chain.depth(), 2);
        let err = chain.child("skill").unwrap_err();
        assert_eq!(err.chain, ["skill", "github", "skill"]);
        assert_eq!(
            err.to_string(),
            "circular composition: skill -> github -> skill"
        );
    }
}
