"""Build tooling: what ``make`` and the ``lab`` command use, and notebooks never import.

Nothing here is part of a chapter's results: the execution cache does not hash this package,
so editing it never re-executes the book (:mod:`lab.tooling.cache`).

- :mod:`lab.tooling.sphinxext`: the book's Sphinx extension (``_config.yml``), which wires
  :mod:`~lab.tooling.assets` (offline JavaScript and CSS), :mod:`~lab.tooling.pagescripts`
  (per-page scripts) and :mod:`~lab.tooling.benchdirective` (``{optlab-benchmarks}``).
- :mod:`lab.tooling.mime`: the myst-nb mime renderer that draws plotly figures in the book.
- :mod:`lab.tooling.cache`: the execution cache of the book: invalidated when ``lab`` changes,
  prefilled in parallel (``make book``).
- :mod:`lab.tooling.bench`: the benchmark harness of ``benchmarks/bench_<slug>.py``.
- :mod:`lab.tooling.perf`: the performance page built from the benchmark results files.
- :mod:`lab.tooling.grading`: assignments with otter-grader (assign, grade, round-trip).
- :mod:`lab.tooling.colab`: the project's public URL (``_config.yml``) and the Colab install
  cell it generates into every toc notebook (``python -m lab.tooling.colab``).
- :mod:`lab.tooling.site`: the site's 404 page (a Sphinx extension of its own).
- :mod:`lab.tooling.claimsext`: claims in the book (a Sphinx extension of its own): the claim
  cards of the notebooks, ``{claims}`` on chapter pages, ``{scorecard}``, the ``{claim}`` and
  ``{bench}`` roles, and ``_static/claims.json``.
- :mod:`lab.tooling.claimsjson`: ``claims.json`` (schema, environment), and ``lab claims``
  (print a chapter's records, ``--compare`` them with a published ``claims.json``).
"""
