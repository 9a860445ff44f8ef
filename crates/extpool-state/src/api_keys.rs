//! Static API keys: named secrets a client presents instead of an identity
//! token, each either an operator's or an ordinary client's.
//!
//! A key's secret ([`API_KEY_PREFIX`] and 43 characters of URL-safe base64
//! of 32 random bytes) is returned once, when the key is created, and never
//! stored: the store keeps the hex SHA-256 of the whole secret
//! ([`api_key_digest`], the one rule), so a presented secret is found with
//! one indexed lookup and a copy of the store reveals no key. Creating or
//! revoking a key tells every replica ([`StoreEvent::ApiKeysChanged`]).

use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::error::{StateError, db_error, masked_detail};
use crate::events::StoreEvent;
use crate::limits::{MAX_API_KEY_SECRET_BYTES, check_api_key_name};
use crate::store::{StateStore, TxError, notify_others, now_ms, transaction, with_pool};

/// How every API key secret starts (so a leaked one is recognizable).
pub const API_KEY_PREFIX: &str = "epk_";

/// Random bytes in a secret (256 bits).
const SECRET_BYTES: usize = 32;

/// How often, at most, a key's last use is written (milliseconds), so a
/// key used by every request does not write on every request.
const TOUCH_RESOLUTION_MS: i64 = 60_000;

/// The digest an API key is stored and looked up by: the lowercase hex
/// SHA-256 of the whole secret (prefix included), as UTF-8.
pub fn api_key_digest(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// A key just created, with its secret: the only time the secret is known.
/// `Debug` never shows the secret.
#[derive(Clone, PartialEq, Eq)]
pub struct NewApiKey {
    /// Its name.
    pub name: String,
    /// The secret to hand to its holder (`epk_…`); not kept anywhere.
    pub secret: String,
    /// True for an operator's key.
    pub operator: bool,
    /// When it was created (Unix milliseconds).
    pub created_at_ms: i64,
}

impl fmt::Debug for NewApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NewApiKey")
            .field("name", &self.name)
            .field("secret", &"<redacted>")
            .field("operator", &self.operator)
            .field("created_at_ms", &self.created_at_ms)
            .finish()
    }
}

/// An API key as stored: never its secret, nor its digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ApiKeyInfo {
    /// Its name.
    pub name: String,
    /// True for an operator's key.
    pub operator: bool,
    /// When it was created (Unix milliseconds).
    pub created_at_ms: i64,
    /// When it was last used (Unix milliseconds, written at most once a
    /// minute), if it was.
    pub last_used_ms: Option<i64>,
}

/// The columns of an [`ApiKeyInfo`], in its fields' order.
const INFO_COLUMNS: &str = "name, operator, created_at_ms, last_used_ms";

type InfoRow = (String, bool, i64, Option<i64>);

fn info((name, operator, created_at_ms, last_used_ms): InfoRow) -> ApiKeyInfo {
    ApiKeyInfo {
        name,
        operator,
        created_at_ms,
        last_used_ms,
    }
}

/// A fresh secret for key `name`.
fn new_secret(name: &str) -> Result<String, StateError> {
    let mut bytes = [0u8; SECRET_BYTES];
    getrandom::fill(&mut bytes).map_err(|e| StateError::NoRandomness {
        name: name.to_owned(),
        detail: e.to_string(),
    })?;
    Ok(format!("{API_KEY_PREFIX}{}", URL_SAFE_NO_PAD.encode(bytes)))
}

impl StateStore {
    /// Creates API key `name` (an operator's when `operator`) with a fresh
    /// random secret, returned here and never again. Refused, writing
    /// nothing, when the name breaks the rule of names (1 to 64 of
    /// `A-Z a-z 0-9 _ . -`, not `.` or `..`) or a key has it already.
    pub async fn create_api_key(
        &self,
        name: &str,
        operator: bool,
    ) -> Result<NewApiKey, StateError> {
        check_api_key_name(name)?;
        let secret = new_secret(name)?;
        let digest = api_key_digest(&secret);
        let now = now_ms();
        let event = StoreEvent::ApiKeysChanged;
        transaction("create API key", None, || async {
            with_pool!(self, |pool, d| {
                let mut tx = pool.begin_with(d.begin_write).await?;
                let inserted = sqlx::query(
                    "INSERT INTO api_keys (name, digest, operator, created_at_ms, last_used_ms) \
                     VALUES ($1, $2, $3, $4, NULL) ON CONFLICT (name) DO NOTHING",
                )
                .bind(name)
                .bind(digest.as_str())
                .bind(operator)
                .bind(now)
                .execute(&mut *tx)
                .await?
                .rows_affected();
                if inserted == 0 {
                    return Err(TxError::State(StateError::ApiKeyExists {
                        name: name.to_owned(),
                    }));
                }
                notify_others!(self, tx, d, &event);
                tx.commit().await?;
                Ok(())
            })
        })
        .await?;
        tracing::info!(api_key = name, operator, "API key created");
        self.bus.publish(event);
        Ok(NewApiKey {
            name: name.to_owned(),
            secret,
            operator,
            created_at_ms: now,
        })
    }

    /// Every API key, sorted by name (bytewise, the same on both backends).
    pub async fn api_keys(&self) -> Result<Vec<ApiKeyInfo>, StateError> {
        let sql = format!("SELECT {INFO_COLUMNS} FROM api_keys");
        let rows: Vec<InfoRow> = with_pool!(self, |pool, _d| {
            sqlx::query_as(&sql).fetch_all(pool).await
        })
        .map_err(|e| db_error("list API keys", None, &e))?;
        let mut keys: Vec<ApiKeyInfo> = rows.into_iter().map(info).collect();
        keys.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(keys)
    }

    /// Whether any API key exists (one indexed read): a loopback gateway
    /// takes a request without a key for an anonymous caller, not its
    /// operator, once there is one.
    pub async fn has_api_keys(&self) -> Result<bool, StateError> {
        let row: Option<(String,)> = with_pool!(self, |pool, _d| {
            sqlx::query_as("SELECT name FROM api_keys LIMIT 1")
                .fetch_optional(pool)
                .await
        })
        .map_err(|e| db_error("look for API keys", None, &e))?;
        Ok(row.is_some())
    }

    /// Revokes (deletes) API key `name`: its secret is found no more, on
    /// any replica. Returns whether it existed.
    pub async fn revoke_api_key(&self, name: &str) -> Result<bool, StateError> {
        if check_api_key_name(name).is_err() {
            return Ok(false);
        }
        let event = StoreEvent::ApiKeysChanged;
        let deleted = transaction("revoke API key", None, || async {
            with_pool!(self, |pool, d| {
                let mut tx = pool.begin_with(d.begin_write).await?;
                let deleted = sqlx::query("DELETE FROM api_keys WHERE name = $1")
                    .bind(name)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                if deleted > 0 {
                    notify_others!(self, tx, d, &event);
                }
                tx.commit().await?;
                Ok::<_, TxError>(deleted > 0)
            })
        })
        .await?;
        if deleted {
            tracing::info!(api_key = name, "API key revoked");
            self.bus.publish(event);
        }
        Ok(deleted)
    }

    /// The API key whose secret is `secret`, found by its digest with one
    /// indexed lookup; `None` when no key has it (a secret longer than
    /// [`MAX_API_KEY_SECRET_BYTES`] is never one).
    pub async fn api_key_for(&self, secret: &str) -> Result<Option<ApiKeyInfo>, StateError> {
        if secret.len() > MAX_API_KEY_SECRET_BYTES {
            return Ok(None);
        }
        let digest = api_key_digest(secret);
        let sql = format!("SELECT {INFO_COLUMNS} FROM api_keys WHERE digest = $1");
        let row: Option<InfoRow> = with_pool!(self, |pool, _d| {
            sqlx::query_as(&sql)
                .bind(digest.as_str())
                .fetch_optional(pool)
                .await
        })
        .map_err(|e| db_error("look up API key", None, &e))?;
        Ok(row.map(info))
    }

    /// Records that API key `name` was used now (written at most once a
    /// minute per key). Best effort: a failure is logged (at debug), not
    /// returned, as it must never fail the request that used the key.
    pub async fn touch_api_key(&self, name: &str) {
        if check_api_key_name(name).is_err() {
            return;
        }
        let now = now_ms();
        let touched = with_pool!(self, |pool, _d| {
            sqlx::query(
                "UPDATE api_keys SET last_used_ms = $2 \
                 WHERE name = $1 AND (last_used_ms IS NULL OR last_used_ms <= $3)",
            )
            .bind(name)
            .bind(now)
            .bind(now.saturating_sub(TOUCH_RESOLUTION_MS))
            .execute(pool)
            .await
            .map(|_| ())
        });
        if let Err(e) = touched {
            tracing::debug!(api_key = name, error = %masked_detail(&e), "cannot record API key use");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_digest_is_the_hex_sha256_of_the_whole_secret() {
        assert_eq!(
            api_key_digest("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_ne!(api_key_digest("epk_a"), api_key_digest("a"));
    }

    #[test]
    fn secrets_are_prefixed_url_safe_and_fresh() {
        let a = new_secret("k").expect("secret");
        let b = new_secret("k").expect("secret");
        assert_ne!(a, b);
        let body = a.strip_prefix(API_KEY_PREFIX).expect("prefix");
        assert_eq!(body.len(), 43);
        assert!(
            body.bytes()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_')),
            "{a}"
        );
    }

    #[test]
    fn debug_never_shows_the_secret() {
        let key = NewApiKey {
            name: "ci".into(),
            secret: "epk_hunter2hunter2".into(),
            operator: true,
            created_at_ms: 1,
        };
        let shown = format!("{key:?} {key:#?}");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("\"ci\""), "{shown}");
    }
}
