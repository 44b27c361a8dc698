"""lab.tooling.paths: the one place that finds the checkout (no module counts parent folders)."""

from __future__ import annotations

import re

from lab.tooling import paths

ROOT = paths.ROOT


def test_the_checkout_is_found_from_the_package():
    assert paths.is_checkout(ROOT)
    assert (ROOT / "lab" / "tooling" / "paths.py").is_file()


def test_lab_root_overrides_and_a_bare_folder_is_not_a_checkout(tmp_path, monkeypatch):
    assert not paths.is_checkout(tmp_path)
    monkeypatch.setenv("LAB_ROOT", str(tmp_path))
    assert paths.find_root() == tmp_path.resolve()


def test_a_checkout_around_the_start_is_found(tmp_path, monkeypatch):
    """A wheel installed outside any checkout finds the one around the current directory."""
    monkeypatch.delenv("LAB_ROOT", raising=False)
    monkeypatch.setattr(
        paths, "__file__", str(tmp_path / "site-packages" / "lab" / "tooling" / "paths.py")
    )
    for d in ("lab", "book", "deep/er"):
        (tmp_path / "proj" / d).mkdir(parents=True)
    (tmp_path / "proj" / "pyproject.toml").write_text("[project]\nname = 'optlab'\n")
    assert paths.find_root(tmp_path / "proj" / "deep" / "er") == (tmp_path / "proj").resolve()
    assert paths.find_root(tmp_path) == tmp_path.resolve()


def test_no_module_counts_parent_folders():
    pattern = re.compile(r"parents\[\d\]")
    found = [
        str(p.relative_to(ROOT))
        for p in sorted((ROOT / "lab").rglob("*.py"))
        if pattern.search(p.read_text())
    ]
    assert not found, f"resolve files through lab.tooling.paths.ROOT, not parents[N]: {found}"
