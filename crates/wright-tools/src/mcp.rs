//! Tools of the operator's MCP servers in the registry: `mcp__<server>__<tool>`, validated
//! against the schema the server gave (compiled once per schema, like an agent tool version)
//! and called through `wright_mcp::McpClients`; and the egress policy as the gate of their
//! HTTP connections ([`egress_gate`]).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use wright_egress::Egress;
use wright_mcp::{Admission, AdmitFuture, HttpGate, McpClients, McpError, McpTool};

use crate::ToolError;

/// The egress policy as the gate of HTTP MCP servers: a server is reached only if `fetch_url`
/// could reach its URL — a public address, or one the operator allowed in `[egress] allow` —
/// and its connection is pinned to the addresses that one lookup found and the policy passed.
pub struct EgressGate(pub Egress);

impl HttpGate for EgressGate {
    fn admit<'a>(&'a self, url: &'a str) -> AdmitFuture<'a> {
        Box::pin(async move {
            let verdict = self.0.check(url).await;
            if !verdict.allowed {
                let hint = match (&verdict.host, verdict.port) {
                    (Some(host), Some(port)) => format!("; to reach it, add `{host}:{port}` to [egress] allow"),
                    _ => String::new(),
                };
                return Err(format!("{}{hint}", wright_egress::EgressError::Denied { reason: verdict.reason() }));
            }
            let addresses: Vec<IpAddr> = verdict.addresses.iter().map(|address| address.address).collect();
            // `host` is the URL parser's; an IP literal (IPv6 in brackets) is connected to as is.
            let host = verdict
                .host
                .filter(|host| host.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>().is_err());
            Ok(Admission { host, addresses })
        })
    }
}

/// The gate the MCP clients' HTTP connections go through.
pub fn egress_gate(egress: &Egress) -> Arc<dyn HttpGate> {
    Arc::new(EgressGate(egress.clone()))
}

/// The MCP side of a registry: the clients and the validators of their tools' schemas.
pub(crate) struct McpTools {
    pub(crate) clients: McpClients,
    /// By tool name: the schema a validator was compiled from, and the validator. A std Mutex,
    /// held only to look up or insert, never across an await. A server that changes a tool's
    /// schema gets a new validator on the next call.
    validators: Mutex<HashMap<String, (Value, Arc<jsonschema::Validator>)>>,
}

impl McpTools {
    pub(crate) fn new(clients: McpClients) -> Self {
        McpTools { clients, validators: Mutex::new(HashMap::new()) }
    }

    /// Validates `args` against the tool's schema and calls it.
    pub(crate) async fn call(&self, tool: &McpTool, args: &Value) -> Result<Value, ToolError> {
        let validator = self.validator(tool)?;
        crate::registry::check_arguments(&tool.name, &tool.input_schema, &validator, args)?;
        self.clients.call(&tool.name, args.clone()).await.map_err(error)
    }

    fn validator(&self, tool: &McpTool) -> Result<Arc<jsonschema::Validator>, ToolError> {
        let mut cache = self.validators.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((schema, validator)) = cache.get(&tool.name)
            && *schema == tool.input_schema
        {
            return Ok(Arc::clone(validator));
        }
        let validator = jsonschema::validator_for(&tool.input_schema).map_err(|error| {
            ToolError::Rejected(format!("the MCP server's inputSchema for `{}` cannot be used: {error}", tool.name))
        })?;
        let validator = Arc::new(validator);
        cache.insert(tool.name.clone(), (tool.input_schema.clone(), Arc::clone(&validator)));
        Ok(validator)
    }
}

fn error(error: McpError) -> ToolError {
    let message = error.to_string();
    match error {
        McpError::UnknownTool { name } => ToolError::UnknownTool { name, closest: Vec::new() },
        McpError::Timeout { .. } => ToolError::Timeout(message),
        McpError::TooLarge { .. } => ToolError::LimitExceeded(message),
        McpError::ToolFailed { .. } => ToolError::Rejected(message),
        McpError::Unavailable { .. } | McpError::ServerDied { .. } | McpError::Protocol { .. } => {
            ToolError::Network(message)
        }
        McpError::Config { .. } => ToolError::Internal(message),
    }
}
