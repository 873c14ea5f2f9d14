//! Tools of the operator's MCP servers in the registry: `mcp__<server>__<tool>`, validated
//! against the schema the server gave (compiled once per schema, like an agent tool version)
//! and called through `wright_mcp::McpClients`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use wright_mcp::{McpClients, McpError, McpTool};

use crate::ToolError;

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
        crate::registry::check_arguments(&tool.name, &validator, args)?;
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
