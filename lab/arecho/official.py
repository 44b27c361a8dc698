"""Parity with the official code: our tokenizer, decoder and loss on the official-code fixture.

``lab/core/official/arecho_official.json`` holds the outputs of four official functions
(``ftshijt/espnet``, branch ``universa_plus``), run in a scratch folder outside this project on
a small shared instance: the metric tokenizer (``create_tokenizer`` of
``train_metric_tokenizer.py``, ``metric2token`` / ``tokenseq2metric`` of
``metric_tokenizer.py``), the two-step search (``ARUniVERSABeamSearch`` at beam 1, both first
steps) scoring a toy decoder whose weights the fixture stores, and UniVERSA's
``masked_l1_loss``. :func:`official_parity` replays them with ours.

See: book/arecho/02-chain-and-decoding.ipynb
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from lab.core.checks import check_instance
from lab.core.fixtures import official_fixture

from .reference import MetricTokenizer

__all__ = ["OFFICIAL_FIXTURE", "official_parity", "OfficialToyDecoder", "official_tokenizer"]

#: the official functions' outputs on a shared instance (``lab/core/official/``)
OFFICIAL_FIXTURE = official_fixture("arecho_official.json")


def _load(path: str | Path | None) -> dict[str, Any]:
    from lab.core.fixtures import load_fixture

    return load_fixture(path, OFFICIAL_FIXTURE)


def _check_fixture(fixture) -> None:
    if not isinstance(fixture, dict) or not {"instance", "outputs"} <= set(fixture):
        raise TypeError("fixture must be the dict of an official-code fixture (instance, outputs)")


def official_tokenizer(fixture: dict[str, Any]) -> MetricTokenizer:
    """Our tokenizer set up as the official one of the fixture: ``token_size - 2`` linear bins
    (the official thresholds include the training minimum and maximum) decoding to the
    lower threshold.

    See: book/arecho/02-chain-and-decoding.ipynb
    """
    _check_fixture(fixture)
    inst = fixture["instance"]
    names = inst["names"]
    labels = np.column_stack([inst["train"][n] for n in names])
    types = ["num" if inst["types"][n] == "numerical" else "cat" for n in names]
    return MetricTokenizer(inst["token_size"] - 2, "linear", "lower").fit(labels, types, names)


def _module():
    import torch

    return torch.nn.Module


class OfficialToyDecoder(_module()):
    """The fixture's toy decoder seen through our vocabulary (a duck-typed ``TinyARECHO``).

    Over the official vocabulary, ``logp(. | prefix, u) = log_softmax(A[prefix[-1]] +
    mean_t B[prefix[t]] + U[u] + mask)``; ``forward`` maps our token ids to the official
    ones, evaluates that at every position and returns the log-probabilities of our
    vocabulary's tokens (the official tokens without a counterpart carry the mask, -1e9, so
    both vocabularies normalise alike). ``encode(x)`` returns ``x``: the features are the
    utterance index ``u``.

    See: book/arecho/02-chain-and-decoding.ipynb
    """

    def __init__(self, fixture: dict[str, Any], tokenizer: MetricTokenizer):
        import torch

        super().__init__()
        _check_fixture(fixture)
        check_instance("tokenizer", tokenizer, MetricTokenizer)
        dec, out = fixture["instance"]["decoder"], fixture["outputs"]
        self.tokenizer = tokenizer
        self.anchor = torch.nn.Parameter(torch.zeros(1))  # the device and dtype probe of decode
        for k in ("A", "B", "U", "mask"):
            self.register_buffer(k, torch.tensor(dec[k], dtype=torch.float64))
        ids = np.zeros(tokenizer.vocab_size, dtype=np.int64)
        ids[:4] = np.arange(4)  # specials: only <sos> (id 2, as ARUniversa sets it) is ever fed
        for j, n in enumerate(tokenizer.names):
            ids[tokenizer.meta_token(j)] = out["meta_ids"][n]
            start, size = tokenizer.block(j)
            # official "n@i" sits at offset + 4 + 1 + i; our bin k is the official index k + 1
            ids[start : start + size] = out["offset"][n][0] + 6 + np.arange(size)
        self.register_buffer("ids", torch.as_tensor(ids))

    def encode(self, features):
        return features

    def forward(self, features, tokens, memory=None):
        import torch

        off = self.ids[tokens]
        u = memory[:, 0].round().long()
        steps = torch.arange(1, tokens.shape[1] + 1, dtype=torch.float64, device=tokens.device)
        mean_b = self.B[off].cumsum(1) / steps[None, :, None]
        logp = (self.A[off] + mean_b + self.U[u][:, None] + self.mask).log_softmax(-1)
        return logp[..., self.ids]


def official_parity(path: str | Path | None = None) -> dict[str, Any]:
    """Replay the fixture with our tokenizer, both decoders and ``masked_l1_loss``.

    Parameters
    ----------
    path : str or Path, optional
        The fixture (default ``OFFICIAL_FIXTURE``).

    Returns
    -------
    dict
        ``threshold_diff`` (largest absolute difference between our edges and the official
        interior thresholds), ``encode`` (``(agree, total)`` over the numerical probe values
        inside or above the training range), ``below_range`` (``(official index 0, ours bin
        0)`` counts for values below it), ``decode_diff`` (largest difference between our
        ``"lower"`` representatives and the official ``tokenseq2metric``), ``categorical``
        (official and our tokens of each class), ``searches`` / ``searches_fast`` /
        ``searches_reference`` (official beam-1 searches and how many our batched and
        one-utterance decoders reproduce token for token), ``values_diff`` (largest
        difference between the decoded values), ``l1_diff`` (masked L1, all metrics and per
        metric: largest absolute difference).

    See: book/arecho/02-chain-and-decoding.ipynb
    """
    fx = _load(path)
    res = _tokenizer_parity(fx)
    res.update(_search_parity(fx))
    res["l1_diff"] = _l1_parity(fx)
    return res


def _tokenizer_parity(fx: dict[str, Any]) -> dict[str, Any]:
    """Thresholds, bins and representatives against the official tokenizer's outputs."""
    inst, out = fx["instance"], fx["outputs"]
    tok = official_tokenizer(fx)
    res: dict[str, Any] = {"threshold_diff": 0.0, "decode_diff": 0.0, "categorical": {}}
    agree = total = below_official = below_ours = n_below = 0
    for j, n in enumerate(inst["names"]):
        base = out["offset"][n][0] + 5  # official id of "n@0"
        probe = np.asarray(inst["probe"][n])
        official_bin = np.asarray(out["encoded"][n]) - base - 1  # -1: index 0 (below the range)
        ours = tok.bin_of(j, probe)
        if tok.types[j] == "num":
            thr = np.asarray(out["thresholds"][n])
            res["threshold_diff"] = max(
                res["threshold_diff"], float(np.max(np.abs(tok.edges[j] - thr[1:-1])))
            )
            below = probe < min(inst["train"][n])
            agree += int(np.sum(official_bin[~below] == ours[~below]))
            total += int(np.sum(~below))
            n_below += int(below.sum())
            below_official += int(np.sum(official_bin[below] == -1))
            below_ours += int(np.sum(ours[below] == 0))
        else:
            res["categorical"][n] = {"official": official_bin.tolist(), "ours": ours.tolist()}
        for t, v in out["decoded_tokens"][n].items():
            k = int(t) - base - 1
            if 0 <= k < tok.sizes[j]:
                ours_v = tok.decode(j, tok.offsets[j] + k)
                res["decode_diff"] = max(res["decode_diff"], abs(ours_v - v))
    res["encode"] = (agree, total)
    res["below_range"] = (below_official, below_ours, n_below)
    return res


def _search_parity(fx: dict[str, Any]) -> dict[str, Any]:
    """The official beam-1 searches replayed by our batched and one-utterance decoders."""
    import torch

    from .fast import decode
    from .reference import decode as decode_reference

    out = fx["outputs"]
    model = OfficialToyDecoder(fx, official_tokenizer(fx))
    fast_ok = ref_ok = 0
    values_diff = 0.0
    for s in out["searches"]:
        mode = "confidence" if s["skip_meta_label_score"] else "meta"
        x = np.array([[float(s["utterance"])]])
        got, seq = decode(model, x, s["query"], mode, return_tokens=True)
        fast_ok += int(model.ids[torch.as_tensor(seq[0])].tolist() == s["yseq"])
        ref = decode_reference(model, x, s["query"], mode)
        ref_ok += int(all(ref[n][0] == got[n][0] for n in s["query"]))
        values_diff = max(values_diff, *(abs(got[n][0] - v) for n, v in s["values"].items()))
    return {
        "searches": len(out["searches"]),
        "searches_fast": fast_ok,
        "searches_reference": ref_ok,
        "values_diff": float(values_diff),
    }


def _l1_parity(fx: dict[str, Any]) -> float:
    """Our masked L1 against the official one, over all metrics and per metric."""
    import torch

    from .models import masked_l1_loss

    inst, out = fx["instance"], fx["outputs"]
    pred = torch.tensor(inst["l1"]["pred"], dtype=torch.float64)
    target = torch.tensor(inst["l1"]["target"], dtype=torch.float64)
    mask = target > inst["l1"]["pad_value"] + 1e-6
    diffs = [abs(float(masked_l1_loss(pred, target, mask)) - out["masked_l1_all"])]
    for j, v in enumerate(out["masked_l1_per_metric"]):
        diffs.append(abs(float(masked_l1_loss(pred[:, j], target[:, j], mask[:, j])) - v))
    return max(diffs)
