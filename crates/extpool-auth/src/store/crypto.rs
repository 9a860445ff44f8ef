//! Sealing records: XChaCha20-Poly1305 with a random 192-bit nonce.
//!
//! A sealed file is `MAGIC ‖ key id (8) ‖ nonce (24) ‖ ciphertext+tag`.
//! The associated data binds the header, the profile and the record kind,
//! so a record copied onto another profile (or kind) fails to open just as
//! a flipped bit does. The key id (a hash of the key, not the key) tells
//! "sealed with another key" apart from "tampered with".

use chacha20poly1305::XChaCha20Poly1305;
use chacha20poly1305::aead::{Aead, Generate, KeyInit, Payload};
use sha2::Digest;

/// File magic and format version.
pub(crate) const MAGIC: &[u8; 12] = b"EXTPOOLCRED1";
const KEY_ID_LEN: usize = 8;
const NONCE_LEN: usize = 24;
const HEADER_LEN: usize = MAGIC.len() + KEY_ID_LEN + NONCE_LEN;

/// A 256-bit store key. `Debug` shows only its id.
#[derive(Clone)]
pub struct StoreKey([u8; 32]);

impl std::fmt::Debug for StoreKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StoreKey({})", hex::encode(self.id()))
    }
}

/// Why a sealed record could not be opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    /// Not a sealed record (wrong magic, too short).
    #[error("not an extpool credential record")]
    Format,
    /// Sealed with another key.
    #[error("sealed with another key (key id {found}, this store's key is {expected})")]
    WrongKey {
        /// Id of the key in the file.
        found: String,
        /// Id of the store's key.
        expected: String,
    },
    /// Authentication failed: the file was modified or belongs elsewhere.
    #[error("authentication failed: the record was modified or belongs to another profile")]
    Tampered,
}

impl StoreKey {
    /// A fresh random key from the OS.
    pub fn generate() -> Result<Self, std::io::Error> {
        <[u8; 32]>::try_generate()
            .map(Self)
            .map_err(|e| std::io::Error::other(format!("no randomness from the OS: {e}")))
    }

    /// Wraps raw key bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// The raw bytes (for the key file or keyring only).
    pub(crate) fn bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// A public identifier of the key: 8 bytes of a domain-separated hash.
    pub fn id(&self) -> [u8; KEY_ID_LEN] {
        let digest = sha2::Sha256::new()
            .chain_update(b"extpool credential key id\0")
            .chain_update(self.0)
            .finalize();
        let mut id = [0; KEY_ID_LEN];
        id.copy_from_slice(&digest[..KEY_ID_LEN]);
        id
    }

    fn cipher(&self) -> XChaCha20Poly1305 {
        XChaCha20Poly1305::new(&self.0.into())
    }
}

fn aad(header: &[u8], profile: &str, kind: &str) -> Vec<u8> {
    let mut aad = Vec::with_capacity(header.len() + profile.len() + kind.len() + 2);
    aad.extend_from_slice(header);
    aad.extend_from_slice(profile.as_bytes());
    aad.push(0);
    aad.extend_from_slice(kind.as_bytes());
    aad
}

/// Encrypts `plaintext` for `(profile, kind)`.
pub fn seal(
    key: &StoreKey,
    profile: &str,
    kind: &str,
    plaintext: &[u8],
) -> Result<Vec<u8>, std::io::Error> {
    let nonce = <[u8; NONCE_LEN]>::try_generate()
        .map_err(|e| std::io::Error::other(format!("no randomness from the OS: {e}")))?;
    let mut out = Vec::with_capacity(HEADER_LEN + plaintext.len() + 16);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&key.id());
    out.extend_from_slice(&nonce);
    let aad = aad(&out[..MAGIC.len() + KEY_ID_LEN], profile, kind);
    let sealed = key
        .cipher()
        .encrypt(
            &nonce.into(),
            Payload {
                msg: plaintext,
                aad: &aad,
            },
        )
        .map_err(|_| std::io::Error::other("encryption failed"))?;
    out.extend_from_slice(&sealed);
    Ok(out)
}

/// Decrypts a sealed record of `(profile, kind)`.
pub fn open(
    key: &StoreKey,
    profile: &str,
    kind: &str,
    sealed: &[u8],
) -> Result<Vec<u8>, OpenError> {
    if sealed.len() < HEADER_LEN + 16 || &sealed[..MAGIC.len()] != MAGIC {
        return Err(OpenError::Format);
    }
    let key_id = &sealed[MAGIC.len()..MAGIC.len() + KEY_ID_LEN];
    if key_id != key.id() {
        return Err(OpenError::WrongKey {
            found: hex::encode(key_id),
            expected: hex::encode(key.id()),
        });
    }
    let mut nonce = [0u8; NONCE_LEN];
    nonce.copy_from_slice(&sealed[MAGIC.len() + KEY_ID_LEN..HEADER_LEN]);
    let aad = aad(&sealed[..MAGIC.len() + KEY_ID_LEN], profile, kind);
    key.cipher()
        .decrypt(
            &nonce.into(),
            Payload {
                msg: &sealed[HEADER_LEN..],
                aad: &aad,
            },
        )
        .map_err(|_| OpenError::Tampered)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> StoreKey {
        StoreKey::generate().expect("key")
    }

    #[test]
    fn round_trip() {
        let k = key();
        let sealed = seal(&k, "github", "grant", b"{\"a\":1}").expect("seal");
        assert!(!sealed.windows(7).any(|w| w == b"{\"a\":1}"));
        assert_eq!(
            open(&k, "github", "grant", &sealed).expect("open"),
            b"{\"a\":1}"
        );
    }

    #[test]
    fn every_flipped_byte_is_detected() {
        let k = key();
        let sealed = seal(&k, "p", "grant", b"secret record").expect("seal");
        for i in MAGIC.len() + KEY_ID_LEN..sealed.len() {
            let mut bad = sealed.clone();
            bad[i] ^= 0x01;
            assert_eq!(
                open(&k, "p", "grant", &bad),
                Err(OpenError::Tampered),
                "byte {i}"
            );
        }
    }

    #[test]
    fn bound_to_profile_kind_and_key() {
        let k = key();
        let sealed = seal(&k, "a", "grant", b"x").expect("seal");
        assert_eq!(open(&k, "b", "grant", &sealed), Err(OpenError::Tampered));
        assert_eq!(
            open(&k, "a", "registration", &sealed),
            Err(OpenError::Tampered)
        );
        assert!(matches!(
            open(&key(), "a", "grant", &sealed),
            Err(OpenError::WrongKey { .. })
        ));
        assert_eq!(open(&k, "a", "grant", b"short"), Err(OpenError::Format));
    }
}
