"""The installed package: `python -m graphready` finds and runs the executable, and the version
is the Cargo workspace's. scripts/test-install.sh builds and installs the real wheel."""

import os
import re
import shutil
import subprocess
import sys
import sysconfig

import pytest

import graphready
from graphready import _find_bin, _version

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PYTHON_SOURCE = os.path.join(ROOT, "python")
POSIX = pytest.mark.skipif(os.name == "nt", reason="the fake executable is a shell script")


def read(*parts):
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as f:
        return f.read()


def workspace_version():
    section = re.search(r"^\[workspace\.package\]$(.*?)^\[", read("Cargo.toml"), re.M | re.S)
    return re.search(r'^version = "(.+)"$', section.group(1), re.M).group(1)


def test_version_is_the_cargo_workspace_version():
    package_dir = os.path.dirname(graphready.__file__)
    assert _version.checkout_version(package_dir) == workspace_version()
    assert graphready.__version__ == workspace_version()


def test_a_copy_without_metadata_or_checkout_still_imports(tmp_path):
    # What the probe does: the embedded files written to a temporary folder and imported.
    shutil.copytree(os.path.join(PYTHON_SOURCE, "graphready"), tmp_path / "graphready")
    out = subprocess.run(
        [sys.executable, "-c", "import graphready; print(graphready.__version__)"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip()
    assert _version.checkout_version(str(tmp_path / "graphready")) is None


@pytest.fixture
def scheme_dirs(tmp_path, monkeypatch):
    """The scripts folders of the install scheme and the user scheme, empty, and an empty PATH."""
    dirs = {"scripts": tmp_path / "scripts", "user": tmp_path / "user"}
    for folder in dirs.values():
        folder.mkdir()

    def get_path(name, scheme=None, *args, **kwargs):
        assert name == "scripts"
        return str(dirs["scripts"] if scheme is None else dirs["user"])

    monkeypatch.setattr(sysconfig, "get_path", get_path)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    return dirs


def executable(folder):
    path = folder / _find_bin.EXECUTABLE
    path.write_text("#!/bin/sh\necho fake\n")
    path.chmod(0o755)
    return str(path)


@POSIX
def test_find_bin_prefers_the_scheme_then_the_user_scheme_then_path(scheme_dirs, tmp_path, monkeypatch):
    with pytest.raises(FileNotFoundError, match="no `graphready` executable in .*scripts.*user"):
        _find_bin.find_graphready_bin()
    on_path = tmp_path / "on_path"
    on_path.mkdir()
    monkeypatch.setenv("PATH", str(on_path))
    for folder in [on_path, scheme_dirs["user"], scheme_dirs["scripts"]]:
        expected = executable(folder)  # each one found takes over from the ones before
        assert _find_bin.find_graphready_bin() == expected


def test_find_bin_looks_beside_the_package_root_for_pip_install_target():
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(_find_bin.__file__)))
    assert os.path.join(package_root, "bin") in _find_bin.search_dirs()


def run_module(tmp_path, *args):
    # sysconfig's scripts folders point nowhere, so the fake on PATH is the one found.
    code = (
        "import runpy, sysconfig; sysconfig.get_path = lambda *a, **k: '/nonexistent'; "
        "runpy.run_module('graphready', run_name='__main__', alter_sys=True)"
    )
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        env={**os.environ, "PYTHONPATH": PYTHON_SOURCE, "PATH": str(tmp_path / "bin")},
        capture_output=True,
        text=True,
    )


@POSIX
def test_python_m_graphready_runs_the_executable_with_the_arguments_and_its_status(tmp_path):
    (tmp_path / "bin").mkdir()
    fake = tmp_path / "bin" / "graphready"
    fake.write_text('#!/bin/sh\necho "argv: $*"\nexit 3\n')
    fake.chmod(0o755)
    out = run_module(tmp_path, "check", "--select", "GR1", "a b.py")
    assert out.returncode == 3, out.stderr
    assert out.stdout == "argv: check --select GR1 a b.py\n"


def test_python_m_graphready_without_the_executable_says_where_it_looked(tmp_path):
    out = run_module(tmp_path, "--version")
    assert out.returncode == 2
    assert "error: no `graphready" in out.stderr and "/nonexistent" in out.stderr
