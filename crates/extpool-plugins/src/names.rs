//! How the things a plugin provides are named where extpool serves them:
//! one rule each, every front end calls it.

/// The extpool server name of server `server` of plugin `plugin`: the one
/// rule, so every front end names a plugin's servers alike.
pub fn server_name(plugin: &str, server: &str) -> String {
    extpool_core::sanitize_server_name(&format!("plugin_{plugin}_{server}"))
}

/// The qualified name of item `item` of plugin `plugin` (`plugin:item`):
/// the one rule for skills and commands.
pub fn qualified(plugin: &str, item: &str) -> String {
    format!("{plugin}:{item}")
}
