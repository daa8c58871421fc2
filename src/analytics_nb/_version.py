"""The package version, in a module of its own so that a part (the client's ``User-Agent``) can read it
without importing the package root, whose type-checking imports reach every part (an import cycle)."""

__version__ = "0.1.0"
