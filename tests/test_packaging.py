"""The wheel ships the embedded Adult data and the licence (issue 13)."""

import subprocess
import sys
import zipfile
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
