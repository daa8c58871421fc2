"""Build configuration for the one compiled piece: the column SHA-1 of the flag engine.

Everything else is in pyproject.toml. The extension is optional: when no C compiler (or no Python headers)
is available the install still succeeds, and `analytics_nb.flags` falls back to hashlib with a one-line
warning at first use (see src/analytics_nb/flags/_hashing.py).
"""

import sys

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "analytics_nb.flags._sha1column",
            ["src/analytics_nb/flags/_sha1column.c"],
            optional=True,
            extra_compile_args=[] if sys.platform == "win32" else ["-O3"],
        )
    ]
)
