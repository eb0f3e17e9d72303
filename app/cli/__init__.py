"""The command line: `agent-runtime serve | migrate | token | chat | eval …` (main.py) and the terminal chat."""

from app.cli.main import main

__all__ = ["main"]
