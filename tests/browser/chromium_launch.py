"""The one place the browser tests name Debian's chromium and the flags it runs headless with."""

from __future__ import annotations

import os
from typing import Any

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_missing() -> str | None:
    """Why chromium cannot run here (with the fix), or None."""
    if not os.path.exists(CHROMIUM):
        return f"{CHROMIUM} is absent (install Debian's chromium: apt-get install -y chromium)"
    return None


def launch(playwright: Any) -> Any:
    """A headless chromium browser from a `sync_playwright()` context (offline: no background traffic)."""
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
