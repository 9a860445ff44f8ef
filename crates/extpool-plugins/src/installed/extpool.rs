//! What extpool installed itself (`extpool plugins add`): the records of
//! its store's lock file, each read from its folder in the store in the
//! format recorded, enabled as recorded.

use super::{Host, InstalledPlugin};
use crate::diag::{Diagnostic, DiagnosticKind};
use crate::plugin::ReadOptions;
use crate::store::Store;

/// Every plugin of `store`, enabled or not.
pub fn installed(store: &Store, opts: &ReadOptions) -> (Vec<InstalledPlugin>, Vec<Diagnostic>) {
    let records = match store.records() {
        Ok(r) => r,
        Err(e) => {
            return (
                Vec::new(),
                vec![Diagnostic::error(
                    DiagnosticKind::HostRecord,
                    &store.lock_file(),
                    format!("{e}; no plugin extpool installed is read"),
                )],
            );
        }
    };
    let mut out = Vec::new();
    for record in records.into_iter().take(opts.limits.max_plugins_per_root) {
        let path = store.path_of(&record);
        let mut item = InstalledPlugin {
            host: Host::Extpool,
            id: record.name.clone(),
            scope: "user".into(),
            install_path: path.clone(),
            enabled: record.enabled,
            enabled_by: format!(
                "{} in extpool's lock record {}",
                if record.enabled {
                    "enabled"
                } else {
                    "disabled"
                },
                store.lock_file().display()
            ),
            plugin: None,
            diagnostics: Vec::new(),
        };
        match crate::read::read_plugin(&path, Some(record.format), opts) {
            Ok(plugin) => item.plugin = Some(plugin),
            Err(r) => item.diagnostics = r.diagnostics,
        }
        out.push(item);
    }
    (out, Vec::new())
}
