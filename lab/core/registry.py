"""A chapter's claims, registered before any notebook measures them.

A converted chapter keeps its claims in ``lab/<slug>/claims.py``: each claim's statement,
source, the paper's value, rule, expected verdict, the seeds and size it is measured at, the
paper's margin (one number, with where it comes from) and the disclosed revisions. The notebook
then declares nothing: it asks the registry for its notebook's claims and records each in one
line where the number is computed::

    # lab/eos/claims.py
    from lab.core import claims
    from lab.core.registry import Spec, registry

    CLAIMS = registry(
        "eos",
        Spec("subcritical-xy", "GD leaves the unstable region ...", notebook="01",
             source="Thm 5.1", rule=claims.rule(reproduced=claims.holds()),
             expect="reproduced", seeds=(0,), size="T = 2,000 steps"),
    )

    # book/eos/01-three-regimes.ipynb
    from lab.eos.claims import CLAIMS
    C = CLAIMS.chapter("01", full=FULL)
    ...
    C["subcritical-xy"].record(subcritical_holds(run), control=...)

The registry is the source; records are checked against it (``tests/test_registry.py``), and
its :meth:`Registry.snapshot` is compared with the one committed at the last release
(``tests/fixtures/registry/<slug>.json``): a claim whose rule, seeds, size or expected verdict
changed since then must carry a new ``revised`` entry (date, old, new, what was known).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .claims import Chapter, Rule, chapter

__all__ = ["Registry", "Spec", "registry"]

_NOTEBOOK = re.compile(r"^\d\d$")


@dataclass(frozen=True)
class Spec:
    """One registered claim (the arguments of :meth:`lab.core.claims.Chapter.claim`, plus where
    and how it is measured).

    Parameters
    ----------
    id, statement, source, rule, expect, paper, expect_full, revised
        As :meth:`lab.core.claims.Chapter.claim`.
    notebook
        The two-digit prefix of the notebook that records it (``"01"``).
    seeds
        The registered seeds (before any seed shift), or ``()`` for a deterministic claim.
    size
        The default size in words ("T = 2,000 steps; 3 starts").
    paper_margin
        The paper's margin for this claim (one number, in the measured quantity's units), or
        None; ``paper_margin_source`` says where it comes from ("Table 2").
    rival
        The claim's nearest rival in one sentence: what the control is and why it is the
        nearest (the reproduction page's "Rivals" list); the notebook records it as a control.
    no_rival
        Instead of ``rival``: why no honest rival exists at our size (counted on the scorecard).
    equivalence
        The equivalence margin (> 0, the measured quantity's units) registered before the run:
        a rival measured with paired differences inside it is "as good";
        ``equivalence_source`` says how it was set ("half of Table 2's gap").
    """

    id: str
    statement: str
    notebook: str
    source: str
    rule: Rule
    expect: str
    paper: str = ""
    expect_full: str | None = None
    seeds: tuple[int, ...] = ()
    size: str = ""
    paper_margin: float | None = None
    paper_margin_source: str = ""
    revised: tuple[dict, ...] = field(default=())
    rival: str = ""
    no_rival: str = ""
    equivalence: float | None = None
    equivalence_source: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.notebook, str) or not _NOTEBOOK.match(self.notebook):
            raise ValueError(
                f"notebook must be a two-digit prefix such as '01', got {self.notebook!r}"
            )
        if not isinstance(self.rule, Rule):
            raise TypeError(
                f"rule must be a Rule (claims.rule(...)), got {type(self.rule).__name__}"
            )
        seeds = tuple(self.seeds)
        if not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds):
            raise TypeError(f"seeds must be integers, got {self.seeds!r}")
        if len(set(seeds)) != len(seeds):
            raise ValueError(f"seeds must be distinct, got {self.seeds!r}")
        object.__setattr__(self, "seeds", seeds)
        object.__setattr__(self, "revised", tuple(dict(r) for r in self.revised))
        if self.paper_margin is not None and not self.paper_margin_source:
            raise ValueError(f"claim {self.id!r}: a paper_margin needs its paper_margin_source")
        for name in ("rival", "no_rival", "equivalence_source"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"claim {self.id!r}: {name} must be a string")
        if self.rival and self.no_rival:
            raise ValueError(f"claim {self.id!r}: give rival or no_rival, not both")
        if self.equivalence is not None and not self.equivalence_source:
            raise ValueError(f"claim {self.id!r}: an equivalence margin needs equivalence_source")

    def snapshot(self) -> dict[str, Any]:
        """What a revision must disclose when it changes: the registered fields, as text."""
        return {
            "statement": self.statement,
            "source": self.source,
            "rule": self.rule.text,
            "expect": self.expect,
            "seeds": list(self.seeds),
            "size": self.size,
            "paper_margin": self.paper_margin,
            "equivalence": self.equivalence,
            "revisions": len(self.revised),
        }


@dataclass(frozen=True)
class Registry:
    """A chapter's registered claims (see the module)."""

    slug: str
    specs: dict[str, Spec]
    deviations: dict[str, str] = field(default_factory=dict)

    def __getitem__(self, cid: str) -> Spec:
        try:
            return self.specs[cid]
        except KeyError:
            raise KeyError(f"chapter {self.slug!r} registers no claim {cid!r}") from None

    def notebooks(self) -> tuple[str, ...]:
        """The notebooks that record claims, in order."""
        return tuple(sorted({s.notebook for s in self.specs.values()}))

    def chapter(self, notebook: str, *, full: bool = False, display: bool = True) -> Chapter:
        """A claim recorder for one run of ``notebook`` with its claims declared, in registry
        order: ``C[id].record(...)``."""
        if notebook not in self.notebooks():
            raise ValueError(
                f"notebook must be one of {list(self.notebooks())} (the notebooks of chapter "
                f"{self.slug!r} that record claims), got {notebook!r}"
            )
        C = chapter(self.slug, full=full, display=display)
        for s in self.specs.values():
            if s.notebook == notebook:
                C.claim(
                    s.id,
                    s.statement,
                    source=s.source,
                    rule=s.rule,
                    expect=s.expect,
                    paper=s.paper,
                    expect_full=s.expect_full,
                    revised=s.revised,
                    equivalence=s.equivalence,
                    no_rival=s.no_rival,
                    deviations=tuple(self.deviations),
                )
        return C

    def snapshot(self) -> dict[str, dict]:
        """Every claim's :meth:`Spec.snapshot`, by id (committed at a release)."""
        return {cid: s.snapshot() for cid, s in self.specs.items()}

    def unrevised_changes(self, released: dict[str, dict]) -> list[str]:
        """Claims whose registered fields differ from the ``released`` snapshot without a new
        revision entry (a claim new since the release is not a change)."""
        if not isinstance(released, dict):
            raise TypeError(f"released must be a snapshot dict, got {type(released).__name__}")
        out = []
        for cid, now in self.snapshot().items():
            then = released.get(cid)
            if then is None:
                continue
            changed = [k for k in now if k != "revisions" and now[k] != then.get(k)]
            if changed and now["revisions"] <= then.get("revisions", 0):
                out.append(f"{self.slug}/{cid}: {', '.join(changed)} changed without a revision")
        return out


def registry(slug: str, *specs: Spec, deviations: dict[str, str] | None = None) -> Registry:
    """A chapter's registry from its specs (ids unique; checked like a declaration).

    ``deviations`` maps a short name ("float64-for-float32") to one sentence: what the chapter
    does differently from the paper and why. The reproduction page renders them
    (``{deviations}``); a ``deviation`` diagnosis must name one."""
    if not isinstance(slug, str) or not re.match(r"^[a-z][a-z0-9_]*$", slug):
        raise ValueError(f"slug must be a chapter slug such as 'eos', got {slug!r}")
    out: dict[str, Spec] = {}
    for s in specs:
        if not isinstance(s, Spec):
            raise TypeError(f"a registry holds Spec entries, got {type(s).__name__}")
        if s.id in out:
            raise ValueError(f"claim id {s.id!r} is registered twice in chapter {slug!r}")
        out[s.id] = s
    # declare each once, unshown, so that a bad id, statement or expected verdict fails at import
    probe = chapter(slug, display=False)
    for s in out.values():
        probe.claim(
            s.id, s.statement, source=s.source, rule=s.rule, expect=s.expect, paper=s.paper,
            expect_full=s.expect_full, revised=s.revised, equivalence=s.equivalence,
            no_rival=s.no_rival,
        )  # fmt: skip
    devs = dict(deviations or {})
    for k, v in devs.items():
        if not isinstance(k, str) or not re.match(r"^[a-z0-9][a-z0-9-]*$", k):
            raise ValueError(f"a deviation's name must be lowercase words with dashes, got {k!r}")
        if not isinstance(v, str) or not v.strip():
            raise ValueError(f"deviation {k!r} needs a sentence saying what differs and why")
    return Registry(slug, out, devs)
