"""The artifact store: what a chapter trains or records once and the notebooks load.

Every stored artifact (model weights, a recorded run, a solved reference) is written with a
provenance block and read back safely:

- :func:`save_weights` / :func:`load_weights`: a dict of tensors plus a plain ``meta`` dict,
  through ``torch.save`` and ``torch.load(..., weights_only=True)`` (no pickled code runs on
  load).
- :func:`save_json` / :func:`load_json`: plain data, one JSON file.
- :func:`provenance`: what made an artifact (the ``lab artifacts build`` command with its
  arguments, ``lab``'s and torch's versions, the date, the numerics fingerprint's CPU and
  library lines). :func:`building` tells it the arguments of the build in progress.

A missing artifact raises ``FileNotFoundError`` naming the one command that rebuilds it,
``lab artifacts build <slug>/<name>`` (``lab.tooling.artifacts`` lists them all).
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime as _dt
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = [
    "build_command",
    "building",
    "load_json",
    "load_weights",
    "provenance",
    "save_json",
    "save_weights",
]

#: the artifact being built by ``lab artifacts build`` and its command-line arguments
_BUILDING: contextvars.ContextVar[tuple[str, tuple[str, ...]] | None] = contextvars.ContextVar(
    "lab_artifact_build", default=None
)


@contextlib.contextmanager
def building(artifact: str, args: list[str] | tuple[str, ...] = ()) -> Iterator[None]:
    """Inside the block, :func:`provenance` of ``artifact`` records ``args`` (the build's
    command-line arguments) unless it is given others."""
    build_command(artifact, args)  # validates both
    token = _BUILDING.set((artifact, tuple(args)))
    try:
        yield
    finally:
        _BUILDING.reset(token)


def build_command(artifact: str, args: list[str] | tuple[str, ...] = ()) -> str:
    """The command that (re)builds ``artifact`` (``"<slug>/<name>"``) with ``args``."""
    if not isinstance(artifact, str) or artifact.count("/") != 1:
        raise ValueError(f"artifact must be '<slug>/<name>' (got {artifact!r})")
    if isinstance(args, str) or not all(isinstance(a, str) for a in args):
        raise TypeError("args must be a list of strings (command-line arguments)")
    tail = (" -- " + " ".join(args)) if args else ""
    return f"lab artifacts build {artifact}{tail}"


def provenance(artifact: str, args: list[str] | tuple[str, ...] | None = None) -> dict[str, Any]:
    """What made an artifact: command, versions, date and the machine's numerics.

    ``args`` default: the arguments of the :func:`building` block of ``artifact`` in progress
    (none outside one)."""
    import platform

    if args is None:
        current = _BUILDING.get()
        args = current[1] if current is not None and current[0] == artifact else ()

    from lab import __version__
    from lab.core.numerics import fingerprint

    out = {
        "command": build_command(artifact, args),
        "lab": __version__,
        "python": platform.python_version(),
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d"),
    }
    try:
        import torch

        out["torch"] = str(torch.__version__)
    except ImportError:  # pragma: no cover - torch is a dependency
        pass
    fp = fingerprint()
    out["numerics"] = {k: fp[k] for k in ("cpu", "mode", "key") if k in fp}
    return json.loads(json.dumps(out, default=str))


def _path(path: str | os.PathLike, name: str = "path") -> Path:
    if not isinstance(path, str | os.PathLike):
        raise TypeError(f"{name} must be a file path (got {type(path).__name__})")
    return Path(path)


def _missing(path: Path, artifact: str) -> FileNotFoundError:
    return FileNotFoundError(
        f"no stored {artifact} at {path}; rebuild it with `{build_command(artifact)}`"
    )


def save_weights(path: str | os.PathLike, payload: dict, meta: dict, artifact: str) -> Path:
    """Write ``payload`` (tensors, dicts of tensors, plain values) and ``meta`` to ``path``.

    ``meta`` is reduced to plain JSON types (so the weights-only loader accepts it) and gets
    a ``provenance`` entry (:func:`provenance`) unless it has one.
    """
    import torch

    path = _path(path)
    if not isinstance(payload, dict) or "meta" in payload:
        raise TypeError("payload must be a dict without a 'meta' key")
    if not isinstance(meta, dict):
        raise TypeError(f"meta must be a dict (got {type(meta).__name__})")
    meta = json.loads(json.dumps(meta, default=str))
    meta.setdefault("provenance", provenance(artifact))
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({**payload, "meta": meta}, path)
    return path


def load_weights(path: str | os.PathLike, artifact: str) -> dict:
    """The stored dict at ``path`` (``torch.load(..., weights_only=True)``, on the CPU)."""
    import torch

    path = _path(path)
    if not path.exists():
        raise _missing(path, artifact)
    return torch.load(path, map_location="cpu", weights_only=True)


def save_json(path: str | os.PathLike, data: dict, artifact: str, indent: int | None = 1) -> Path:
    """Write ``data`` (plain types) to ``path`` with a ``provenance`` entry unless it has one."""
    path = _path(path)
    if not isinstance(data, dict):
        raise TypeError(f"data must be a dict (got {type(data).__name__})")
    data = {**data}
    data.setdefault("provenance", provenance(artifact))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=indent) + "\n")
    return path


def load_json(path: str | os.PathLike, artifact: str) -> Any:
    """The stored JSON at ``path``."""
    path = _path(path)
    if not path.exists():
        raise _missing(path, artifact)
    return json.loads(path.read_text())
