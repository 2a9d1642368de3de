# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""The build backend of the hlock package (PEP 517), standard library only.

pyproject.toml names it (backend-path ["."]), so that `pip install
./lib/python` builds the wheel without downloading a build system, and
`make wheel` calls build_wheel() directly.  The package is pure Python:
the wheel holds hlock/ and its metadata, from pyproject.toml's [project]
table (PEP 621), with the version of lib/VERSION and the description of
the package's docstring.  Archives are reproducible: their entries are
sorted and dated SOURCE_DATE_EPOCH (default 1980-01-01).
"""

from __future__ import annotations

import ast
import base64
import hashlib
import io
import os
import tarfile
import time
import zipfile
from typing import Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = "hlock"


def _project() -> dict:
    try:
        import tomllib
    except ImportError as e:  # Python before 3.11
        raise RuntimeError("building hlock needs Python 3.11 (tomllib)") from e
    with open(os.path.join(HERE, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)["project"]


def _version() -> str:
    """lib/VERSION in the tree; VERSION beside this file in an sdist."""
    for path in (os.path.join(HERE, "..", "VERSION"),
                 os.path.join(HERE, "VERSION")):
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                return f.read().strip()
    raise RuntimeError("no VERSION file: neither lib/VERSION nor VERSION")


def _package_files() -> List[str]:
    """The package's files, relative to this directory, sorted."""
    out = []
    for name in sorted(os.listdir(os.path.join(HERE, PACKAGE))):
        if name.endswith(".py") or name == "py.typed":
            out.append(PACKAGE + "/" + name)
    return out


def _metadata(project: dict, version: str) -> str:
    with open(os.path.join(HERE, PACKAGE, "__init__.py"),
              encoding="utf-8") as f:
        doc = ast.get_docstring(ast.parse(f.read())) or ""
    lines = [
        "Metadata-Version: 2.1",
        "Name: %s" % project["name"],
        "Version: %s" % version,
        "Summary: %s" % project["description"],
    ]
    for author in project.get("authors", []):
        lines.append("Author: %s" % author["name"])
    if "license" in project:
        lines.append("License: %s" % project["license"]["text"])
    if "requires-python" in project:
        lines.append("Requires-Python: %s" % project["requires-python"])
    for dep in project.get("dependencies", []):
        lines.append("Requires-Dist: %s" % dep)
    for c in project.get("classifiers", []):
        lines.append("Classifier: %s" % c)
    lines.append("Description-Content-Type: text/plain")
    return "\n".join(lines) + "\n\n" + doc + "\n"


def _date() -> Tuple[int, int, int, int, int, int]:
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))
    return time.gmtime(max(epoch, 315532800))[:6]


def _digest(data: bytes) -> str:
    d = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(d).rstrip(b"=").decode()


def get_requires_for_build_wheel(config_settings: Optional[Dict] = None
                                 ) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: Optional[Dict] = None
                                 ) -> List[str]:
    return []


def build_wheel(wheel_directory: str,
                config_settings: Optional[Dict] = None,
                metadata_directory: Optional[str] = None) -> str:
    """Write NAME-VERSION-py3-none-any.whl into wheel_directory."""
    project = _project()
    version = _version()
    name = project["name"]
    dist_info = "%s-%s.dist-info" % (name, version)
    wheel = "%s-%s-py3-none-any.whl" % (name, version)
    entries = []
    for rel in _package_files():
        with open(os.path.join(HERE, rel), "rb") as f:
            entries.append((rel, f.read()))
    entries.append((dist_info + "/METADATA",
                    _metadata(project, version).encode()))
    entries.append((dist_info + "/WHEEL", (
        "Wheel-Version: 1.0\n"
        "Generator: hlock_build\n"
        "Root-Is-Purelib: true\n"
        "Tag: py3-none-any\n").encode()))
    entries.append((dist_info + "/top_level.txt", (PACKAGE + "\n").encode()))
    record = io.StringIO()
    for rel, data in entries:
        record.write("%s,%s,%d\n" % (rel, _digest(data), len(data)))
    record.write("%s/RECORD,,\n" % dist_info)
    entries.append((dist_info + "/RECORD", record.getvalue().encode()))
    os.makedirs(wheel_directory, exist_ok=True)
    path = os.path.join(wheel_directory, wheel)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for rel, data in entries:
            info = zipfile.ZipInfo(rel, _date())
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return wheel


def build_sdist(sdist_directory: str,
                config_settings: Optional[Dict] = None) -> str:
    """Write NAME-VERSION.tar.gz, with VERSION beside pyproject.toml."""
    project = _project()
    version = _version()
    base = "%s-%s" % (project["name"], version)
    files = ["pyproject.toml", "hlock_build.py"] + _package_files()
    os.makedirs(sdist_directory, exist_ok=True)
    path = os.path.join(sdist_directory, base + ".tar.gz")
    mtime = max(int(os.environ.get("SOURCE_DATE_EPOCH", "315532800")),
                315532800)

    def add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
        info = tarfile.TarInfo(base + "/" + name)
        info.size = len(data)
        info.mtime = mtime
        info.mode = 0o644
        tar.addfile(info, io.BytesIO(data))

    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for rel in files:
            with open(os.path.join(HERE, rel), "rb") as f:
                add(tar, rel, f.read())
        add(tar, "VERSION", (version + "\n").encode())
        add(tar, "PKG-INFO", _metadata(project, version).encode())
    return base + ".tar.gz"
