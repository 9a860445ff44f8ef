//! Elicitation: servers asking the user for input (`elicitation/create`).
//!
//! A host that can put a form in front of its user implements
//! [`ElicitationHandler`] and sets it in `ClientOptions::elicitation`; the
//! client then declares the form-elicitation capability and forwards each
//! request. Without one nothing is declared, so servers do not ask (and a
//! request that arrives anyway is declined by rmcp).

use std::sync::Arc;

use rmcp::ErrorData;
use rmcp::model::{ElicitRequestParams, ElicitResult};

use crate::name::ServerName;

/// Answers a server's elicitation request on behalf of the user.
#[async_trait::async_trait]
pub trait ElicitationHandler: Send + Sync {
    /// The user's answer to `request` from `server`.
    async fn elicit(
        &self,
        server: &ServerName,
        request: ElicitRequestParams,
    ) -> Result<ElicitResult, ErrorData>;
}

/// The host's elicitation handler (shared by every client of a pool).
#[derive(Clone)]
pub struct Elicitation(pub Arc<dyn ElicitationHandler>);

impl std::fmt::Debug for Elicitation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Elicitation")
    }
}
