//! A call's way to a server reached with a token made from its caller's
//! ([`crate::delegation`]): the token made before the call (or the
//! listing) reaches the server, and the server's tools listed again for
//! the caller when they could not be without it.

use std::sync::Arc;

use extpool_host::ToolTable;
use extpool_host::catalog::BuiltinTool;

use super::GatewayHandler;
use super::exchange::Exchange;

impl GatewayHandler {
    /// The table `name` is called in once its caller's token for `server`
    /// is in place, when the server is reached with a token made from the
    /// caller's ([`crate::delegation`]): `table`, or the table again when
    /// the server's tools were not listed for this caller before (it had
    /// no token then). `Err` says why no token could be made.
    pub(super) async fn delegated_table(
        &self,
        ex: &Exchange,
        table: &Arc<ToolTable>,
        name: &str,
        server: &str,
    ) -> Result<Arc<ToolTable>, String> {
        if ex.caller.delegate(self, server).await?.is_none() || table.row(name).is_some() {
            return Ok(table.clone());
        }
        let _ = self.view().reconcile_now().await;
        Ok(ex.caller.table_again(self))
    }

    /// Makes the caller's tokens for the servers reached with a token made
    /// from its own whose tools `table` lacks (they could not list them
    /// without one), and lists them again; whether any was made.
    pub(super) async fn delegate_unlisted(&self, ex: &Exchange, table: &ToolTable) -> bool {
        let mut made = false;
        for server in self.shared.host.delegated_servers() {
            if table.rows().iter().any(|row| row.tool.server == server) {
                continue;
            }
            made |= matches!(ex.caller.delegate(self, &server).await, Ok(Some(_)));
        }
        if made {
            let _ = self.view().reconcile_now().await;
        }
        made
    }

    /// The table a built-in that calls another tool (`CallMcpWithQuery`)
    /// runs in once its caller's token for the server it names is in
    /// place (as [`Self::delegated_table`] for a direct call): nothing
    /// reaches a delegated server without the caller's own token.
    pub(super) async fn delegated_reach(
        &self,
        ex: &Exchange,
        table: &Arc<ToolTable>,
        name: &str,
        args: Option<&serde_json::Map<String, serde_json::Value>>,
    ) -> Result<Arc<ToolTable>, String> {
        let calls_another = table
            .row(name)
            .is_some_and(|row| row.builtin == Some(BuiltinTool::CallMcpWithQuery));
        let arg = |key: &str| args.and_then(|a| a.get(key)).and_then(|v| v.as_str());
        let (true, Some(server), Some(tool)) = (calls_another, arg("server"), arg("tool")) else {
            return Ok(table.clone());
        };
        if ex.caller.delegate(self, server).await?.is_none()
            || table.revision().remote_tool(server, tool).is_some()
        {
            return Ok(table.clone());
        }
        let _ = self.view().reconcile_now().await;
        Ok(ex.caller.table_again(self))
    }
}
