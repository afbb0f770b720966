"""The package as pip builds it: the README's install block works offline, the wheel holds the
package and its metadata, and the code is Python 3.9 importing nothing but the standard library and
cryptography."""

from __future__ import annotations

import ast
import base64
import hashlib
import importlib.util
import os
import subprocess
import sys
import tempfile
import zipfile

from .support import KIT, REPOSITORY, TimedTestCase
from .test_readme import marked_block

sys.path.insert(0, os.path.join(KIT, "build_backend"))
import earshot_build  # noqa: E402 (the in-tree build backend)

PACKAGE = os.path.join(KIT, "earshot_partner")
MODULES = sorted(name for name in os.listdir(PACKAGE) if name.endswith(".py"))
# Debian ships venv's pip installer and pip itself apart (python3-venv, python3-pip).
MISSING = [name for name in ("ensurepip", "pip") if importlib.util.find_spec(name) is None]


class PackagingTest(TimedTestCase):
    timeout = 120.0

    def test_the_readmes_install_block_works_with_no_package_index_reachable(self) -> None:
        if MISSING:
            self.skipTest(f"this Python has no {' or '.join(MISSING)} (apt-get install python3-venv python3-pip)")
        block = marked_block("python-install").replace("/path/to/earshot", REPOSITORY)
        self.assertNotIn("--no-index", block)
        # No pip configuration, and an index that refuses every connection: what a machine without
        # network access meets. The system's cryptography must do.
        env = {name: value for name, value in os.environ.items() if not name.startswith("PIP_")}
        env.update(PIP_CONFIG_FILE=os.devnull, PIP_INDEX_URL="http://127.0.0.1:9/simple",
                   PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_RETRIES="0", PIP_TIMEOUT="5")
        with tempfile.TemporaryDirectory() as directory:
            installed = subprocess.run(["bash", "-e", "-c", block], cwd=directory, env=env, capture_output=True,
                                       text=True, timeout=120)
            self.assertEqual(installed.returncode, 0, installed.stdout + installed.stderr)
            python = os.path.join(directory, ".venv", "bin", "python")
            where = subprocess.run(
                [python, "-c", "import earshot_partner, cryptography; print(earshot_partner.__file__)"],
                cwd=directory, capture_output=True, text=True, timeout=30,
            )
            self.assertEqual(where.returncode, 0, where.stderr)
            self.assertTrue(where.stdout.strip().startswith(os.path.join(directory, ".venv")), where.stdout)

    def test_the_wheel_holds_every_module_its_metadata_and_a_record_that_matches(self) -> None:
        with tempfile.TemporaryDirectory() as directory:
            name = earshot_build.build_wheel(directory)
            self.assertEqual(name, "earshot_partner-0.1.0-py3-none-any.whl")
            with zipfile.ZipFile(os.path.join(directory, name)) as wheel:
                names = set(wheel.namelist())
                for module in MODULES + ["py.typed"]:
                    self.assertIn(f"earshot_partner/{module}", names)
                metadata = wheel.read("earshot_partner-0.1.0.dist-info/METADATA").decode()
                record = wheel.read("earshot_partner-0.1.0.dist-info/RECORD").decode().splitlines()
                for line in record:
                    path, digest, size = line.rsplit(",", 2)
                    if digest:
                        data = wheel.read(path)
                        expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                        self.assertEqual((digest, int(size)), (f"sha256={expected}", len(data)), path)
        self.assertIn("Name: earshot-partner\n", metadata)
        self.assertIn("Requires-Python: >=3.9\n", metadata)
        self.assertIn("Requires-Dist: cryptography>=38\n", metadata)
        self.assertFalse([each for each in names if "__pycache__" in each or each.startswith("tests/")])

    def test_the_backend_reads_pyproject_as_a_toml_parser_does(self) -> None:
        try:
            import tomllib
        except ImportError:
            self.skipTest("tomllib is in the standard library from Python 3.11")
        with open(os.path.join(KIT, "pyproject.toml"), "rb") as file:
            self.assertEqual(earshot_build.read_project(), tomllib.load(file)["project"])

    def test_every_module_is_python_3_9_and_imports_only_the_standard_library_and_cryptography(self) -> None:
        stdlib = getattr(sys, "stdlib_module_names", None)
        for module in MODULES:
            with open(os.path.join(PACKAGE, module), encoding="utf-8") as file:
                tree = ast.parse(file.read(), module, feature_version=(3, 9))
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    roots = [alias.name.split(".")[0] for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0:
                    roots = [(node.module or "").split(".")[0]]
                else:
                    continue
                for root in roots:
                    if stdlib is not None and root not in ("cryptography", "__future__"):
                        self.assertIn(root, stdlib, f"{module} imports {root}")
