"""The package version, which is the Cargo workspace's (the wheel takes it from there), so
`graphready --version` and `graphready.__version__` agree.

In a source checkout (the package imported from python/graphready, installed or not) the
workspace's Cargo.toml is the version; an installed wheel reads its metadata. The probe also
imports these files from a temporary folder with neither: that must not fail.
"""

from __future__ import annotations

import os
import re
from typing import Optional

UNKNOWN = "0+unknown"


def checkout_version(package_dir: str) -> Optional[str]:
    """`[workspace.package] version` of the checkout holding `package_dir`, if it is one."""
    root = os.path.dirname(os.path.dirname(package_dir))
    if not os.path.isfile(os.path.join(root, "crates", "graphready", "Cargo.toml")):
        return None
    try:
        with open(os.path.join(root, "Cargo.toml"), encoding="utf-8") as manifest:
            text = manifest.read()
    except OSError:
        return None
    section = re.search(r"^\[workspace\.package\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
    if section is None:
        return None
    version = re.search(r'^version\s*=\s*"([^"]+)"', section.group(1), re.M)
    return version.group(1) if version else None


def installed_version() -> Optional[str]:
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:
        return None
    try:
        return version("graphready")
    except PackageNotFoundError:
        return None


def package_version() -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    return checkout_version(here) or installed_version() or UNKNOWN


__version__ = package_version()
