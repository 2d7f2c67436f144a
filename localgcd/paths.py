"""Where localgcd keeps its files: one place for every module."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``$LOCALGCD_CACHE``, else the platform user cache dir (``~/.cache/localgcd``)."""
    env = os.environ.get("LOCALGCD_CACHE")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "localgcd"


def config_dir() -> Path:
    """The platform user config dir (``~/.config/localgcd``)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "localgcd"
