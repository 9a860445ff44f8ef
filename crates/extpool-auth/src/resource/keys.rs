//! An issuer's published signing keys, as the verifier uses them: each
//! key with the algorithms it may verify. Symmetric keys (`kty: oct`) and
//! encryption keys are never used — a JWKS is public, so a "secret" in it
//! is no secret — and a key that cannot be read is left out alone.

use std::collections::HashMap;
use std::time::Instant;

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, KeyAlgorithm, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};

use super::MAX_KEYS;

/// One key and the algorithms it verifies.
pub(crate) struct VerifyKey {
    /// The key.
    pub key: DecodingKey,
    /// The algorithms a token signed with it may name (never empty).
    pub algorithms: Vec<Algorithm>,
}

/// The keys of one JWKS fetch.
pub(crate) struct KeySet {
    /// Keys by `kid`.
    pub by_id: HashMap<String, VerifyKey>,
    /// Keys without a `kid`.
    pub unnamed: Vec<VerifyKey>,
    /// When they were fetched.
    pub fetched: Instant,
    /// Keys left out, each with why (logged once per fetch).
    pub skipped: Vec<String>,
}

const RSA: &[Algorithm] = &[
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
];

/// The algorithms `jwk` verifies: the one its `alg` names, or those its key
/// type allows; `Err` says why it is not used.
fn algorithms(jwk: &Jwk) -> Result<Vec<Algorithm>, String> {
    if matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption)) {
        return Err("an encryption key (use: enc)".into());
    }
    let by_type: Vec<Algorithm> = match &jwk.algorithm {
        AlgorithmParameters::OctetKey(_) => {
            return Err("a symmetric key (kty: oct), which a public key set cannot hold".into());
        }
        AlgorithmParameters::RSA(_) => RSA.to_vec(),
        AlgorithmParameters::EllipticCurve(p) => match p.curve {
            EllipticCurve::P256 => vec![Algorithm::ES256],
            EllipticCurve::P384 => vec![Algorithm::ES384],
            ref other => return Err(format!("the curve {other:?} is not supported")),
        },
        AlgorithmParameters::OctetKeyPair(p) => match p.curve {
            EllipticCurve::Ed25519 => vec![Algorithm::EdDSA],
            ref other => return Err(format!("the curve {other:?} is not supported")),
        },
    };
    let Some(named) = jwk.common.key_algorithm else {
        return Ok(by_type);
    };
    let signing = match named {
        KeyAlgorithm::HS256 | KeyAlgorithm::HS384 | KeyAlgorithm::HS512 => None,
        KeyAlgorithm::ES256 => Some(Algorithm::ES256),
        KeyAlgorithm::ES384 => Some(Algorithm::ES384),
        KeyAlgorithm::RS256 => Some(Algorithm::RS256),
        KeyAlgorithm::RS384 => Some(Algorithm::RS384),
        KeyAlgorithm::RS512 => Some(Algorithm::RS512),
        KeyAlgorithm::PS256 => Some(Algorithm::PS256),
        KeyAlgorithm::PS384 => Some(Algorithm::PS384),
        KeyAlgorithm::PS512 => Some(Algorithm::PS512),
        KeyAlgorithm::EdDSA => Some(Algorithm::EdDSA),
        _ => None,
    };
    match signing {
        Some(alg) if by_type.contains(&alg) => Ok(vec![alg]),
        _ => Err(format!(
            "its alg {named:?} is no signature algorithm of its key type"
        )),
    }
}

impl KeySet {
    /// The usable keys of a JWKS document (`{"keys": [...]}`); at most
    /// [`MAX_KEYS`] are read.
    pub fn from_document(document: &serde_json::Value) -> Result<Self, String> {
        let Some(keys) = document.get("keys").and_then(serde_json::Value::as_array) else {
            return Err("the document has no \"keys\" array".into());
        };
        let mut set = KeySet {
            by_id: HashMap::new(),
            unnamed: Vec::new(),
            fetched: Instant::now(),
            skipped: Vec::new(),
        };
        if keys.len() > MAX_KEYS {
            set.skipped.push(format!(
                "{} keys past the first {MAX_KEYS}",
                keys.len() - MAX_KEYS
            ));
        }
        for (i, value) in keys.iter().take(MAX_KEYS).enumerate() {
            let kid = value.get("kid").and_then(serde_json::Value::as_str);
            let name = kid.map_or_else(|| format!("key {i}"), |k| format!("key {k:?}"));
            let jwk: Jwk = match serde_json::from_value(value.clone()) {
                Ok(jwk) => jwk,
                Err(e) => {
                    set.skipped.push(format!("{name}: cannot be read: {e}"));
                    continue;
                }
            };
            let algorithms = match algorithms(&jwk) {
                Ok(a) => a,
                Err(why) => {
                    set.skipped.push(format!("{name}: {why}"));
                    continue;
                }
            };
            let key = match DecodingKey::from_jwk(&jwk) {
                Ok(key) => key,
                Err(e) => {
                    set.skipped.push(format!("{name}: not a valid key: {e}"));
                    continue;
                }
            };
            let verify = VerifyKey { key, algorithms };
            match jwk.common.key_id {
                Some(kid) => {
                    set.by_id.insert(kid, verify);
                }
                None => set.unnamed.push(verify),
            }
        }
        if set.by_id.is_empty() && set.unnamed.is_empty() {
            return Err(format!(
                "no usable signing key ({})",
                if set.skipped.is_empty() {
                    "the set is empty".to_owned()
                } else {
                    set.skipped.join("; ")
                }
            ));
        }
        Ok(set)
    }

    /// The key a token names: by its `kid`, or without one the only key
    /// that verifies `alg`. `None`: no such key in this set.
    pub fn find(&self, kid: Option<&str>, alg: Algorithm) -> Option<&VerifyKey> {
        match kid {
            Some(kid) => self.by_id.get(kid),
            None => {
                let mut fitting = self
                    .by_id
                    .values()
                    .chain(self.unnamed.iter())
                    .filter(|k| k.algorithms.contains(&alg));
                let first = fitting.next();
                if fitting.next().is_some() {
                    return None;
                }
                first
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A real RSA public key's components (2048 bits).
    const N: &str = "sXchDaQebHnPiGvyDOAT4saGEUetSyo9MKLOoWFsueri23bOdgWp4Dy1WlUzewbgBHod5pcM9H95GQRV3JDXboIRROSBigeC5yjU1hGzHHyXss8UDprecbAYxknTcQkhslANGRUZmdTOQ5qTRsLAt6BTYuyvVRdhS8exSZEy_c4gs_7svlJJQ4H9_NxsiIoLwAEk7-Q3UXERGYw_75IDrGA84-lA_-Ct4eTlXHBIY2EaV7t7LjJaynVJCpkv4LKjTTAumiGUIuQhrNhZLuF_RJLqHpM2kgWFLU7-VTdL1VbC2tejvcI2BlMkEpk1BzBZI0KQB0GaDWFLN-aEAw3vRw";
    const E: &str = "AQAB";

    fn rsa(extra: serde_json::Value) -> serde_json::Value {
        let mut key = json!({"kty": "RSA", "n": N, "e": E});
        key.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        key
    }

    #[test]
    fn signing_keys_are_kept_and_symmetric_or_encryption_keys_left_out() {
        let doc = json!({"keys": [
            rsa(json!({"kid": "a", "alg": "RS256", "use": "sig"})),
            rsa(json!({"kid": "b"})),
            rsa(json!({"kid": "enc", "use": "enc"})),
            {"kty": "oct", "kid": "hmac", "k": "c2VjcmV0"},
            rsa(json!({"kid": "lie", "alg": "HS256"})),
            {"kty": "RSA", "kid": "broken", "n": "%%%", "e": "AQAB"},
            {"kty": "nonsense", "kid": "odd"},
        ]});
        let set = KeySet::from_document(&doc).unwrap();
        let mut kept: Vec<&String> = set.by_id.keys().collect();
        kept.sort();
        assert_eq!(kept, vec!["a", "b"]);
        assert_eq!(set.by_id["a"].algorithms, vec![Algorithm::RS256]);
        assert_eq!(set.by_id["b"].algorithms, RSA.to_vec());
        assert_eq!(set.skipped.len(), 5, "{:?}", set.skipped);
        assert!(
            set.skipped.iter().any(|s| s.contains("symmetric")),
            "{:?}",
            set.skipped
        );
    }

    #[test]
    fn a_token_without_kid_finds_the_only_fitting_key_or_none() {
        let one = KeySet::from_document(&json!({"keys": [rsa(json!({"alg": "RS256"}))]})).unwrap();
        assert!(one.find(None, Algorithm::RS256).is_some());
        assert!(one.find(None, Algorithm::ES256).is_none());
        assert!(one.find(Some("x"), Algorithm::RS256).is_none());
        let two = KeySet::from_document(&json!({"keys": [
            rsa(json!({"kid": "1"})), rsa(json!({"kid": "2"}))
        ]}))
        .unwrap();
        assert!(two.find(None, Algorithm::RS256).is_none());
        assert!(two.find(Some("2"), Algorithm::RS256).is_some());
    }

    #[test]
    fn a_set_with_no_usable_key_says_why() {
        let e = KeySet::from_document(&json!({"keys": [{"kty": "oct", "k": "eA"}]}))
            .err()
            .unwrap();
        assert!(
            e.contains("no usable signing key") && e.contains("symmetric"),
            "{e}"
        );
        assert!(KeySet::from_document(&json!({"nope": 1})).is_err());
        let many: Vec<_> = (0..200)
            .map(|i| rsa(json!({"kid": i.to_string()})))
            .collect();
        let set = KeySet::from_document(&json!({"keys": many})).unwrap();
        assert_eq!(set.by_id.len(), MAX_KEYS);
    }
}
