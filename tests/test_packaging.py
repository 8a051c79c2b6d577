"""Packaging (issue 13): the wheel ships the Adult data and the licence; one version."""

import json
import subprocess
import sys
import urllib.parse
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_wheel_contains_the_adult_data_and_the_license(tmp_path):
    if not (ROOT / "pyproject.toml").exists():
        pytest.skip("not a source checkout")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(ROOT),
                    "-w", str(tmp_path)], check=True, timeout=600)
    (wheel,) = tmp_path.glob("dpsk-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for data_file in ("adult.data.gz", "adult.test.gz", "README.md"):
        assert f"dpsk/datasets/data/{data_file}" in names
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names)


def test_license_is_bsd_3_clause():
    if not (ROOT / "LICENSE").exists():
        pytest.skip("not a source checkout")
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("BSD 3-Clause License") and "dpsk developers" in text
    assert 'license = "BSD-3-Clause"' in (ROOT / "pyproject.toml").read_text()


def test_version_is_written_once():
    if not (ROOT / "pyproject.toml").exists():
        pytest.skip("not a source checkout")
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"]
    assert project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "dpsk.__version__"}


def _metadata_describes_another_checkout(dist):
    # An editable install of another worktree (PYTHONPATH pointing here) has its own version.
    direct_url = dist.read_text("direct_url.json")
    if not direct_url:
        return False
    info = json.loads(direct_url)
    if not info.get("dir_info", {}).get("editable"):
        return False
    source = Path(urllib.parse.unquote(urllib.parse.urlparse(info["url"]).path))
    return source.resolve() != ROOT


def test_version_matches_installed_metadata():
    import dpsk

    try:
        dist = metadata.distribution("dpsk")
    except metadata.PackageNotFoundError:
        pytest.skip("dpsk is not installed")
    if _metadata_describes_another_checkout(dist):
        pytest.skip("the installed metadata belongs to another checkout")
    assert dpsk.__version__ == dist.version
