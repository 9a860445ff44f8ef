//! [`NameIndex`]: name → slot lookups that never copy a name.
//!
//! A revision already owns every name (in its tool table); the index keeps
//! only `(hash, slot)` pairs and compares the candidate's name through a
//! resolver, so publishing 10 000 tools does not allocate 20 000 keys.
//! Hashing is std's SipHash with per-process random keys, so a server
//! cannot flood one bucket with crafted names.

use std::hash::{BuildHasher, RandomState};

use hashbrown::HashTable;

/// A table from names to slots of type `S`.
#[derive(Debug, Clone)]
pub(crate) struct NameIndex<S> {
    state: RandomState,
    table: HashTable<(u64, S)>,
}

impl<S: Copy> NameIndex<S> {
    /// An index sized for `n` names.
    pub(crate) fn with_capacity(n: usize) -> Self {
        Self {
            state: RandomState::new(),
            table: HashTable::with_capacity(n),
        }
    }

    fn hash(&self, name: &str) -> u64 {
        self.state.hash_one(name)
    }

    /// The slot of `name`; `name_of` gives the name a slot stands for.
    pub(crate) fn get<'a>(&self, name: &str, name_of: impl Fn(S) -> &'a str) -> Option<S> {
        let hash = self.hash(name);
        self.table
            .find(hash, |(h, s)| *h == hash && name_of(*s) == name)
            .map(|(_, s)| *s)
    }

    /// Adds `name` → `slot` unless the name is present; true when added.
    pub(crate) fn insert<'a>(
        &mut self,
        name: &str,
        slot: S,
        name_of: impl Fn(S) -> &'a str,
    ) -> bool {
        let hash = self.hash(name);
        if self
            .table
            .find(hash, |(h, s)| *h == hash && name_of(*s) == name)
            .is_some()
        {
            return false;
        }
        self.table.insert_unique(hash, (hash, slot), |(h, _)| *h);
        true
    }

    /// Number of names.
    pub(crate) fn len(&self) -> usize {
        self.table.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_through_the_owner_and_refuses_duplicates() {
        let names = ["a", "b", "mcp__x__y"];
        let name_of = |i: usize| names[i];
        let mut index = NameIndex::with_capacity(4);
        for (i, name) in names.iter().enumerate() {
            assert!(index.insert(name, i, name_of));
        }
        assert!(!index.insert("b", 1, name_of));
        assert_eq!(index.len(), 3);
        assert_eq!(index.get("mcp__x__y", name_of), Some(2));
        assert_eq!(index.get("c", name_of), None);
    }
}
