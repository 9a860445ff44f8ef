//! Helpers: fixture paths and files written into temporary folders.

use std::path::{Path, PathBuf};

/// A committed fixture folder.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// Writes `text` to `dir/rel`, creating folders.
pub fn write(dir: &Path, rel: &str, text: &str) -> PathBuf {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
    std::fs::write(&path, text).expect("write");
    path
}

/// Copies a folder tree.
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// Read options with data under `dir`.
pub fn opts(dir: &Path) -> extpool_plugins::ReadOptions {
    extpool_plugins::ReadOptions::new(dir.join("data"))
}

/// The kinds of a list of diagnostics, as codes.
pub fn kinds(diags: &[extpool_plugins::Diagnostic]) -> Vec<&'static str> {
    diags.iter().map(|d| d.kind.code()).collect()
}
