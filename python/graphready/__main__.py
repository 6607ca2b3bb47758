"""`python -m graphready ARGS...` runs the `graphready` executable installed with this package."""

from __future__ import annotations

import os
import sys

from ._find_bin import find_graphready_bin


def main() -> None:
    try:
        executable = os.fsdecode(find_graphready_bin())
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    argv = [executable, *sys.argv[1:]]
    if sys.platform == "win32":
        # Windows has no exec: a child process, whose exit status becomes ours.
        import subprocess

        sys.exit(subprocess.run(argv).returncode)
    os.execvp(executable, argv)


if __name__ == "__main__":
    main()
