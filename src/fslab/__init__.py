"""fslab: find where Linux filesystem performance falls off, and explain why."""

__version__ = "0.1.0"
