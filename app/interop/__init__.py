"""Doors for other protocols: every agent as an MCP server (`mcp_server/`) and an A2A agent (`a2a/`).

Both reach turns only through `door.py`, so each call through them is an ordinary governed turn.
"""
