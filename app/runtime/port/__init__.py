"""What a runtime sees of the engine: the journal protocol and the event models."""
