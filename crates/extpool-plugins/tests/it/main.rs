//! Integration tests of extpool-plugins, through its library entry points
//! (`validate`, `read_plugin`, `discover`, `LocalCommandSource`), over
//! fixtures written from each format's documentation, the Agent Plugins
//! conformance corpus, and homes laid out as the hosts' own CLIs leave
//! them.

mod commands;
mod corpus;
mod formats;
mod installed;
mod marketplace;
mod security;
mod skill_folders;
mod support;
