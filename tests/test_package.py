"""The installable package: ``uv build`` makes the sdist and, from it, the wheel; the wheel holds
the templates, static files, site content and shipped checkpoints, and its metadata is complete;
installed (not editable) into a fresh environment beside the locked requirements, the
``claimtrace`` command works from a folder outside the repository: --help, data check, the demo
build's first stage, and the course's scorer on the course baseline (dev HM 0.3441).

Offline and as cheap as it can be: the build backend (pinned in pyproject.toml) and every locked
wheel come from uv's cache, hard-linked into the environment (Makefile, "The installer").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.package

REPO = Path(__file__).resolve().parents[1]
UV = REPO / ".venv" / "installer" / "bin" / "uv"


def _uv(*args: str, cwd: Path) -> None:
    env = {**os.environ, "UV_LINK_MODE": os.environ.get("UV_LINK_MODE", "hardlink")}
    env.setdefault("UV_FIND_LINKS", os.environ.get("PIP_FIND_LINKS", ""))
    done = subprocess.run([str(UV), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"uv {' '.join(args)}:\n{done.stdout}\n{done.stderr}"


def _build(dist: Path) -> Path:
    """The wheel ``uv build`` makes from the sdist it makes first (the source tree is left alone)."""
    _uv("build", "--offline", "--quiet", "--out-dir", str(dist), str(REPO), cwd=dist)
    assert len(list(dist.glob("claimtrace-*.tar.gz"))) == 1
    (found,) = dist.glob("claimtrace-*-py3-none-any.whl")
    return found


def _install(wheel: Path, venv: Path) -> None:
    """A fresh environment holding requirements.lock's versions and the wheel (not editable)."""
    _uv("venv", "--offline", "--quiet", "--python", sys.executable, str(venv), cwd=venv.parent)
    python = venv / "bin" / "python"
    _uv(
        "pip", "install", "--offline", "--quiet", "--no-deps", "--python", str(python),
        "-r", str(REPO / "requirements.lock"), str(wheel), cwd=venv.parent,
    )  # fmt: skip


def _check_wheel(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = archive.read("claimtrace-0.1.0.dist-info/METADATA").decode("utf-8")
    tracked = subprocess.run(
        ["git", "ls-files", "src/claimtrace"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    wanted = {path.removeprefix("src/") for path in tracked}
    assert len(wanted) > 100
    assert wanted - names == set()
    for folder in ("assets", "web/templates", "web/static", "web/static/tour", "web/content"):
        assert any(name.startswith(f"claimtrace/{folder}/") and not name.endswith(".py") for name in names), folder
    assert "claimtrace-0.1.0.dist-info/licenses/LICENSE" in names
    for field in ("License-Expression: MIT", "Author: The claimtrace maintainers", "Requires-Python: ", "Keywords: "):
        assert field in metadata
    assert "Project-URL: " in metadata and "Classifier: Programming Language :: Python :: 3.11" in metadata
    assert "# claimtrace" in metadata  # the README is the long description


def _claimtrace(venv: Path, cwd: Path, data_dir: Path, *args: str) -> str:
    # Bytecode written into the throwaway environment: each later command then starts from it
    # rather than compiling what it imports again (make test unsets the variable too).
    unset = ("PYTHONPATH", "VIRTUAL_ENV", "CLAIMTRACE_WORKDIR", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if k not in unset}
    env.update(CLAIMTRACE_DATA=str(Path(data_dir).resolve()), PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}")
    done = subprocess.run(
        [str(venv / "bin" / "claimtrace"), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, f"claimtrace {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_the_wheel_installed_runs_outside_the_repository(tmp_path, data_dir):
    """One test, not one per step: the two processes of make test would each build the wheel."""
    if not UV.is_file():
        pytest.skip(f"{UV} is missing: make env installs it")
    (tmp_path / "dist").mkdir()
    wheel = _build(tmp_path / "dist")
    _check_wheel(wheel)
    installed = tmp_path / "env"
    _install(wheel, installed)
    outside = tmp_path / "elsewhere"
    outside.mkdir()

    where = subprocess.run(
        [str(installed / "bin" / "python"), "-c", "import claimtrace; print(claimtrace.__file__)"],
        cwd=outside, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert Path(where.strip()).is_relative_to(installed) and REPO not in Path(where.strip()).parents

    assert "data" in _claimtrace(installed, outside, data_dir, "--help")
    assert "ok  demo corpus: 5240 distinct sentences" in _claimtrace(installed, outside, data_dir, "data", "check")
    _claimtrace(installed, outside, data_dir, "build", "--demo", "--workdir", "build", "--until", "tagging")
    assert (outside / "build" / "manifest.json").is_file()
    baseline = Path(data_dir).resolve() / "comp90042-2024" / "dev-claims-baseline.json"
    report = json.loads(_claimtrace(installed, outside, data_dir, "evaluate", "--predictions", str(baseline), "--json"))
    assert round(report["HM"], 4) == 0.3441
