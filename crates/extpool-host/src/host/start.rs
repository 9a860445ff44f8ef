//! Start-up: a configuration turned into a running [`Host`].
//!
//! In order: load the configuration; discover skills (on a blocking
//! thread) while every selected server starts in parallel through the
//! shared [`SessionConnectionPool`]; build the [`SkillManagerCap`] (local
//! skills, the servers' hosted skills, skill-embedded servers built through
//! the pool); register the manager, then each usable server, at pool scope
//! of one [`ExtensionRegistry`]; start the pool [`Catalog`] over that scope
//! and wait for its first cycle. Every front end and agent runtime stands
//! on this one assembly.

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Weak};

use extpool_catalog::{Catalog, CatalogConfig};
use extpool_config::{ConfigError, LoadRequest, Loaded, Places};
use extpool_core::{Capability as _, ExtensionRegistry, Scope, ScopeLevel};
use extpool_mcp::SessionConnectionPool;
use extpool_skills::SkillManagerCap;
use parking_lot::Mutex;

use super::{Host, SKILLS_ID};
use crate::discovery::runtime::Runtime;
use crate::embedded::PoolFactory;
use crate::error::HostError;
use crate::options::{ConfigSource, HostOptions, PluginOptions};
use crate::servers;
use crate::shared::HostInner;
use crate::status::ServerState;

fn load(source: ConfigSource, places: &Places) -> Result<Loaded, ConfigError> {
    match source {
        ConfigSource::Files(files) => extpool_config::load(&LoadRequest {
            files,
            places: places.clone(),
        }),
        ConfigSource::Loaded(loaded) => Ok(*loaded),
        ConfigSource::Value { config, base_dir } => {
            extpool_config::load_value(&config, &base_dir, "configuration")
        }
    }
}

impl Host {
    /// Loads the configuration, starts the selected servers in parallel
    /// (reporting each step to `options.events`), loads skills, and returns
    /// once the catalog's first cycle is done. A server that fails is
    /// reported and left out; the host works without it.
    pub async fn start(options: HostOptions) -> Result<Host, HostError> {
        let HostOptions {
            config,
            places,
            servers: selection,
            watch_skills,
            events,
            pool_id,
            relay,
            discovery: discovery_options,
            per_caller_servers,
            plugins,
            own,
        } = options;
        let exclusions = servers::Exclusions {
            per_caller: per_caller_servers,
            own,
        };
        let mut loaded = load(config, &places)?;
        let found = match plugins {
            PluginOptions::Off => None,
            PluginOptions::Found(found) => Some(*found),
            PluginOptions::Discover => {
                let (config, at) = (loaded.config.clone(), places.clone());
                let mut found =
                    tokio::task::spawn_blocking(move || crate::plugins::discover(&config, &at))
                        .await
                        .unwrap_or_else(|e| {
                            tracing::error!("plugin discovery failed: {e}");
                            crate::plugins::Found::none()
                        });
                crate::plugins::add_servers(&mut found, &mut loaded, &places);
                Some(found)
            }
        };
        let plugins = found.map(|f| Arc::new(crate::plugins::Live::new(f)));
        let guardrails = match &loaded.config.guardrails {
            Some(g) => Some(Arc::new(crate::guardrails::Guardrails::compile(
                g,
                &extpool_config::process_env,
            )?)),
            None => None,
        };
        let ext = &loaded.config.extensions;
        let registry = Arc::new(ExtensionRegistry::new(ext.into()));
        let mut pool_config = extpool_mcp::PoolConfig::from(ext);
        pool_config.client.relay = relay;
        let delegated = pool_config.client.auth.delegated.clone();
        let pool = SessionConnectionPool::new(pool_config);
        let logs = Arc::new(crate::server_logs::ServerLogs::default());
        crate::server_logs::collect_stderr(&logs, pool.stderr_lines());
        let catalog_config = CatalogConfig::from(&loaded.config);
        let catalog = Arc::new(Catalog::new(catalog_config.clone())?);

        let discovery = loaded.discovery_config(&places);
        let scan = {
            let config = discovery.clone();
            tokio::task::spawn_blocking(move || extpool_skills::discover(&config))
        };
        let servers = servers::start(&loaded, &selection, &exclusions, &pool, &events).await;
        let discovered = scan.await.unwrap_or_else(|e| {
            tracing::error!("skill discovery failed: {e}");
            extpool_skills::Discovery::default()
        });

        let mut builder = SkillManagerCap::builder(SKILLS_ID)
            .discovery(discovery.clone())
            .discovered(discovered)
            .watch(watch_skills.unwrap_or(loaded.config.skills.watch))
            .max_composition_depth(ext.max_composition_depth)
            .embedded_servers(Arc::new(PoolFactory { pool: pool.clone() }));
        for entry in &servers {
            if let (Some(cap), ServerState::Ready { .. }) = (&entry.cap, &entry.info.state) {
                builder = builder.hosted_skills(cap.clone());
            }
        }
        let manager = Arc::new(builder.build()?);

        let pool_scope = Scope::pool(pool_id);
        // The manager first: its local skills win `skill://` name clashes;
        // then the plugins' skills, then command files (a skill's command
        // wins over a command file of the same name, as in Claude Code).
        registry.register(manager.clone(), ScopeLevel::Pool, &pool_scope, None)?;
        if let Some(live) = &plugins {
            registry.register(live.skills.clone(), ScopeLevel::Pool, &pool_scope, None)?;
            registry.register(live.commands.clone(), ScopeLevel::Pool, &pool_scope, None)?;
        }
        for entry in &servers {
            if let Some(cap) = &entry.cap {
                registry.register(cap.clone(), ScopeLevel::Pool, &pool_scope, None)?;
            }
        }
        // Watcher and embedded servers' start in the background: the
        // catalog connects embedded servers as it lists them.
        {
            let manager = manager.clone();
            tokio::spawn(async move {
                if let Err(e) = manager.start().await {
                    tracing::warn!("skill manager did not start: {e}");
                }
            });
        }
        let runtime = Arc::new(Runtime::new(servers));
        let found = crate::discovery::setup::assemble(crate::discovery::setup::Assembly {
            options: discovery_options,
            selection: &selection,
            loaded: &loaded,
            places: &places,
            pool: &pool,
            runtime: &runtime,
            exclusions: &exclusions,
            plugins: plugins.clone(),
        })?;
        catalog.start_with_membership(
            registry.clone(),
            pool_scope.clone(),
            found
                .reconciler
                .clone()
                .map(|r| r as Arc<dyn extpool_catalog::Membership>),
        )?;
        let watcher = found.watch(&catalog);
        catalog.settled().await;
        let observed = Arc::downgrade(&runtime);
        crate::server_logs::watch_states(
            &logs,
            move || Some(observed.upgrade()?.read(crate::connections::observed)),
            catalog.cycles(),
            found.reconciler.as_ref().map(|r| r.updates()),
        );
        Ok(Host {
            inner: Arc::new(HostInner {
                loaded,
                places,
                registry,
                pool,
                catalog,
                catalog_config,
                manager,
                pool_scope,
                health: crate::health::Health::default(),
                guardrails,
                policy: crate::policy::ViewPolicy::open(),
                discovery,
                runtime,
                logs,
                reconciler: found.reconciler,
                watcher: Mutex::new(watcher),
                plugins,
                delegated,
                shut: AtomicBool::new(false),
            }),
            sessions: Arc::new(Mutex::new(HashMap::new())),
            pool_view: Arc::new(Mutex::new(Weak::new())),
        })
    }
}
