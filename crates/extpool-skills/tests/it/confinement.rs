//! `skill://` reads: supporting files, binary content, the size cap, and
//! every way of trying to read outside the skill directory.

use extpool_core::{ExtensionError, ResourceBody, SkillResource};
use extpool_skills::{DiscoveryConfig, SkillManagerCap};

use crate::support::write_skill;

struct Fixture {
    _tmp: tempfile::TempDir,
    root: std::path::PathBuf,
    cap: SkillManagerCap,
}

fn fixture(max_file_bytes: u64) -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("skills");
    write_skill(
        &root,
        "pdf",
        "pdf",
        "PDF tools",
        "Read references/forms.md.\n",
    );
    let dir = root.join("pdf");
    std::fs::create_dir_all(dir.join("references")).unwrap();
    std::fs::create_dir_all(dir.join("assets")).unwrap();
    std::fs::create_dir_all(dir.join("scripts")).unwrap();
    std::fs::write(dir.join("references/forms.md"), "# Forms\n").unwrap();
    std::fs::write(dir.join("references/with space.md"), "spaced\n").unwrap();
    std::fs::write(dir.join("scripts/extract.py"), "print('hi')\n").unwrap();
    std::fs::write(
        dir.join("assets/logo.png"),
        [0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0],
    )
    .unwrap();
    std::fs::write(dir.join("assets/big.txt"), "z".repeat(2048)).unwrap();
    std::fs::write(tmp.path().join("secret.txt"), "top secret").unwrap();
    write_skill(&root, "other", "other", "Another skill", "");
    std::fs::write(root.join("other/private.md"), "other's file").unwrap();
    let cap = SkillManagerCap::builder("skills")
        .discovery(DiscoveryConfig::with_paths([&root]))
        .watch(false)
        .max_file_bytes(max_file_bytes)
        .build()
        .unwrap();
    Fixture {
        _tmp: tmp,
        root,
        cap,
    }
}

async fn text(cap: &SkillManagerCap, uri: &str) -> String {
    let c = cap.read_skill(uri).await.unwrap().unwrap();
    assert_eq!(c.uri, uri);
    c.as_text().unwrap().to_owned()
}

fn assert_denied(result: Result<Option<extpool_core::ResourceContent>, ExtensionError>, uri: &str) {
    match result {
        Err(ExtensionError::Denied(msg)) => {
            assert!(!msg.contains("top secret"), "{uri}: {msg}");
        }
        other => panic!("{uri}: expected a refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn supporting_files_are_served_with_mime_types() {
    let f = fixture(1024 * 1024);
    assert!(
        text(&f.cap, "skill://pdf/SKILL.md")
            .await
            .starts_with("---\nname: pdf")
    );
    assert!(
        text(&f.cap, "skill://pdf")
            .await
            .starts_with("---\nname: pdf")
    );
    assert_eq!(
        text(&f.cap, "skill://pdf/references/forms.md").await,
        "# Forms\n"
    );
    assert_eq!(
        text(&f.cap, "skill://pdf/./references//forms.md").await,
        "# Forms\n"
    );
    assert_eq!(
        text(&f.cap, "skill://pdf/references/with%20space.md").await,
        "spaced\n"
    );
    let py = f
        .cap
        .read_skill("skill://pdf/scripts/extract.py")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(py.mime_type.as_deref(), Some("text/x-python"));
    let png = f
        .cap
        .read_skill("skill://pdf/assets/logo.png")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(png.mime_type.as_deref(), Some("image/png"));
    assert!(matches!(png.body, ResourceBody::Blob(ref b) if b.len() == 10));
    // Unknown files and skills are "not here", not errors.
    assert!(
        f.cap
            .read_skill("skill://pdf/nope.md")
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        f.cap
            .read_skill("skill://nope/SKILL.md")
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        f.cap
            .read_skill("mcp://pdf/SKILL.md")
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn size_cap_and_directories() {
    let f = fixture(1024);
    assert!(matches!(
        f.cap.read_skill("skill://pdf/assets/big.txt").await,
        Err(ExtensionError::InvalidArgument(msg)) if msg.contains("2048 bytes")
    ));
    assert!(matches!(
        f.cap.read_skill("skill://pdf/references").await,
        Err(ExtensionError::InvalidArgument(_))
    ));
}

#[tokio::test]
async fn traversal_in_every_spelling_is_refused() {
    let f = fixture(1024 * 1024);
    for uri in [
        "skill://pdf/../secret.txt",
        "skill://pdf/references/../../secret.txt",
        "skill://pdf/%2e%2e/secret.txt",
        "skill://pdf/.%2E/secret.txt",
        "skill://pdf/references%2F..%2F..%2Fsecret.txt",
        "skill://pdf/..%2Fother/private.md",
        "skill://pdf/a\\..\\..\\secret.txt",
        "skill://pdf//etc/passwd",
        "skill://pdf/%2Fetc%2Fpasswd",
        "skill://pdf/C:/Windows/win.ini",
        "skill://pdf/x%00.md",
        "skill://../secret.txt",
    ] {
        assert_denied(f.cap.read_skill(uri).await, uri);
    }
}

#[cfg(unix)]
#[tokio::test]
async fn symlinks_resolving_outside_the_skill_are_refused() {
    use std::os::unix::fs::symlink;
    let f = fixture(1024 * 1024);
    let dir = f.root.join("pdf");
    let secret = f.root.parent().unwrap().join("secret.txt");
    symlink(&secret, dir.join("references/leak.md")).unwrap();
    symlink(f.root.parent().unwrap(), dir.join("up")).unwrap();
    symlink(f.root.join("other"), dir.join("sibling")).unwrap();
    symlink("forms.md", dir.join("references/alias.md")).unwrap();
    symlink("/etc/passwd", dir.join("passwd")).unwrap();
    for uri in [
        "skill://pdf/references/leak.md",
        "skill://pdf/up/secret.txt",
        "skill://pdf/sibling/private.md",
        "skill://pdf/passwd",
    ] {
        assert_denied(f.cap.read_skill(uri).await, uri);
    }
    // A symlink that stays inside is fine.
    assert_eq!(
        text(&f.cap, "skill://pdf/references/alias.md").await,
        "# Forms\n"
    );
}
