//! Versioned, forward-only schema migrations, applied when a store opens.
//!
//! All pending migrations run in one transaction under a lock every opener
//! takes first (SQLite's write lock, PostgreSQL's advisory lock), so two
//! processes opening one store at once migrate it once: the second waits,
//! then finds nothing to do. A store whose version is newer than this
//! build's is refused, untouched.

use sqlx::{Connection, Executor, PgConnection, SqliteConnection};

use crate::error::{StateError, masked_detail};
use crate::location::StoreUrl;
use crate::sql::{self, Dialect};

/// The schema version this build writes and understands.
pub const SCHEMA_VERSION: i64 = 4;

/// One step of the schema.
struct Migration {
    version: i64,
    description: &'static str,
    sql: &'static str,
}

/// Every migration, in order; append, never edit.
const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        description: "sessions, per-session servers, name authority",
        sql: sql::V1,
    },
    Migration {
        version: 2,
        description: "replicas, session holders, resumable MCP sessions",
        sql: sql::V2,
    },
    Migration {
        version: 3,
        description: "session and MCP session owners, API keys",
        sql: sql::V3,
    },
    Migration {
        version: 4,
        description: "rate buckets shared by replicas",
        sql: sql::V4,
    },
];

/// Brings the store to [`SCHEMA_VERSION`]; returns the versions applied.
macro_rules! migrate_body {
    ($conn:expr, $d:expr, $url:expr) => {{
        let url: &StoreUrl = $url;
        let d: &Dialect = $d;
        let open_err = |e: sqlx::Error| StateError::Open {
            url: url.masked(),
            detail: masked_detail(&e),
        };
        let mut tx = $conn.begin_with(d.begin_write).await.map_err(open_err)?;
        if let Some(lock) = d.lock_migrations {
            sqlx::query(lock)
                .execute(&mut *tx)
                .await
                .map_err(open_err)?;
        }
        tx.execute(sql::SCHEMA_TABLE).await.map_err(open_err)?;
        let current: Option<i64> = sqlx::query_scalar("SELECT MAX(version) FROM extpool_schema")
            .fetch_one(&mut *tx)
            .await
            .map_err(open_err)?;
        let current = current.unwrap_or(0);
        if current > SCHEMA_VERSION {
            return Err(StateError::SchemaTooNew {
                url: url.masked(),
                found: current,
                supported: SCHEMA_VERSION,
            });
        }
        let mut applied = Vec::new();
        for m in MIGRATIONS {
            if m.version <= current {
                continue;
            }
            let failed = |e: sqlx::Error| StateError::Migrate {
                url: url.masked(),
                version: m.version,
                description: m.description,
                detail: masked_detail(&e),
            };
            tx.execute(m.sql).await.map_err(failed)?;
            sqlx::query(
                "INSERT INTO extpool_schema (version, description, applied_at_ms) \
                 VALUES ($1, $2, $3)",
            )
            .bind(m.version)
            .bind(m.description)
            .bind(crate::store::now_ms())
            .execute(&mut *tx)
            .await
            .map_err(failed)?;
            applied.push(m.version);
        }
        tx.commit().await.map_err(open_err)?;
        for v in &applied {
            tracing::info!(store = %url, version = v, "state store migrated");
        }
        Ok(applied)
    }};
}

/// Migrates an SQLite store.
pub(crate) async fn sqlite(
    conn: &mut SqliteConnection,
    url: &StoreUrl,
) -> Result<Vec<i64>, StateError> {
    migrate_body!(conn, &sql::SQLITE, url)
}

/// Migrates a PostgreSQL store.
pub(crate) async fn postgres(
    conn: &mut PgConnection,
    url: &StoreUrl,
) -> Result<Vec<i64>, StateError> {
    migrate_body!(conn, &sql::POSTGRES, url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_consecutive_and_end_at_the_current_one() {
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(m.version, i as i64 + 1);
        }
        assert_eq!(MIGRATIONS.last().map(|m| m.version), Some(SCHEMA_VERSION));
    }
}
