"""A PEP 517 (and PEP 660) build backend made of the standard library alone.

pip builds a package in an isolated environment into which it installs the backend's requirements;
this one has none, so ``pip install ./kits/python`` needs no network access (beyond the dependency,
``cryptography``, when it is not installed yet). It packs the one pure-Python package, earshot_partner.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile
from typing import Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "earshot_partner"
TAG = "py3-none-any"


def read_project(path: str = os.path.join(ROOT, "pyproject.toml")) -> dict:
    """The [project] table: strings and single-line lists of strings, all pyproject.toml uses.

    tomllib is not in the standard library before Python 3.11.
    """
    project: dict = {}
    section = None
    with open(path, encoding="utf-8") as file:
        for line in file:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            header = re.fullmatch(r"\[([^\]]+)\]", line)
            if header:
                section = header.group(1)
                continue
            if section != "project":
                continue
            key, _, value = (part.strip() for part in line.partition("="))
            if value.startswith("["):
                project[key] = re.findall(r'"([^"]*)"', value)
            else:
                project[key] = value.strip('"')
    return project


def _names(project: dict) -> tuple:
    name = re.sub(r"[-_.]+", "_", project["name"]).lower()
    return name, project["version"], f"{name}-{project['version']}"


def _metadata(project: dict) -> str:
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {project['name']}",
        f"Version: {project['version']}",
        f"Summary: {project['description']}",
        f"License: {project['license']}",
        f"Requires-Python: {project['requires-python']}",
        *(f"Requires-Dist: {each}" for each in project.get("dependencies", [])),
        "Description-Content-Type: text/markdown",
    ]
    with open(os.path.join(ROOT, project["readme"]), encoding="utf-8") as file:
        return "\n".join(lines) + "\n\n" + file.read()


def _package_files() -> list:
    """(path in the archive, path on disk) of every file of the package, caches left out."""
    found = []
    for directory, subdirectories, files in os.walk(os.path.join(ROOT, PACKAGE)):
        subdirectories[:] = sorted(each for each in subdirectories if each != "__pycache__")
        for name in sorted(files):
            if name.endswith((".py", ".typed")):
                on_disk = os.path.join(directory, name)
                found.append((os.path.relpath(on_disk, ROOT).replace(os.sep, "/"), on_disk))
    return found


def _write_wheel(directory: str, contents: list) -> str:
    """A wheel of (archive path, bytes) plus its dist-info; returns the wheel's file name."""
    project = read_project()
    name, _, stem = _names(project)
    dist_info = f"{stem}.dist-info"
    wheel = f"Wheel-Version: 1.0\nGenerator: earshot_build\nRoot-Is-Purelib: true\nTag: {TAG}\n"
    contents = contents + [
        (f"{dist_info}/METADATA", _metadata(project).encode("utf-8")),
        (f"{dist_info}/WHEEL", wheel.encode("utf-8")),
        (f"{dist_info}/top_level.txt", f"{PACKAGE}\n".encode("utf-8")),
    ]
    record = [f"{path},sha256={_digest(data)},{len(data)}" for path, data in contents]
    record.append(f"{dist_info}/RECORD,,")
    file_name = f"{stem}-{TAG}.whl"
    with zipfile.ZipFile(os.path.join(directory, file_name), "w", zipfile.ZIP_DEFLATED) as archive:
        for path, data in contents:
            archive.writestr(_entry(path), data)
        archive.writestr(_entry(f"{dist_info}/RECORD"), ("\n".join(record) + "\n").encode("utf-8"))
    return file_name


def _entry(path: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0))
    info.external_attr = 0o644 << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    return info


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")


def _read(path: str) -> bytes:
    with open(path, "rb") as file:
        return file.read()


# PEP 517


def get_requires_for_build_wheel(config_settings: Optional[dict] = None) -> list:
    return []


def get_requires_for_build_sdist(config_settings: Optional[dict] = None) -> list:
    return []


def get_requires_for_build_editable(config_settings: Optional[dict] = None) -> list:
    return []


def build_wheel(wheel_directory: str, config_settings: Optional[dict] = None,
                metadata_directory: Optional[str] = None) -> str:
    return _write_wheel(wheel_directory, [(path, _read(disk)) for path, disk in _package_files()])


def build_editable(wheel_directory: str, config_settings: Optional[dict] = None,
                   metadata_directory: Optional[str] = None) -> str:
    """PEP 660: a wheel whose .pth file puts this folder on sys.path."""
    return _write_wheel(wheel_directory, [(f"__editable__.{PACKAGE}.pth", (ROOT + "\n").encode("utf-8"))])


def build_sdist(sdist_directory: str, config_settings: Optional[dict] = None) -> str:
    project = read_project()
    _, _, stem = _names(project)
    files = [(path, _read(disk)) for path, disk in _package_files()]
    for path in ("pyproject.toml", project["readme"], "build_backend/earshot_build.py"):
        files.append((path, _read(os.path.join(ROOT, path))))
    files.append(("PKG-INFO", _metadata(project).encode("utf-8")))
    file_name = f"{stem}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, file_name), "w:gz") as archive:
        for path, data in files:
            info = tarfile.TarInfo(f"{stem}/{path}")
            info.size, info.mode = len(data), 0o644
            archive.addfile(info, io.BytesIO(data))
    return file_name
