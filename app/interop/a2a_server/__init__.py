"""Every agent as an A2A agent: agent cards, a tenant directory and JSON-RPC at `/a2a/{agent_id}`."""
