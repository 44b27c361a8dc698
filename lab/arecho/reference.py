"""Reference kernels of ARECHO: the metric tokenizer and the readable two-step decoder.

Equations (numbering is this module's; the paper's text numbers none of them):

* (6) thresholds ``theta_m = percentile(v_train, p_k)``, ``k = 1..T-1`` (deduplicated; the
  "lower" percentile, an actual training value, so repeated values never leave empty bins);
* (7) token of a value ``b(v) = #{i : theta_i <= v}``; a category gets its own token;
* (8) sequence ``<sos>, <m_1>, val(m_1), <m_2>, val(m_2), ...`` in a random order ``pi``;
* (10) two-step decoding: choose the next metric ``m* = argmax_{m in Q \\ written} s(m)``
  then its value ``v* = argmax_{v in block(m*)} log p(v | prefix, <m*>)``.

Deviations from the official code (flagged where they occur): the representative value of a
bin is the median of the training values in it (the official code returns the lower
threshold); there is no per-metric pad token and no ``<eos>`` (decoding is driven by the
query); the spacing names follow the official options but their formulas are ours.

The batched decoder :func:`lab.arecho.fast.decode` is tested against :func:`decode` here.

See: book/arecho/01-degraded-speech-and-tokens.ipynb
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from lab.core.checks import check_array, check_choice, check_int

__all__ = [
    "SPACINGS",
    "MODES",
    "REPRESENTATIVES",
    "DEFAULT_BINS",
    "MetricTokenizer",
    "decode",
]

SPACINGS = ("linear", "normal", "quadratic", "exponential", "logarithmic")
MODES = ("fixed", "random", "meta", "confidence")
REPRESENTATIVES = ("median", "lower")
PAD, UNK, SOS, EOS = 0, 1, 2, 3
N_SPECIAL = 4
DEFAULT_BINS = 500  # the paper's bins per numerical metric


def _percentile_points(n_bins: int, spacing: str) -> np.ndarray:
    """Percentile points in (0, 100) for ``n_bins`` bins under a spacing rule (ours)."""
    u = np.arange(1, n_bins) / n_bins
    if spacing == "linear":
        g = u  # equal-mass bins
    elif spacing == "quadratic":  # denser in the centre
        z = 2 * u - 1
        g = 0.5 + 0.5 * np.sign(z) * z**2
    elif spacing == "normal":  # equal steps in a standard normal's quantiles: centre-dense
        from scipy.stats import norm

        g = norm.cdf((u - 0.5) * 5.0)
    elif spacing == "exponential":  # denser in the lower tail
        g = np.expm1(4 * u) / np.expm1(4)
    else:  # logarithmic: denser in the upper tail
        g = np.log1p(np.expm1(4) * u) / 4
    return 100 * g


class MetricTokenizer:
    """Per-metric value tokens: percentile bins for numbers, one token per category.

    Vocabulary: ``<pad>, <unk>, <sos>, <eos>`` then, per metric, ``[<m>, value tokens...]``;
    each metric's value tokens form a contiguous block (:meth:`block`).

    Parameters
    ----------
    n_bins : int
        Bins per numerical metric (2 to 1024; the paper's default 500); fewer remain when
        percentiles repeat.
    spacing : str
        ``"linear"`` (equal-mass bins), ``"normal"``, ``"quadratic"`` (denser in the centre),
        ``"exponential"`` (lower tail), ``"logarithmic"`` (upper tail).
    representative : str
        The value a bin token decodes to: ``"median"`` (the median of the training values in
        the bin, the book's default: it minimises the absolute error) or ``"lower"`` (the
        bin's lower threshold, the official ``tokenseq2metric``; the lowest bin decodes to the
        training minimum).

    See: book/arecho/01-degraded-speech-and-tokens.ipynb
    """

    def __init__(
        self, n_bins: int = DEFAULT_BINS, spacing: str = "linear", representative: str = "median"
    ):
        self.n_bins = check_int("n_bins", n_bins, 2, 1024)
        self.spacing = check_choice("spacing", spacing, SPACINGS)
        self.representative = check_choice("representative", representative, REPRESENTATIVES)
        self.names: tuple[str, ...] = ()

    # -- fitting --------------------------------------------------------------------------
    def fit(self, labels: Any, types: Sequence[str], names: Sequence[str] | None = None):
        """Fit thresholds (numbers) and category lists on training labels ``(N, M)``.

        ``NaN`` marks a missing label and is ignored. Returns ``self``.
        """
        labels = check_array("labels", labels, ndim=2, finite=False, min_size=1)
        m = labels.shape[1]
        types = tuple(types)
        if len(types) != m or any(t not in ("num", "cat") for t in types):
            raise ValueError(f"types must be {m} entries of 'num'/'cat' (got {types!r})")
        names = tuple(names) if names is not None else tuple(f"m{j}" for j in range(m))
        if len(names) != m or len(set(names)) != m:
            raise ValueError(f"names must be {m} distinct strings (got {names!r})")
        self.names, self.types = names, types
        self.edges, self.values, self.offsets, self.sizes = [], [], [], []
        offset = N_SPECIAL
        for j in range(m):
            v = labels[:, j]
            v = v[np.isfinite(v)]
            if v.size == 0:
                raise ValueError(f"metric {names[j]!r} has no finite training value")
            if types[j] == "num":
                # eq. (arecho-tokenize): thresholds at percentile points, duplicates removed
                # method="lower": every threshold is a training value, so no bin is empty
                pts = _percentile_points(self.n_bins, self.spacing)
                theta = np.unique(np.percentile(v, pts, method="lower"))
                theta = theta[theta > v.min()]  # no empty first bin
                b = np.searchsorted(theta, v, side="right")  # eq. (arecho-tokenize)
                # deviation: representative = median of the training values in the bin
                lo = np.concatenate([[v.min()], theta])
                hi = np.concatenate([theta, [v.max()]])
                rep = np.array(
                    [
                        np.median(v[b == k]) if np.any(b == k) else 0.5 * (lo[k] + hi[k])
                        for k in range(theta.size + 1)
                    ]
                )
                if self.representative == "lower":  # the official code: the lower threshold
                    rep = lo
                self.edges.append(theta)
                self.values.append(rep)
            else:
                cats = np.unique(v)
                self.edges.append(None)
                self.values.append(cats)
            self.offsets.append(offset + 1)  # offset is the meta token <m>
            self.sizes.append(len(self.values[-1]))
            offset += 1 + self.sizes[-1]
        self.vocab_size = offset
        return self

    def _check_fitted(self) -> None:
        if not self.names:
            raise RuntimeError("MetricTokenizer is not fitted; call .fit(labels, types) first")

    def _metric(self, metric: Any) -> int:
        self._check_fitted()
        if isinstance(metric, str):
            if metric not in self.names:
                raise ValueError(f"metric must be one of {list(self.names)} (got {metric!r})")
            return self.names.index(metric)
        return check_int("metric", metric, 0, len(self.names) - 1)

    # -- tokens ---------------------------------------------------------------------------
    def meta_token(self, metric: Any) -> int:
        """Token id of the meta-label ``<m>`` naming ``metric``."""
        return self.offsets[self._metric(metric)] - 1

    def block(self, metric: Any) -> tuple[int, int]:
        """``(start, size)`` of ``metric``'s value tokens in the vocabulary."""
        j = self._metric(metric)
        return self.offsets[j], self.sizes[j]

    def bin_of(self, metric: Any, value: Any) -> np.ndarray:
        """Bin index (0-based, inside the metric's block) of ``value``, eq. (arecho-tokenize)."""
        j = self._metric(metric)
        v = np.atleast_1d(check_array("value", value))
        if self.types[j] == "num":
            return np.searchsorted(self.edges[j], v, side="right")  # eq. (arecho-tokenize)
        cats = self.values[j]
        k = np.searchsorted(cats, v).clip(0, cats.size - 1)
        if not np.all(cats[k] == v):
            bad = v[cats[k] != v][0]
            raise ValueError(
                f"value {bad:g} is not a category of {self.names[j]!r} ({cats.tolist()})"
            )
        return k

    def encode(self, metric: Any, value: Any) -> Any:
        """Token id(s) of ``value`` for ``metric`` (scalar in, int out; array in, array out)."""
        j = self._metric(metric)
        tok = self.offsets[j] + self.bin_of(j, value)
        return int(tok[0]) if np.ndim(value) == 0 else tok

    def decode(self, metric: Any, token: Any) -> Any:
        """Representative value(s) of token(s) of ``metric``; ``ValueError`` outside its block."""
        j = self._metric(metric)
        t = np.atleast_1d(np.asarray(token))
        if not np.issubdtype(t.dtype, np.integer):
            raise TypeError(f"token must be an integer (got {t.dtype})")
        k = t - self.offsets[j]
        if np.any((k < 0) | (k >= self.sizes[j])):
            raise ValueError(
                f"token must lie in [{self.offsets[j]}, {self.offsets[j] + self.sizes[j] - 1}] "
                f"for metric {self.names[j]!r} (got {t[(k < 0) | (k >= self.sizes[j])][0]})"
            )
        out = self.values[j][k]
        return float(out[0]) if np.ndim(token) == 0 else out

    def sequence(self, row: Any, order: Sequence[int] | None = None) -> np.ndarray:
        """Token sequence of one utterance, eq. (arecho-sequence): ``<sos>`` then ``<m>, val``
        pairs.

        ``NaN`` labels are skipped; ``order`` is a permutation of metric indices (default:
        the fitted order).
        """
        self._check_fitted()
        row = check_array("row", row, ndim=1, finite=False)
        m = len(self.names)
        if row.size != m:
            raise ValueError(f"row must have {m} values (got {row.size})")
        order = list(range(m)) if order is None else [self._metric(o) for o in order]
        if sorted(order) != list(range(m)):
            raise ValueError(f"order must be a permutation of range({m}) (got {order})")
        seq = [SOS]
        for j in order:
            if np.isfinite(row[j]):
                seq += [self.meta_token(j), self.encode(j, row[j])]
        return np.array(seq, dtype=np.int64)

    def encode_matrix(self, labels: Any) -> np.ndarray:
        """Value tokens of a label matrix ``(N, M)`` (``PAD`` where a label is ``NaN``)."""
        labels = check_array("labels", labels, ndim=2, finite=False)
        out = np.full(labels.shape, PAD, dtype=np.int64)
        for j in range(labels.shape[1]):
            ok = np.isfinite(labels[:, j])
            if ok.any():
                out[ok, j] = self.encode(j, labels[ok, j])
        return out

    def decode_matrix(self, tokens: Any) -> np.ndarray:
        """Inverse of :meth:`encode_matrix` (``NaN`` for ``PAD``)."""
        tokens = np.asarray(tokens)
        out = np.full(tokens.shape, np.nan)
        for j in range(tokens.shape[1]):
            ok = tokens[:, j] != PAD
            if ok.any():
                out[ok, j] = self.decode(j, tokens[ok, j])
        return out

    def state(self) -> dict[str, Any]:
        """A plain-data description (for checkpoints)."""
        return {
            "n_bins": self.n_bins,
            "spacing": self.spacing,
            "representative": self.representative,
            "names": list(self.names),
        }


# ----------------------------------------------------------------------------------------
# decoding: argument checks shared by reference.decode and the batched fast.decode
# (the model is duck-typed here so that this module never imports models.py)
def _check_query(model, query) -> list[int]:
    tok = model.tokenizer
    if query is None or query == "all":
        return list(range(len(tok.names)))
    if isinstance(query, str):
        query = [query]
    out = [tok._metric(q) for q in query]
    if not out:
        raise ValueError("query must name at least one metric")
    if len(set(out)) != len(out):
        raise ValueError(f"query must not repeat a metric (got {list(query)})")
    return out


def _given_tokens(model, given, n: int) -> list[tuple[int, np.ndarray]]:
    """``[(metric, value tokens (n,)), ...]`` for the ``given`` dict (values or arrays)."""
    if given is None:
        return []
    if not isinstance(given, dict):
        raise TypeError(f"given must be a dict metric -> value(s) (got {type(given).__name__})")
    tok = model.tokenizer
    out = []
    for name, value in given.items():
        j = tok._metric(name)
        v = np.broadcast_to(np.asarray(value, dtype=np.float64), (n,))
        out.append((j, np.asarray(tok.encode(j, v)).reshape(n)))
    return out


def prepare_decoding(model, features, query, mode, given, beam):
    import torch

    if (
        not isinstance(model, torch.nn.Module)
        or not isinstance(getattr(model, "tokenizer", None), MetricTokenizer)
        or not callable(getattr(model, "encode", None))
    ):
        raise TypeError(
            "model must be a TinyARECHO (a torch Module with a fitted MetricTokenizer as "
            f".tokenizer and an encode method; got {type(model).__name__})"
        )
    mode = check_choice("mode", mode, MODES)
    beam = check_int("beam", beam, 1, 1)  # deviation: greedy only (B = 1) in the book
    dev = next(model.parameters()).device
    if isinstance(features, torch.Tensor):
        x = features.to(dev, torch.float32)
    else:
        x = torch.as_tensor(
            check_array("features", features, ndim=(1, 2)), dtype=torch.float32, device=dev
        )
    if x.ndim == 1:
        x = x[None]
    q = _check_query(model, query)
    g = _given_tokens(model, given, x.shape[0])
    q = [j for j in q if j not in {j for j, _ in g}]
    return x, q, g


def read_sequences(tok: MetricTokenizer, seq: np.ndarray, skip: int) -> dict[int, np.ndarray]:
    b = seq.shape[0]
    out: dict[int, np.ndarray] = {}
    metas = {tok.meta_token(j): j for j in range(len(tok.names))}
    for pos in range(skip, seq.shape[1], 2):
        for r in range(b):
            j = metas[int(seq[r, pos])]
            out.setdefault(j, np.full(b, np.nan))[r] = tok.decode(j, int(seq[r, pos + 1]))
    return out


def decode(
    model, features, query: Any = "all", mode: str = "confidence", given=None, *, seed: int = 0
) -> dict[str, np.ndarray]:
    """One utterance and one candidate at a time: the readable two-step search,
    eqs. (arecho-step1)-(arecho-candidate) with B = 1.

    Same arguments and result as :func:`lab.arecho.fast.decode` (greedy); used to test the
    batched path.

    See: book/arecho/02-chain-and-decoding.ipynb
    """
    import torch

    x, q, g = prepare_decoding(model, features, query, mode, given, 1)
    tok = model.tokenizer
    rng = np.random.default_rng(seed)
    keys = rng.random((x.shape[0], len(q)))
    results = {tok.names[j]: np.full(x.shape[0], np.nan) for j in q}
    with torch.no_grad():
        for i in range(x.shape[0]):
            mem = model.encode(x[i : i + 1])
            seq = [SOS]
            for j, vt in g:
                seq += [tok.meta_token(j), int(vt[i])]

            def next_logp(prefix, mem=mem):
                t = torch.tensor([prefix], device=x.device)
                return model(None, t, memory=mem)[0, -1].log_softmax(-1)

            remaining = list(range(len(q)))
            while remaining:
                if mode == "fixed":
                    k = remaining[0]
                elif mode == "random":
                    k = max(remaining, key=lambda r: keys[i, r])
                elif mode == "meta":  # step 1: the most probable meta-label token
                    lp = next_logp(seq)
                    k = max(remaining, key=lambda r: float(lp[tok.meta_token(q[r])]))
                else:  # confidence: the metric whose best value is most probable

                    def best(r, seq=seq):
                        s, n = tok.block(q[r])
                        return float(next_logp(seq + [tok.meta_token(q[r])])[s : s + n].max())

                    k = max(remaining, key=best)
                j = q[k]
                seq.append(tok.meta_token(j))
                s, n = tok.block(j)
                v = s + int(next_logp(seq)[s : s + n].argmax())  # step 2: masked argmax
                seq.append(v)
                results[tok.names[j]][i] = tok.decode(j, v)
                remaining.remove(k)
    return results
