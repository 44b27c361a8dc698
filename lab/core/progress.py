"""The progress-bar convention: any loop that can run for more than a few seconds goes
through ``progress``. It is ``tqdm.auto`` (a widget in Jupyter, text in a terminal) with one
switch, ``LAB_PROGRESS=0``, to silence every bar (tests set it)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

__all__ = ["progress", "progress_enabled"]


def progress_enabled() -> bool:
    """False when ``LAB_PROGRESS`` is ``0``/``false``/``no``."""
    return os.environ.get("LAB_PROGRESS", "1").strip().lower() not in ("0", "false", "no", "off")


def progress(
    iterable: Iterable[Any] | None = None,
    *,
    desc: str = "",
    total: int | None = None,
    disable: bool | None = None,
    **kwargs: Any,
):
    """Wrap ``iterable`` in a ``tqdm.auto`` bar (a no-op wrapper when disabled)."""
    from tqdm.auto import tqdm

    if disable is None:
        disable = not progress_enabled()
    return tqdm(iterable, desc=desc, total=total, disable=disable, leave=False, **kwargs)
