"""One sandbox per submission, with bubblewrap (``bwrap``), and the limits the grader enforces.

:func:`run` starts ``python -m lab.tooling.gradeworker`` inside a bubblewrap sandbox:

* new PID, network, IPC, UTS, user and mount namespaces: the notebook sees only its own
  processes, a loopback-less network, a fresh ``/proc``, and runs as ``nobody``;
* a read-only view of the system (``/usr``, ``/etc``), of this Python and its virtual
  environment, and of the ``lab`` package: nothing else of the host. The class folder, the
  autograder zip, the solution and the book's masters are not visible; the submission arrives on
  standard input, its working folder (``/sandbox``) and ``/tmp`` are private tmpfs mounts that
  vanish with the sandbox;
* ``--die-with-parent``: if ``lab grade`` dies (even ``SIGKILL``), the sandbox is killed with
  everything it started, double-forked daemons included (the PID namespace ends with its init);
* limits: wall time (``timeout``), total resident memory of all the sandbox's processes (polled
  every 100 ms, the sandbox is killed beyond ``memory_mb``), per-process ``RLIMIT_AS`` and
  ``RLIMIT_CPU`` (set by the worker before any student code runs), output read in 64 KiB
  chunks of which ``KEEP_OUTPUT`` bytes are kept (the sandbox is killed past ``max_output_mb``),
  and the result channel (file descriptor 3) capped at ``MAX_CHANNEL`` bytes.

:func:`check_sandbox` says whether bubblewrap can run here, and why not. ``unsandboxed=True``
runs the same worker as a plain child process (same limits, no isolation).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["KEEP_OUTPUT", "MAX_CHANNEL", "Limits", "Result", "check_sandbox", "command", "run"]

KEEP_OUTPUT = 2**20  # bytes of the notebook's output kept for the instructor
MAX_CHANNEL = 64 * 2**20  # bytes of answers the worker may send back
POLL_S = 0.1


@dataclass
class Limits:
    """``timeout`` (s, wall clock), ``memory_mb`` (all processes together; 0: off),
    ``process_memory_mb`` (address space per process; 0: off), ``cpu_s`` (CPU seconds per
    process; 0: off), ``max_output_mb`` (what the notebook may print)."""

    timeout: float = 300.0
    memory_mb: float = 8192.0
    process_memory_mb: float = 8192.0
    cpu_s: float = 600.0
    max_output_mb: float = 5.0

    def __post_init__(self):
        for name in ("timeout", "memory_mb", "process_memory_mb", "cpu_s", "max_output_mb"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"{name} must be a number (got {value!r})")
            if not value >= (1 if name == "timeout" else 0):
                raise ValueError(
                    f"{name} must be >= {1 if name == 'timeout' else 0} (got {value!r})"
                )


@dataclass
class Result:
    returncode: int | None
    channel: bytes
    output: bytes  # the first KEEP_OUTPUT bytes
    output_bytes: int
    seconds: float
    peak_mb: float
    timed_out: bool = False
    memory_exceeded: bool = False
    output_exceeded: bool = False
    channel_exceeded: bool = False
    stopped: bool = False


def _binds() -> list[str]:
    """The host paths the sandbox sees, read-only."""
    import lab

    paths = {
        Path(os.path.realpath(sys.base_prefix)),
        Path(sys.prefix),
        Path(lab.__file__).resolve().parent,
    }
    venv_python = Path(sys.executable)
    with contextlib.suppress(OSError):
        paths.add(Path(os.path.realpath(venv_python)).parent.parent)
    args: list[str] = []
    for top in ("usr", "bin", "lib", "lib64", "sbin", "lib32", "libx32"):
        p = Path("/") / top
        if p.is_symlink():
            args += ["--symlink", os.readlink(p), str(p)]
        elif p.is_dir():
            args += ["--ro-bind", str(p), str(p)]
    args += ["--ro-bind", "/etc", "/etc"]
    for p in sorted(paths, key=lambda p: len(p.parts)):
        if p.is_dir() and not any(str(p).startswith(t) for t in ("/usr/", "/etc/")):
            args += ["--ro-bind", str(p), str(p)]
    return args


def command(argv: list[str]) -> list[str]:
    """The ``bwrap`` command line that runs ``argv`` in a sandbox (see the module docstring).

    Raises
    ------
    TypeError
        If ``argv`` is not a non-empty list of strings.
    """
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        raise TypeError(f"argv must be a non-empty list of strings (got {argv!r})")
    bwrap = shutil.which("bwrap") or "bwrap"
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": "/tmp",
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "MPLCONFIGDIR": "/tmp/matplotlib",
        "LAB_PROGRESS": "0",
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
    }
    cmd = [bwrap, "--unshare-all", "--unshare-user", "--uid", "65534", "--gid", "65534"]
    cmd += ["--die-with-parent", "--new-session", "--clearenv"]
    # the private /tmp first: a grader's venv or lab under /tmp is bound on top of it (mounted
    # after the binds, the tmpfs hid them and the sandbox could not start Python)
    cmd += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/sandbox"]
    cmd += _binds()
    cmd += ["--dir", "/tmp/matplotlib", "--chdir", "/sandbox"]
    for k, v in env.items():
        cmd += ["--setenv", k, v]
    return [*cmd, "--", *argv]


_CHECK: tuple[bool, str] | None = None


def check_sandbox(*, refresh: bool = False) -> tuple[bool, str]:
    """``(True, how)`` if a bubblewrap sandbox starts here, else ``(False, why not)``."""
    global _CHECK
    if _CHECK is not None and not refresh:
        return _CHECK
    if not sys.platform.startswith("linux"):
        _CHECK = (False, f"bubblewrap needs Linux (this is {sys.platform})")
        return _CHECK
    if shutil.which("bwrap") is None:
        _CHECK = (False, "bwrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)")
        return _CHECK
    probe = "import os, socket; print(os.getpid(), os.getuid(), len(os.listdir('/proc')))"
    try:
        done = subprocess.run(
            command([sys.executable, "-S", "-c", probe]),
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        _CHECK = (False, f"bwrap did not start: {err}")
        return _CHECK
    if done.returncode != 0:
        why = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no message"]
        _CHECK = (
            False,
            f"bwrap cannot create its namespaces here (exit status {done.returncode}: {why[0]}; "
            "unprivileged user namespaces may be disabled, or a container forbids them)",
        )
        return _CHECK
    pid, uid, _ = done.stdout.split()
    version = subprocess.run([shutil.which("bwrap"), "--version"], capture_output=True, text=True)
    _CHECK = (True, f"{version.stdout.strip()}: pid {pid} in its own namespace, uid {uid}")
    return _CHECK


def _tree(proc) -> list:
    import psutil

    try:
        root = psutil.Process(proc.pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def _rss_mb(procs) -> float:
    total = 0
    for p in procs:
        with contextlib.suppress(Exception):
            total += p.memory_info().rss
    return total / 2**20


def _kill(proc, procs) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, 9)
    for p in procs:
        with contextlib.suppress(Exception):
            p.kill()
    with contextlib.suppress(Exception):
        proc.kill()


def run(
    argv: list[str],
    stdin: bytes,
    limits: Limits,
    *,
    unsandboxed: bool = False,
    stop: threading.Event | None = None,
) -> Result:
    """Run ``argv`` (a Python command line) sandboxed, feed it ``stdin``, enforce ``limits``.

    ``argv`` gets ``--fd N`` appended: file descriptor N is the result channel
    (:attr:`Result.channel`). Setting ``stop`` (an event) kills the sandbox
    (:attr:`Result.stopped`). Never raises for what the command does; every process it started is gone when this returns.

    Raises
    ------
    TypeError
        If an argument is of the wrong type.
    RuntimeError
        If the sandbox cannot start here (:func:`check_sandbox` says why).
    """
    if not isinstance(stdin, bytes):
        raise TypeError(f"stdin must be bytes (got {type(stdin).__name__})")
    if not isinstance(limits, Limits):
        raise TypeError(f"limits must be a Limits (got {limits!r})")
    work = None
    chan_r, chan_w = os.pipe()
    os.set_inheritable(chan_w, True)
    argv = [*argv, "--fd", str(chan_w)]
    if unsandboxed:
        work = tempfile.mkdtemp(prefix="lab-grade-")
        cmd = list(argv)
        env = {**os.environ, "TMPDIR": work, "HOME": work, "MPLBACKEND": "Agg", "LAB_PROGRESS": "0"}
        cwd = work
    else:
        ok, why = check_sandbox()
        if not ok:
            raise RuntimeError(f"no sandbox: {why}")
        cmd, env, cwd = command(argv), {"PATH": "/usr/bin:/bin"}, "/"
    start = time.monotonic()
    out = {"kept": bytearray(), "total": 0, "channel": bytearray(), "chan_over": False}
    try:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=cwd,
            pass_fds=(chan_w,),
            start_new_session=True,
        )
    finally:
        os.close(chan_w)
    try:
        return _watch(proc, chan_r, stdin, limits, out, start, stop)
    finally:
        with contextlib.suppress(OSError):
            os.close(chan_r)
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)


def _watch(proc, chan_r, stdin: bytes, limits: Limits, out: dict, start: float, stop) -> Result:
    max_output = limits.max_output_mb * 2**20

    def feed():
        with contextlib.suppress(OSError, ValueError):
            proc.stdin.write(stdin)
        with contextlib.suppress(OSError, ValueError):
            proc.stdin.close()

    def drain_output():
        while chunk := proc.stdout.read1(65536):
            out["total"] += len(chunk)
            room = KEEP_OUTPUT - len(out["kept"])
            if room > 0:
                out["kept"] += chunk[:room]

    def drain_channel():
        with os.fdopen(chan_r, "rb", closefd=False) as f:
            while chunk := f.read1(65536):
                if len(out["channel"]) + len(chunk) > MAX_CHANNEL:
                    out["chan_over"] = True
                    continue
                out["channel"] += chunk

    threads = [threading.Thread(target=t, daemon=True) for t in (feed, drain_output, drain_channel)]
    for t in threads:
        t.start()
    flags = {"timed_out": False, "memory_exceeded": False, "output_exceeded": False}
    flags["stopped"] = False
    peak, procs = 0.0, []
    try:
        while proc.poll() is None:
            procs = _tree(proc) or procs
            rss = _rss_mb(procs)
            peak = max(peak, rss)
            reason = None
            if stop is not None and stop.is_set():
                reason = "stopped"
            elif time.monotonic() - start > limits.timeout:
                reason = "timed_out"
            elif limits.memory_mb and rss > limits.memory_mb:
                reason = "memory_exceeded"
            elif limits.max_output_mb and out["total"] > max_output:
                reason = "output_exceeded"
            if reason:
                flags[reason] = True
                _kill(proc, procs)
                break
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=POLL_S)
    finally:
        # the sandbox's init is gone: its namespace goes with it; kill what is left regardless
        _kill(proc, procs + _tree(proc))
        proc.wait()
    for t in threads[1:]:
        t.join(timeout=10)
    if limits.max_output_mb and out["total"] > max_output:
        flags["output_exceeded"] = True
    return Result(
        proc.returncode,
        bytes(out["channel"]),
        bytes(out["kept"]),
        out["total"],
        round(time.monotonic() - start, 1),
        round(peak, 1),
        channel_exceeded=out["chan_over"],
        **flags,
    )
