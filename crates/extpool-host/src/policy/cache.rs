//! The tables one policy compiled, by what they were compiled from: the
//! revision (by identity), the scope when a filter reads it, the health
//! epoch when degraded capabilities are left out. Bounded, the most
//! recently used first; a table whose revision nobody else holds any more
//! (a later one was published) is dropped at the next compile.

use std::sync::Arc;

use extpool_catalog::CatalogRevision;
use extpool_core::Scope;
use parking_lot::Mutex;

use super::ToolTable;

/// Most tables one policy keeps (a revision per open session overlay,
/// a scope per filtered agent).
const KEPT: usize = 32;

/// What a table was compiled from, besides its revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Key {
    /// Only when a filter reads the scope.
    pub scope: Option<Scope>,
    /// Only when degraded capabilities are left out.
    pub health: Option<u64>,
}

/// The compiled tables of one policy.
#[derive(Default)]
pub(crate) struct Tables {
    entries: Mutex<Vec<(Key, Arc<ToolTable>)>>,
}

impl Tables {
    /// The table of `revision` for `key`, compiled by `compile` on a miss
    /// (outside the lock: two views missing at once may both compile; the
    /// first kept wins).
    pub(crate) fn get(
        &self,
        revision: &Arc<CatalogRevision>,
        key: Key,
        compile: impl FnOnce() -> ToolTable,
    ) -> Arc<ToolTable> {
        let found = |entries: &[(Key, Arc<ToolTable>)]| {
            entries
                .iter()
                .position(|(k, t)| Arc::ptr_eq(&t.revision, revision) && *k == key)
        };
        {
            let mut entries = self.entries.lock();
            if let Some(i) = found(&entries) {
                if i > 0 {
                    let entry = entries.remove(i);
                    entries.insert(0, entry);
                }
                return entries[0].1.clone();
            }
        }
        let table = Arc::new(compile());
        let mut entries = self.entries.lock();
        if let Some(i) = found(&entries) {
            return entries[i].1.clone();
        }
        // Nobody but its table holds a superseded revision.
        entries.retain(|(_, t)| Arc::strong_count(&t.revision) > 1);
        entries.insert(0, (key, table.clone()));
        entries.truncate(KEPT);
        table
    }
}
