"""``python -m lab.splitfed``: record the gloo timelines that notebook 3 loads.

See: book/splitfed/03-stragglers-and-gloo.ipynb
"""

from __future__ import annotations

if __name__ == "__main__":
    from lab.splitfed.dist import record_runs

    res = record_runs()
    for r in res["runs"]:
        print(
            r["tau"], r["order"], f"{r['seconds']:.2f} s", f"busy {r['server_busy_fraction']:.2f}"
        )
