"""Shared pytest set-up: the sandbox fixtures come from the package's own pytest plugin."""

pytest_plugins = ["analytics_nb.sandbox.testing"]
