"""The program that runs inside a submission's sandbox (``python -m lab.tooling.gradeworker``).

It reads one JSON message from standard input (the notebook's code cells, the test programs of
:mod:`lab.tooling.gradeschema`, the limits), caps its own address space and CPU time
(``RLIMIT_AS``, ``RLIMIT_CPU``: inherited by every process the notebook starts), then runs the
cells in an in-process IPython shell (no Jupyter kernel, no sockets) and each test program in the
notebook's namespace, recording what the programs hand to ``__lab_case__``/``__lab_check__``.
The record goes back as JSON on the file descriptor ``--fd N``; everything the notebook prints goes to
standard output, which the grader reads in bounded chunks.

Nothing here is trusted: the notebook runs in this process and may replace any of it. It can
only change its own answers (the grader compares them with expected values it never sees).
"""

from __future__ import annotations

import json
import os
import sys
import types

__all__ = ["main"]

CHANNEL_FD = 3


def _limits(memory_mb: float, cpu_s: float) -> None:
    import resource

    if memory_mb > 0:
        limit = int(memory_mb * 2**20)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    if cpu_s > 0:
        resource.setrlimit(resource.RLIMIT_CPU, (int(cpu_s), int(cpu_s) + 5))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _otter_stub() -> None:
    """``import otter``/``grader.check(...)`` of a student notebook: no-ops here."""

    class Notebook:
        def __init__(self, *args, **kwargs):
            pass

        def __getattr__(self, name):
            return lambda *a, **k: None

    mod = types.ModuleType("otter")
    mod.Notebook = Notebook
    sys.modules["otter"] = mod
    selfcheck = types.ModuleType("lab.tooling.selfcheck")
    selfcheck.checker = lambda *a, **k: Notebook()
    sys.modules["lab.tooling.selfcheck"] = selfcheck


ATTEMPTS: list[list[str]] = []  # [question, symbol] of each forbidden call


def _forbid(symbols: list[list[str]]) -> None:
    """Replace ``module.name`` by a function that raises when the student's code calls it."""
    import importlib

    for question, dotted in symbols:
        module, _, name = dotted.rpartition(".")
        try:
            mod = importlib.import_module(module)
            original = getattr(mod, name)
        except (ImportError, AttributeError):
            continue

        def stub(*args, _orig=original, _name=dotted, _q=question, **kwargs):
            frame = sys._getframe(1)
            while frame is not None:
                if frame.f_code.co_filename.startswith("<ipython-input"):
                    if [_q, _name] not in ATTEMPTS:
                        ATTEMPTS.append([_q, _name])
                    raise RuntimeError(
                        f"forbidden: {_q} asks you to write this yourself; "
                        f"{_name} is not available to your code"
                    )
                frame = frame.f_back
            return _orig(*args, **kwargs)

        setattr(mod, name, stub)


def _reseed() -> None:
    import random

    random.seed(0)
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed(0)
    if "torch" in sys.modules:
        sys.modules["torch"].manual_seed(0)


def _run_program(code: str, name: str, ns: dict, reference: bool, encode) -> dict:
    events: list[dict] = []

    def case(got, expected=None, label="", rtol=1e-9, atol=1e-12, msg=""):
        event = {"kind": "close", "got": encode(got)}
        if reference:
            event |= {"expected": encode(expected), "name": str(label)}
            event |= {"rtol": float(rtol), "atol": float(atol), "msg": str(msg)}
        events.append(event)

    def check(value, line=0):
        events.append({"kind": "check", "ok": bool(value), "line": int(line)})

    ns["__lab_case__"], ns["__lab_check__"] = case, check
    _reseed()
    try:
        exec(compile(code, f"<test {name}>", "exec"), ns)  # noqa: S102 - the test program
    except BaseException as err:  # noqa: BLE001 - a failed test, whatever it raised
        return {"error": type(err).__name__, "message": str(err)[:2000], "events": events}
    return {"events": events}


def main(argv: list[str] | None = None) -> int:
    """Run the notebook and its tests (see the module docstring); exit status 0."""
    argv = sys.argv[1:] if argv is None else argv
    fd = int(argv[argv.index("--fd") + 1]) if "--fd" in argv else CHANNEL_FD
    channel = os.fdopen(fd, "w")
    os.set_inheritable(fd, False)
    message = json.loads(sys.stdin.buffer.read())
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    _limits(float(message.get("memory_mb", 0)), float(message.get("cpu_s", 0)))
    os.environ.update({"MPLBACKEND": "Agg", "LAB_PROGRESS": "0", "PYTHONHASHSEED": "0"})
    from lab.tooling.gradeschema import encode

    reference = bool(message.get("reference"))
    _otter_stub()
    if message.get("forbidden"):
        _forbid(message["forbidden"])
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance(colors="NoColor")
    report: dict = {"cells": [], "exit_cell": None, "results": {}}
    for i, source in enumerate(message["cells"]):
        result = shell.run_cell(source, store_history=False, silent=False)
        err = result.error_in_exec or result.error_before_exec
        if err is not None:
            report["cells"].append([i, type(err).__name__])
            if isinstance(err, SystemExit) and report["exit_cell"] is None:
                report["exit_cell"] = i
        sys.stdout.flush()
    for key, code in message["programs"].items():
        report["results"][key] = _run_program(code, key, shell.user_ns, reference, encode)
    sys.stdout.flush()
    report["forbidden"] = ATTEMPTS
    channel.write(json.dumps(report))
    channel.flush()
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)  # no atexit hook of the notebook's runs after the record is written
