"""Where localgcd keeps its files: one place for every module.

=========  ====================================================  ===========================
platform   config dir (the user's ``models.toml``)               cache dir
=========  ====================================================  ===========================
Linux      ``$XDG_CONFIG_HOME/localgcd`` or ``~/.config/localgcd``  ``$XDG_CACHE_HOME/localgcd``
                                                                  or ``~/.cache/localgcd``
macOS      ``~/Library/Application Support/localgcd``            as on Linux
Windows    ``%APPDATA%\\localgcd``                                as on Linux
=========  ====================================================  ===========================

``$LOCALGCD_CACHE`` overrides the cache dir, ``$LOCALGCD_VOCABS`` the folder of
fetched vocabularies (default ``<cache dir>/vocabs``; the test suite points it
at the checkout's ``.test-data/vocabs``) and ``$LOCALGCD_MODELS`` the user's
models file.  Every function takes the platform and the environment as
parameters (default: this process's), so each platform's answer can be checked
anywhere.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path


def _env(environ: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if environ is None else environ


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$LOCALGCD_CACHE``, else ``$XDG_CACHE_HOME/localgcd``, else ``~/.cache/localgcd``."""
    env = _env(environ)
    if env.get("LOCALGCD_CACHE"):
        return Path(env["LOCALGCD_CACHE"]).expanduser()
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "localgcd"


def vocab_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Where fetched vocabularies live: ``$LOCALGCD_VOCABS``, else ``<cache dir>/vocabs``."""
    env = _env(environ)
    if env.get("LOCALGCD_VOCABS"):
        return Path(env["LOCALGCD_VOCABS"]).expanduser()
    return cache_dir(env) / "vocabs"


def config_dir(platform: str | None = None, environ: Mapping[str, str] | None = None) -> Path:
    """The per-user config directory of localgcd on ``platform`` (``sys.platform`` values)."""
    platform = sys.platform if platform is None else platform
    env = _env(environ)
    if platform == "win32":
        base = env.get("APPDATA") or str(Path.home() / "AppData" / "Roaming")
        return Path(base) / "localgcd"
    if platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "localgcd"
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "localgcd"


def user_models_file(platform: str | None = None, environ: Mapping[str, str] | None = None) -> Path:
    """``$LOCALGCD_MODELS``, else ``<config dir>/models.toml`` (it need not exist)."""
    env = _env(environ)
    if env.get("LOCALGCD_MODELS"):
        return Path(env["LOCALGCD_MODELS"]).expanduser()
    return config_dir(platform, env) / "models.toml"
