//! `extpool api-keys …`: the static API keys of a gateway's state store.
//! A key is shown once, when it is made; the store keeps only its digest,
//! so a lost key is revoked and made again, never recovered.

use std::process::ExitCode;

use anyhow::{Result, bail};

use crate::cli::{ApiKeysArgs, ApiKeysCommand};
use crate::context::Ctx;

/// Runs `extpool api-keys …`.
pub async fn run(ctx: &mut Ctx, args: ApiKeysArgs) -> Result<ExitCode> {
    let url = super::serve::store_url(args.state.as_deref())?;
    // Every StateError names the store (masked) already: no second context.
    let store =
        extpool_state::StateStore::open(&url, extpool_state::OpenOptions::default()).await?;
    let done = match args.command {
        ApiKeysCommand::Create { name, operator } => {
            let key = store.create_api_key(&name, operator).await?;
            if ctx.global.json {
                ctx.out.json_value(&serde_json::json!({
                    "name": key.name,
                    "operator": key.operator,
                    "key": key.secret,
                    "created_at": extpool_host::core::time::rfc3339(time_of(key.created_at_ms)),
                }))?;
            } else {
                ctx.out.line(&key.secret)?;
                #[allow(clippy::print_stderr)]
                {
                    eprintln!(
                        "API key {:?}{} made in {url}; the line above is shown this once (only its digest is kept). Clients send it as Authorization: Bearer <key>.",
                        key.name,
                        if key.operator { " (an operator's)" } else { "" },
                    );
                }
            }
            ExitCode::SUCCESS
        }
        ApiKeysCommand::List => {
            let keys = store.api_keys().await?;
            if ctx.global.json {
                let rows: Vec<serde_json::Value> = keys
                    .iter()
                    .map(|k| {
                        serde_json::json!({
                            "name": k.name,
                            "operator": k.operator,
                            "created_at": extpool_host::core::time::rfc3339(time_of(k.created_at_ms)),
                            "last_used_at": k.last_used_ms.map(|ms| extpool_host::core::time::rfc3339(time_of(ms))),
                        })
                    })
                    .collect();
                ctx.out.json_value(&rows)?;
            } else if keys.is_empty() {
                ctx.out.line(format!(
                    "(no API keys in {url}; extpool api-keys create NAME)"
                ))?;
            } else {
                let rows: Vec<Vec<String>> = keys
                    .iter()
                    .map(|k| {
                        vec![
                            k.name.clone(),
                            if k.operator { "operator" } else { "" }.to_owned(),
                            extpool_host::core::time::rfc3339(time_of(k.created_at_ms)),
                            k.last_used_ms.map_or_else(
                                || "never".to_owned(),
                                |ms| extpool_host::core::time::rfc3339(time_of(ms)),
                            ),
                        ]
                    })
                    .collect();
                ctx.out
                    .table(&["NAME", "ROLE", "CREATED", "LAST USED"], &rows)?;
            }
            ExitCode::SUCCESS
        }
        ApiKeysCommand::Revoke { name } => {
            if !store.revoke_api_key(&name).await? {
                bail!("no API key is named {name:?} in {url} (extpool api-keys list)");
            }
            if ctx.global.json {
                ctx.out.json_value(&serde_json::json!({"revoked": name}))?;
            } else {
                ctx.out.line(format!(
                    "API key {name:?} revoked: every gateway on {url} refuses it from now on"
                ))?;
            }
            ExitCode::SUCCESS
        }
    };
    store.close().await;
    Ok(done)
}

/// A store time (milliseconds since the epoch) as a time.
fn time_of(ms: i64) -> std::time::SystemTime {
    std::time::UNIX_EPOCH + std::time::Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}
