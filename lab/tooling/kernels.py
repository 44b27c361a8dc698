"""Notebook kernels that start without ipykernel's "running over TCP without encryption" warning.

ipykernel logs that warning whenever its sockets use the TCP transport, once per kernel, into
the terminal of whoever runs ``lab run`` or ``lab grade``. On POSIX the kernels started here
use the IPC transport (Unix domain sockets, in a private temporary folder that is removed
afterwards), so the warning has no cause; where IPC does not exist (Windows) they stay on TCP.

* :func:`kernel_manager`: a ``jupyter_client`` kernel manager for ``nbclient.NotebookClient(km=...)``
  (``lab run``).
* :func:`ipc_config`: the same settings as a traitlets ``Config``, for code that builds its own
  executor (otter's grader, inside a ``lab grade`` worker).
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["ipc_available", "ipc_config", "kernel_manager"]


def ipc_available() -> bool:
    """Whether ZeroMQ's IPC transport exists here (POSIX)."""
    return os.name == "posix"


def _socket_prefix() -> str:
    """A fresh private folder for the kernel's sockets (removed at exit), and the prefix of the
    socket paths in it. Unix socket paths are short (about 100 bytes): the folder lives in the
    temporary folder (``TMPDIR``: ``lab grade`` gives each submission its own) while its path is
    short, else in ``/tmp``."""
    base = None if len(tempfile.gettempdir()) <= 60 or not os.path.isdir("/tmp") else "/tmp"
    folder = Path(tempfile.mkdtemp(prefix="lab-kernel-", dir=base))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return str(folder / "kernel")


def ipc_config() -> Any:
    """A traitlets ``Config`` that makes every ``KernelManager`` built with it use IPC sockets
    (empty where IPC does not exist)."""
    from traitlets.config import Config

    config = Config()
    if ipc_available():
        config.KernelManager.transport = "ipc"
        config.KernelManager.ip = _socket_prefix()
    return config


def kernel_manager(kernel_name: str = "python3") -> Any:
    """A ``jupyter_client.KernelManager`` for ``kernel_name`` on the IPC transport (TCP where
    IPC does not exist).

    Raises
    ------
    TypeError
        If ``kernel_name`` is not a non-empty string.
    """
    if not isinstance(kernel_name, str) or not kernel_name:
        raise TypeError(f"kernel_name must be a non-empty string (got {kernel_name!r})")
    from jupyter_client.manager import KernelManager

    return KernelManager(kernel_name=kernel_name, config=ipc_config())
