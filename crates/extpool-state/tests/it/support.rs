//! One store location per test, on either backend, plus raw SQL access
//! to check what the store wrote.

use extpool_state::{Limits, OpenOptions, SCHEMA_VERSION, StateStore, StoreUrl};
use std::sync::atomic::{AtomicUsize, Ordering};

use extpool_testkit::postgres::{PASSWORD, PgServer};
use sqlx::{Connection, PgConnection, SqliteConnection};

/// Where one test's store lives.
pub enum Fixture {
    /// A fresh SQLite file in a temporary directory (removed when dropped).
    Sqlite(tempfile::TempDir),
    /// A fresh database on the process's PostgreSQL server (removed with
    /// the server when the process exits).
    Postgres {
        /// The server.
        server: &'static PgServer,
        /// The test's database.
        db: String,
    },
}

impl Fixture {
    /// A fixture on `backend` (`"sqlite"` or `"postgres"`).
    pub async fn new(backend: &str) -> Fixture {
        match backend {
            "sqlite" => Fixture::Sqlite(tempfile::tempdir().expect("temp dir")),
            "postgres" => {
                static NEXT: AtomicUsize = AtomicUsize::new(0);
                let server = PgServer::shared();
                let db = format!("t{}", NEXT.fetch_add(1, Ordering::Relaxed));
                let mut c = PgConnection::connect(&server.url()).await.expect("connect");
                sqlx::raw_sql(&format!("CREATE DATABASE {db}"))
                    .execute(&mut c)
                    .await
                    .expect("create database");
                Fixture::Postgres { server, db }
            }
            other => panic!("unknown backend {other}"),
        }
    }

    /// The store URL, as given to `--state`.
    pub fn url(&self) -> String {
        match self {
            Fixture::Sqlite(dir) => format!("sqlite:{}", dir.path().join("state.db").display()),
            Fixture::Postgres { server, db } => server.url_with(db, PASSWORD),
        }
    }

    /// Opens a new handle (its own connection pool, as another replica would).
    pub async fn open(&self) -> StateStore {
        self.open_with(Limits::default()).await
    }

    /// [`Fixture::open`] with `limits`.
    pub async fn open_with(&self, limits: Limits) -> StateStore {
        let url: StoreUrl = self.url().parse().expect("url");
        StateStore::open(
            &url,
            OpenOptions {
                limits,
                ..OpenOptions::default()
            },
        )
        .await
        .expect("open store")
    }

    /// Runs `sql` (no result) on a connection of its own.
    pub async fn exec(&self, sql: &str) {
        match self {
            Fixture::Sqlite(_) => {
                let url = self.url().replacen("sqlite:", "sqlite://", 1);
                let mut c = SqliteConnection::connect(&url).await.expect("connect");
                sqlx::raw_sql(sql).execute(&mut c).await.expect(sql);
            }
            Fixture::Postgres { .. } => {
                let mut c = PgConnection::connect(&self.url()).await.expect("connect");
                sqlx::raw_sql(sql).execute(&mut c).await.expect(sql);
            }
        }
    }

    /// Makes the database refuse to save a grant of `name` (a trigger
    /// raising "simulated save failure"), as a failing disk or a lost
    /// connection would, in the middle of a transaction.
    pub async fn fail_saving(&self, name: &str) {
        let sql = match self {
            Fixture::Sqlite(_) => format!(
                "CREATE TRIGGER extpool_test_fail BEFORE INSERT ON session_grants \
                 WHEN NEW.name = '{name}' BEGIN SELECT RAISE(ABORT, 'simulated save failure'); END;"
            ),
            Fixture::Postgres { .. } => format!(
                "CREATE FUNCTION extpool_test_fail() RETURNS trigger LANGUAGE plpgsql AS $$ \
                 BEGIN IF NEW.name = '{name}' THEN RAISE EXCEPTION 'simulated save failure'; \
                 END IF; RETURN NEW; END $$; \
                 CREATE TRIGGER extpool_test_fail BEFORE INSERT ON session_grants \
                 FOR EACH ROW EXECUTE FUNCTION extpool_test_fail();"
            ),
        };
        self.exec(&sql).await;
    }

    /// Removes what [`Fixture::fail_saving`] installed.
    pub async fn stop_failing(&self) {
        self.exec(match self {
            Fixture::Sqlite(_) => "DROP TRIGGER extpool_test_fail",
            Fixture::Postgres { .. } => {
                "DROP TRIGGER extpool_test_fail ON session_grants; DROP FUNCTION extpool_test_fail();"
            }
        })
        .await;
    }

    /// Takes the store (opened at [`SCHEMA_VERSION`] and closed) back to
    /// schema `version`, as an extpool of that version left it: drops what
    /// every later version added and forgets that it was applied.
    pub async fn back_to_schema(&self, version: i64) {
        // Newest first; each entry undoes its version's migration.
        const UNDO: [(i64, &str); 3] = [
            (4, "DROP TABLE rate_buckets;"),
            (
                3,
                "DROP TABLE api_keys; DROP INDEX sessions_by_owner; \
                 ALTER TABLE sessions DROP COLUMN owner; \
                 ALTER TABLE mcp_sessions DROP COLUMN owner;",
            ),
            (
                2,
                "DROP TABLE mcp_sessions; DROP TABLE session_holders; DROP TABLE replicas; \
                 ALTER TABLE sessions DROP COLUMN revision_by;",
            ),
        ];
        assert_eq!(
            UNDO[0].0, SCHEMA_VERSION,
            "teach back_to_schema the newest version"
        );
        for (v, sql) in UNDO {
            if v > version {
                self.exec(sql).await;
            }
        }
        self.exec(&format!(
            "DELETE FROM extpool_schema WHERE version > {version}"
        ))
        .await;
        assert_eq!(
            self.scalar("SELECT MAX(version) FROM extpool_schema").await,
            version
        );
    }

    /// The one `BIGINT` value `sql` selects.
    pub async fn scalar(&self, sql: &str) -> i64 {
        match self {
            Fixture::Sqlite(_) => {
                let url = self.url().replacen("sqlite:", "sqlite://", 1);
                let mut c = SqliteConnection::connect(&url).await.expect("connect");
                sqlx::query_scalar(sql).fetch_one(&mut c).await.expect(sql)
            }
            Fixture::Postgres { .. } => {
                let mut c = PgConnection::connect(&self.url()).await.expect("connect");
                sqlx::query_scalar(sql).fetch_one(&mut c).await.expect(sql)
            }
        }
    }
}

/// Names `prefix0` … `prefix{n-1}`, as catalog names.
pub fn names(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("mcp__{prefix}__t{i}")).collect()
}
