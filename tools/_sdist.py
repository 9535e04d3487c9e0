"""What the upstream-test runners share: a pinned sdist's tests/ folder, and the interpreter's tag."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path


class SdistError(SystemExit):
    """The sdist could not be downloaded, or is not the pinned one."""


def sdist_tests(python: str, dist: str, version: str, sha256: str | None, cache: Path) -> Path:
    """Download ``dist==version`` (an sdist, checked against ``sha256``) once and extract its tests/ folder.

    Returns ``cache/upstream/<dist>-<version>/tests``; a folder already extracted is reused.
    """
    dest = cache / "upstream" / f"{dist}-{version}"
    if (dest / "tests").is_dir():
        return dest / "tests"
    dl = cache / "dl"
    dl.mkdir(parents=True, exist_ok=True)
    sdist = dl / f"{dist}-{version}.tar.gz"
    if not sdist.is_file():
        req = f"{dist.replace('_', '-')}=={version}"
        cmd = [python, "-m", "pip", "download", "-q", "--no-binary", ":all:", "--no-deps", req, "-d", str(dl)]
        if subprocess.run(cmd, check=False).returncode != 0 or not sdist.is_file():
            raise SdistError(f"pip could not download {req}")
    digest = hashlib.sha256(sdist.read_bytes()).hexdigest()
    if sha256 is not None and digest != sha256:
        raise SdistError(f"sha256 mismatch for {sdist.name}: {digest}")
    prefix = f"{dist}-{version}/tests/"
    with tarfile.open(sdist) as tar:
        members = [m for m in tar.getmembers() if m.name.startswith(prefix) and m.isfile()]
        with tempfile.TemporaryDirectory(dir=dl) as tmp:
            tar.extractall(tmp, members=members, filter="data")
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.rmtree(dest, ignore_errors=True)
            shutil.move(os.path.join(tmp, f"{dist}-{version}"), dest)
    return dest / "tests"


def python_tag(python: str) -> str:
    """``py311`` for a Python 3.11 interpreter."""
    out = subprocess.run(
        [python, "-c", "import sys; print(f'py{sys.version_info[0]}{sys.version_info[1]}')"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def pip_target(
    python: str, target: Path, requirements: Path, extra: tuple[str, ...], die: Callable[[str], object]
) -> None:
    """``pip install --no-deps --target`` the pinned tools of ``requirements`` (plus ``extra``)."""
    if not requirements.is_file():
        die(f"no pinned tool list at {requirements}")
    cmd = [
        python,
        "-m",
        "pip",
        "install",
        "-q",
        "--no-deps",
        "--target",
        str(target),
        "-r",
        str(requirements),
    ]
    if subprocess.run([*cmd, *extra], check=False).returncode != 0:
        die("could not install the pytest tools")
