"""Structured output: the JSON Schema a turn's answer must meet, and our own check of the answer."""
