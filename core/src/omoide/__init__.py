"""omoide: a plugin-based voice assistant server for StackChan, with long-term memory."""

__version__ = "0.1.0"
