"""Every agent as an MCP tool: streamable HTTP, stateless, at `/mcp` and `/agents/{agent_id}/mcp`."""
