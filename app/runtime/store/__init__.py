"""Every statement on the engine's tables, one module per table group (only app/runtime imports it)."""
