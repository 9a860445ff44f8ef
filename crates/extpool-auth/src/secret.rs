//! [`Secret`]: a string that never shows itself.
//!
//! Access tokens, refresh tokens, client secrets and authorization codes
//! live in this type from the moment they are parsed. `Debug` and `Display`
//! print `<redacted>`; the value is reachable only through
//! [`Secret::expose`], which names every place a secret leaves the process.

use serde::{Deserialize, Serialize};

/// A secret string (token, client secret, code); redacted in `Debug`/`Display`.
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The raw value, for the one place it is sent (a header, a form field,
    /// the encrypted store).
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// A short, non-reversible fingerprint (for logs and tests that must
    /// tell two secrets apart without printing either).
    pub fn fingerprint(&self) -> String {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(self.0.as_bytes());
        hex::encode(&digest[..6])
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

impl std::fmt::Display for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_prints_its_value() {
        let s = Secret::new("tok-123");
        assert_eq!(format!("{s:?} {s}"), "<redacted> <redacted>");
        assert_eq!(s.expose(), "tok-123");
        assert_ne!(s.fingerprint(), Secret::new("tok-124").fingerprint());
        assert!(!s.fingerprint().contains("tok"));
    }
}
