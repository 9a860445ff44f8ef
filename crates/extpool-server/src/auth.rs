//! The gateway's own bearer token: required on every MCP and metrics
//! request when one is set (always, on a non-loopback address), compared
//! in constant time, never logged.

use sha2::{Digest, Sha256};

/// A bearer token clients must present (`Authorization: Bearer <token>`).
#[derive(Clone)]
pub struct BearerToken {
    digest: [u8; 32],
}

impl std::fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BearerToken(…)")
    }
}

impl BearerToken {
    /// The token `secret` (kept only as its SHA-256 digest).
    pub fn new(secret: &str) -> Self {
        Self {
            digest: Sha256::digest(secret.as_bytes()).into(),
        }
    }

    /// Whether an `Authorization` header value presents this token. The
    /// digests are compared in constant time, so neither the token's bytes
    /// nor its length leak through timing.
    pub fn accepts(&self, header: Option<&str>) -> bool {
        let Some(presented) = header.and_then(|h| {
            h.strip_prefix("Bearer ")
                .or_else(|| h.strip_prefix("bearer "))
        }) else {
            return false;
        };
        let digest: [u8; 32] = Sha256::digest(presented.trim().as_bytes()).into();
        digest
            .iter()
            .zip(self.digest.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_token_itself_is_accepted() {
        let token = BearerToken::new("s3cret");
        assert!(token.accepts(Some("Bearer s3cret")));
        assert!(!token.accepts(Some("Bearer s3cre")));
        assert!(!token.accepts(Some("Bearer s3cret2")));
        assert!(!token.accepts(Some("Basic s3cret")));
        assert!(!token.accepts(Some("s3cret")));
        assert!(!token.accepts(None));
        assert!(!format!("{token:?}").contains("s3cret"));
    }
}
