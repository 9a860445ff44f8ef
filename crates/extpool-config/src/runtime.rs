//! The configuration mapped onto the runtime settings of the library
//! crates, once, here: the catalog's [`CatalogConfig`], the registry's
//! [`RegistryConfig`], the pool's [`PoolConfig`] and skill discovery's
//! [`DiscoveryConfig`]. Front ends and the host convert with these instead
//! of copying fields one by one.

use extpool_catalog::CatalogConfig;
use extpool_core::RegistryConfig;
use extpool_mcp::PoolConfig;
use extpool_skills::DiscoveryConfig;

use crate::load::Loaded;
use crate::locate::Places;
use crate::model::{ExtensionsConfig, ExtpoolConfig};

impl From<&ExtpoolConfig> for CatalogConfig {
    /// Permissions, each server's `prefix` as its namespace, and the
    /// `extensions` switches and limits.
    fn from(config: &ExtpoolConfig) -> Self {
        let ext = &config.extensions;
        CatalogConfig {
            permissions: config.permissions.clone(),
            namespaces: config
                .mcp_servers
                .iter()
                .filter_map(|(name, c)| c.prefix.clone().map(|p| (name.clone(), p)))
                .collect(),
            resource_tools: ext.resource_tools,
            prompts: ext.prompt_commands,
            limits: ext.result_limits,
            jq: ext.jq,
            ..CatalogConfig::default()
        }
    }
}

impl From<&ExtensionsConfig> for RegistryConfig {
    /// `max_composition_depth`; the RFC's shutdown timeout.
    fn from(ext: &ExtensionsConfig) -> Self {
        RegistryConfig {
            max_composition_depth: ext.max_composition_depth,
            ..RegistryConfig::default()
        }
    }
}

impl From<&ExtensionsConfig> for PoolConfig {
    /// `max_clients` and `notifications`; default waiting and other client
    /// settings.
    fn from(ext: &ExtensionsConfig) -> Self {
        let mut pool = PoolConfig {
            max_clients: ext.max_clients,
            ..PoolConfig::default()
        };
        pool.client.notifications = ext.notifications;
        pool
    }
}

impl Loaded {
    /// Where and how skills are discovered: the `skills.paths` of every
    /// file read (resolved against it) first, then — when
    /// `skills.default_roots` — the project and user roots seen from
    /// `places`; checked with `skills.validation`.
    pub fn discovery_config(&self, places: &Places) -> DiscoveryConfig {
        let skills = &self.config.skills;
        let mut config = DiscoveryConfig::with_paths(self.skill_paths.clone());
        if skills.default_roots {
            config.cwd = Some(places.cwd.clone());
            config.home = places.home.clone();
        }
        config.mode = skills.validation;
        config
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::parse_yaml;

    #[test]
    fn one_mapping_per_setting() {
        let root = parse_yaml(
            "mcp_servers:\n  a:\n    command: x\n    prefix: aa\n  b:\n    command: y\npermissions:\n  deny: [mcp__aa__x]\nextensions:\n  max_composition_depth: 1\n  max_clients: 7\n  prompt_commands: false\n  jq:\n    max_steps: 99\n  notifications:\n    log_per_second: 5\n",
        )
        .unwrap();
        let config: ExtpoolConfig = crate::de::from_node(&root).unwrap();
        let catalog = CatalogConfig::from(&config);
        assert_eq!(catalog.namespaces.get("a").map(String::as_str), Some("aa"));
        assert!(!catalog.namespaces.contains_key("b"));
        assert_eq!(catalog.permissions.deny, ["mcp__aa__x"]);
        assert!(!catalog.prompts && catalog.resource_tools);
        assert_eq!(catalog.jq.max_steps, 99);
        assert_eq!(
            RegistryConfig::from(&config.extensions).max_composition_depth,
            1
        );
        let pool = PoolConfig::from(&config.extensions);
        assert_eq!(pool.max_clients, 7);
        assert_eq!(pool.client.notifications.log_per_second, 5);
        assert_eq!(pool.client.notifications.progress_per_second, 100);
    }
}
