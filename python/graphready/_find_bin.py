"""Where pip put the `graphready` executable that came with this package.

A wheel installs the executable into the install scheme's scripts folder, not into the package,
so `python -m graphready` has to look for it: the scripts folder of this interpreter's scheme
(a virtual environment's `bin/`), the user scheme's (`pip install --user`), `bin/` beside the
package root (`pip install --target DIR`), and only then `PATH`, which may hold another version.
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
from typing import List

EXECUTABLE = "graphready" + (sysconfig.get_config_var("EXE") or "")


def _user_scheme() -> str:
    if sys.version_info >= (3, 10):
        return sysconfig.get_preferred_scheme("user")
    if os.name == "nt":
        return "nt_user"
    if sys.platform == "darwin" and getattr(sys, "_framework", None):
        return "osx_framework_user"
    return "posix_user"


def search_dirs() -> List[str]:
    """The folders searched before `PATH`, most specific first."""
    dirs = [sysconfig.get_path("scripts")]
    try:
        dirs.append(sysconfig.get_path("scripts", scheme=_user_scheme()))
    except KeyError:  # an interpreter built without a user scheme
        pass
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    dirs.append(os.path.join(package_root, "bin"))
    return dirs


def find_graphready_bin() -> str:
    """The path of the `graphready` executable; `FileNotFoundError` naming every place searched."""
    dirs = search_dirs()
    for folder in dirs:
        candidate = os.path.join(folder, EXECUTABLE)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    on_path = shutil.which(EXECUTABLE)
    if on_path is not None:
        return on_path
    raise FileNotFoundError(
        f"no `{EXECUTABLE}` executable in {', '.join(dirs)} or on PATH; "
        "install the package with `pip install graphready` (or `pip install .` from a checkout)"
    )
