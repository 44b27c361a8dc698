"""Command line: ``python -m lab assign <slug>`` | ``grade <slug> <notebook>`` | ``exercises <slug>``."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab", description="optlab classroom tools")
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser(
        "assign", help="write the student notebook and autograder into _build/assign/<slug>/"
    )
    p.add_argument("slug")
    p = sub.add_parser("grade", help="grade a notebook with a chapter's autograder")
    p.add_argument("slug")
    p.add_argument("notebook")
    p = sub.add_parser(
        "exercises", help="regenerate book/<slug>/exercises.ipynb (the book's student page)"
    )
    p.add_argument("slug")
    args = parser.parse_args(argv)

    from .core import grading

    if args.cmd == "assign":
        build = grading.assign(args.slug)
        print(f"student notebook: {build.student}\nautograder:       {build.autograder}")
    elif args.cmd == "grade":
        from pathlib import Path

        zips = sorted((grading.ROOT / "_build" / "assign" / args.slug / "autograder").glob("*.zip"))
        autograder = zips[-1] if zips else grading.assign(args.slug).autograder
        result = grading.grade(autograder, Path(args.notebook).resolve())
        for q, (s, m) in result["questions"].items():
            print(f"{q}: {s:g} / {m:g}")
        print(f"total: {result['score']:g} / {result['max']:g}")
    elif args.cmd == "exercises":
        print(grading.exercise_page(args.slug))
    return 0


if __name__ == "__main__":
    sys.exit(main())
