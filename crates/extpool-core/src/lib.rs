//! extpool-core: the vocabulary every other extpool crate speaks.
//!
//! It holds what RFC-0051 calls the *Resource Protocols* ([`SkillResource`],
//! [`McpResource`], [`CommandResource`], [`ChangeObservable`]), the adapter
//! trait agents compile against ([`Capability`]), the entry types that cross
//! those traits, [`Scope`], and the [`ExtensionRegistry`] that decides which
//! capabilities a scope can see and routes URIs to their owners.
//!
//! This crate knows nothing about MCP wire formats, SKILL.md files or front
//! ends; it must never depend on another extpool crate.

pub mod address;
pub mod call;
pub mod capability;
pub mod change;
pub mod composition;
pub mod directory;
pub mod dirs;
pub mod entry;
pub mod error;
pub mod json;
pub mod name;
pub mod principal;
pub mod protocols;
pub mod registry;
pub mod scope;
pub mod text;
pub mod time;
pub mod uri;
pub mod web;

pub use call::{CallClient, CallContext, ClientSession, InputRound, ProgressSink, ProgressUpdate};
pub use capability::{Capability, CapabilityKind, TurnContext};
pub use change::{ChangeEvent, ChangeKind, ChangeStream};
pub use composition::{CircularCompositionError, ParentChain};
pub use directory::{DIRECTORY_MIME_TYPE, DirectoryPage};
pub use entry::{
    AsSent, CommandArgument, CommandEntry, ContentPart, ResourceBody, ResourceContent,
    ResourceEntry, ResourceTemplateEntry, SkillEntry, ToolEntry, ToolResult,
};
pub use error::{BoxError, Causes, ExtensionError};
pub use name::{
    MAX_SERVER_NAME_BYTES, ServerNameError, ServerNames, check_server_name, is_valid_server_name,
    same_server_name, sanitize_server_name, server_name_key,
};
pub use principal::{Principal, claim_values};
pub use protocols::{ChangeObservable, CommandResource, McpResource, SkillResource};
pub use registry::{
    ExtensionRegistry, MembershipWatch, MergedChanges, Registration, RegistryConfig, RegistryError,
    ResolveError, ShutdownReport, Visible,
};
pub use scope::{Scope, ScopeError, ScopeKey, ScopeLevel};
pub use uri::{ExtUri, UriError};
pub use web::{HttpUrlError, check_http_url, is_http_scheme, is_http_url, is_loopback_host};
