"""Stream protocols frontends are built on (AG-UI, the Vercel AI SDK's UI message stream), spoken over
the one stored event log: each adapter maps a turn's events, live or replayed, to its protocol."""
