"""``HaloLinear``: an ``nn.Linear`` whose three matmuls follow HALO level 0, 1 or 2.

Forward ``Y = Q(XH) Q(WH)ᵀ`` (levels 1, 2; ``Q(X) Q(W)ᵀ`` at level 0); backward
``E_X = [Q(E_Y) Q(WH)] Hᵀ`` (level 1), ``H_bᵀ [Q(H_b E_Y) Q(WH)] Hᵀ`` (level 2, the tokens
zero-padded to a Hadamard size and un-padded), ``G = [Q(E_Y)ᵀ Q(XH)] Hᵀ``; see
:mod:`lab.halo.reference` for the same products written out (:func:`halo_products`, which
the tests hold this layer to) and the chapter for what is reconstructed. This module imports
torch (``lab.halo`` loads it on first use of ``HaloLinear``).

:func:`halo_linear` is the functional form; with ``qweight`` it takes an already rotated and
quantized weight ``Q(WH)`` (what HQ-FSDP's all-gather delivers, :mod:`lab.halo.hqfsdp`) and
feeds it to the products directly, with no float copy of ``W``.

See: book/halo/03-quantized-finetune.ipynb
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from lab.core.checks import check_bool, check_choice, check_int, check_range, replace_fields

from .fast import qmatmul  # real INT8/FP8 GEMMs on CUDA with exact=False, else exact
from .formats import QTensor
from .hadamard import check_size, is_hadamard_size, next_hadamard_size
from .reference import LINEAR_GRANULARITIES, check_fmt, fwht, lowp_matmul, quantize_operand

__all__ = [
    "HaloConfig",
    "HaloLinear",
    "LoRAHaloLinear",
    "halo_linear",
    "halo_wrap",
    "ChannelGain",
    "inject_massive_activations",
]


@dataclass(frozen=True)
class HaloConfig:
    """How a HALO layer runs its three products, validated once when it is made.

    Parameters
    ----------
    level : int
        0 (no rotation), 1 (forward middle rotation + right rotations in backward) or 2
        (HALO-1 plus the left rotation of ``E_Y`` over the tokens; the tokens are
        zero-padded to a Hadamard size and un-padded).
    fmt : str or None
        ``"int8"``, ``"fp8_e4m3"``, ``"fp6_e2m3"``, ``"fp6_e3m2"``, ``"fp4_e2m1"``; ``None``
        disables the quantization (the layer then equals ``nn.Linear`` up to rounding).
    granularity : str
        ``"tensor"`` (HALO's kernels), ``"row"`` (SwitchBack-style scales on the outer
        dims of each product) or ``"block32"`` (Jetfire-style tiles).
    clip_ratio : float
        In ``(0, 1]``; see :func:`lab.halo.quantize`.
    save_quantized : bool
        Store ``Q(XH)`` (1 byte per element) for backward instead of ``XH``
        (per-tensor scales only).
    exact : bool
        ``True``: simulated GEMMs with exact accumulation; ``False`` on CUDA: real INT8 /
        FP8 GEMMs where available.

    See: book/halo/03-quantized-finetune.ipynb
    """

    level: int = 2
    fmt: str | None = "int8"
    granularity: str = "tensor"
    clip_ratio: float = 1.0
    save_quantized: bool = True
    exact: bool = True

    def __post_init__(self) -> None:
        checked = {
            "level": check_int("level", self.level, 0, 2),
            "fmt": check_fmt(self.fmt),
            "granularity": check_choice("granularity", self.granularity, LINEAR_GRANULARITIES),
            "clip_ratio": check_range("clip_ratio", self.clip_ratio, 0.0, 1.0, low_inclusive=False),
            "save_quantized": check_bool("save_quantized", self.save_quantized),
            "exact": check_bool("exact", self.exact),
        }
        for name, value in checked.items():
            object.__setattr__(self, name, value)

    def replace(self, **changes) -> HaloConfig:
        """A copy with ``changes`` (validated again)."""
        return replace_fields(self, changes)


def _config(config, options: dict) -> HaloConfig:
    """``config`` (a :class:`HaloConfig` or None) with the keyword ``options`` applied."""
    if config is None:
        return HaloConfig(**options)
    if not isinstance(config, HaloConfig):
        raise TypeError(f"config must be a HaloConfig or None (got {type(config).__name__})")
    return config.replace(**options) if options else config


class _HaloMatmul(torch.autograd.Function):
    """``Y = X Wᵀ`` with HALO's rotations and quantizers (no bias)."""

    @staticmethod
    def forward(ctx, x, weight, cfg: HaloConfig, qweight=None):
        level, fmt, gran, clip = cfg.level, cfg.fmt, cfg.granularity, cfg.clip_ratio
        save_quantized, exact = cfg.save_quantized, cfg.exact
        rot = level >= 1
        Xr = fwht(x, dim=-1) if rot else x  # XH (HALO-1/2)
        ctx.cfg = (level, fmt, gran, clip, exact, x.dtype)
        if qweight is not None:  # HQ-FSDP: the gathered Q(WH) is the operand itself
            qX = quantize_operand(Xr, fmt, gran, clip, "a")
            ctx.save_for_backward(qX.codes, qX.scale, qweight.codes, qweight.scale)
            ctx.mode = "quantized"
            ctx.meta = (qX, qweight)
            return qmatmul(qX, qweight, True, exact=exact).to(x.dtype)  # Y = Q(XH) Q(WH)ᵀ
        Wr = fwht(weight, dim=-1) if rot else weight  # WH
        if fmt is None:
            ctx.save_for_backward(Xr, Wr)
            ctx.mode = "exact"
            return Xr @ Wr.T
        qX = quantize_operand(Xr, fmt, gran, clip, "a")  # Q(XH): scales on the tokens (outer)
        qW = quantize_operand(Wr, fmt, gran, clip, "a")  # Q(WH): rows = outer dim of Y
        y = qmatmul(qX, qW, True, exact=exact)  # eq.: Y = Q(XH) Q(WH)ᵀ
        if save_quantized and gran == "tensor":  # reuse Q(XH), Q(WH) in backward
            ctx.save_for_backward(qX.codes, qX.scale, qW.codes, qW.scale)
            ctx.mode = "quantized"
            ctx.meta = (qX, qW)
        else:  # per-row scales are illegal for G's and E_X's inner dims: re-quantize
            ctx.save_for_backward(Xr, Wr)
            ctx.mode = "float"
        return y.to(x.dtype)

    @staticmethod
    def backward(ctx, gy):
        level, fmt, gran, clip, exact, dtype = ctx.cfg
        rot = level >= 1
        if ctx.mode == "quantized":
            cX, sX, cW, sW = ctx.saved_tensors
            q0, w0 = ctx.meta
            qX = QTensor(cX, sX, fmt, gran, q0.shape, q0.dtype)
            qW = QTensor(cW, sW, fmt, gran, w0.shape, w0.dtype)

            def mm_w(A):  # Q(A) Q(WH), with the stored Q(WH) as the k×q operand
                return qmatmul(quantize_operand(A, fmt, gran, clip, "a"), qW, False, exact=exact)

            def mm_x(A):  # Q(A) Q(XH)
                return qmatmul(quantize_operand(A, fmt, gran, clip, "a"), qX, False, exact=exact)
        else:
            Xr, Wr = ctx.saved_tensors

            def mm_w(A):
                return lowp_matmul(A.to(Wr.dtype), Wr, fmt, gran, clip, exact)

            def mm_x(A):
                return lowp_matmul(A.to(Xr.dtype), Xr, fmt, gran, clip, exact)

        gx = gw = None
        if ctx.needs_input_grad[0]:
            if level == 2:  # E_X = H_bᵀ [Q(H_b E_Y) Q(WH)] Hᵀ
                b = gy.shape[0]
                bp = next_hadamard_size(b)
                E = gy if bp == b else torch.nn.functional.pad(gy, (0, 0, 0, bp - b))
                gx = fwht(mm_w(fwht(E, dim=0)), dim=0, inverse=True)[:b]  # zero rows: exact
            else:  # E_X = Q(E_Y) Q(WH)  (HALO-1: times Hᵀ below)
                gx = mm_w(gy)
            if rot:
                gx = fwht(gx, dim=-1, inverse=True)  # undo H over the in-features
            gx = gx.to(dtype)
        if ctx.needs_input_grad[1]:
            gw = mm_x(gy.T)  # G = Q(E_Y)ᵀ Q(XH)
            if rot:
                gw = fwht(gw, dim=-1, inverse=True)  # ... Hᵀ
            gw = gw.to(dtype)
        return gx, gw, None, None


def _apply(x, weight, bias, cfg: HaloConfig, qweight):
    lead = x.shape[:-1]
    x2 = x.reshape(-1, x.shape[-1])
    w = weight.to(x.dtype)
    y = _HaloMatmul.apply(x2, w, cfg, qweight)
    if bias is not None:
        y = y + bias.to(x.dtype)
    return y.reshape(*lead, y.shape[-1])


def halo_linear(
    x,
    weight,
    bias=None,
    config: HaloConfig | None = None,
    *,
    qweight: QTensor | None = None,
    **options,
):
    """``y = x Wᵀ + b`` with HALO's three products (the functional form of :class:`HaloLinear`).

    Parameters
    ----------
    x : torch.Tensor
        ``(..., m)`` float input.
    weight : torch.Tensor
        ``(n, m)``. With ``qweight`` its values are not read: it only receives the weight
        gradient ``G`` (pass the full-size parameter, or a zero tensor that requires grad).
    bias : torch.Tensor, optional
    config : HaloConfig, optional
        The level, format and quantizer settings (default: ``HaloConfig()``, HALO-2 INT8).
    options
        Fields of :class:`HaloConfig` (``level=``, ``fmt=``, ...) overriding ``config``'s.
    qweight : QTensor, optional
        The weight already rotated and quantized, ``Q(WH)`` for levels 1 and 2 (``Q(W)`` for
        level 0), per-tensor, in ``fmt`` and of ``weight``'s shape: HQ-FSDP's gathered weight,
        fed to the forward and the ``E_X`` products as is.

    Returns
    -------
    torch.Tensor
        ``(..., n)``.

    See: book/halo/03-quantized-finetune.ipynb
    """
    if not isinstance(x, torch.Tensor) or not isinstance(weight, torch.Tensor):
        raise TypeError("x and weight must be torch tensors")
    if x.dtype not in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        raise TypeError(f"x must be a float tensor (got {x.dtype})")
    if weight.ndim != 2 or x.ndim < 1 or x.shape[-1] != weight.shape[1]:
        raise ValueError(
            f"weight must be (n, m) with m = x.shape[-1] (got x {tuple(x.shape)}, "
            f"weight {tuple(weight.shape)})"
        )
    cfg = _config(config, options)
    fmt = cfg.fmt
    if cfg.level >= 1:
        check_size("in-features (x.shape[-1])", x.shape[-1])
    if qweight is not None:
        if not isinstance(qweight, QTensor):
            raise TypeError(f"qweight must be a QTensor (got {type(qweight).__name__})")
        if fmt is None or qweight.fmt != fmt or qweight.granularity != "tensor":
            raise ValueError(
                f"qweight must be per-tensor in fmt = {fmt!r} (got {qweight.fmt!r}, "
                f"{qweight.granularity!r})"
            )
        if cfg.granularity != "tensor":
            raise ValueError("qweight needs granularity='tensor'")
        if tuple(qweight.shape) != tuple(weight.shape):
            raise ValueError(
                f"qweight.shape {tuple(qweight.shape)} must equal weight.shape "
                f"{tuple(weight.shape)}"
            )
    return _apply(x, weight, bias, cfg, qweight)


class HaloLinear(nn.Linear):
    """An ``nn.Linear`` whose three matmuls follow HALO level 0, 1 or 2 in low precision.

    Parameters
    ----------
    in_features, out_features : int
        As ``nn.Linear``; ``in_features`` must be a Hadamard size for levels 1 and 2.
    config : HaloConfig, optional
        The level (0, 1, 2), format and quantizer settings (default: HALO-2 INT8).
    bias, device, dtype
        As ``nn.Linear``.
    options
        Fields of :class:`HaloConfig` (``level=``, ``fmt=``, ``granularity=``,
        ``clip_ratio=``, ``save_quantized=``, ``exact=``) overriding ``config``'s.

    The bias, the optimizer and everything outside the three products stay in the
    parameters' precision. Inputs may have any number of leading dims (flattened to
    tokens).

    See: book/halo/03-quantized-finetune.ipynb
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        config: HaloConfig | None = None,
        *,
        bias: bool = True,
        device=None,
        dtype=None,
        **options,
    ):
        check_int("in_features", in_features, 1)
        check_int("out_features", out_features, 1)
        cfg = _config(config, options)
        if cfg.level >= 1 and not is_hadamard_size(in_features):
            check_size("in_features", in_features)
        super().__init__(in_features, out_features, bias=bias, device=device, dtype=dtype)
        self.config = cfg

    # the config's fields, read as the layer's attributes (``layer.level``, ``layer.fmt``)
    level = property(lambda self: self.config.level)
    fmt = property(lambda self: self.config.fmt)
    granularity = property(lambda self: self.config.granularity)
    clip_ratio = property(lambda self: self.config.clip_ratio)
    save_quantized = property(lambda self: self.config.save_quantized)
    exact = property(lambda self: self.config.exact)

    @classmethod
    def from_linear(cls, lin, **cfg):
        """A ``HaloLinear`` sharing ``lin``'s weight and bias parameters (``cfg``: the
        keyword arguments of the constructor).

        See: book/halo/03-quantized-finetune.ipynb
        """
        if not isinstance(lin, nn.Linear):
            raise TypeError(f"lin must be an nn.Linear (got {type(lin).__name__})")
        new = cls(
            lin.in_features,
            lin.out_features,
            bias=lin.bias is not None,
            device="meta",
            **cfg,
        )
        new.weight = lin.weight
        new.bias = lin.bias
        return new

    def forward(self, x):
        if x.dtype not in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
            raise TypeError(f"x must be a float tensor (got {x.dtype})")
        if x.shape[-1] != self.in_features:
            raise ValueError(
                f"x.shape[-1] must be in_features = {self.in_features} (got {x.shape[-1]})"
            )
        return _apply(x, self.weight, self.bias, self.config, None)

    def extra_repr(self) -> str:
        return (
            f"{super().extra_repr()}, level={self.level}, fmt={self.fmt}, "
            f"granularity={self.granularity}"
        )


class LoRAHaloLinear(nn.Module):
    """HALO-PEFT: a frozen ``HaloLinear`` plus a trainable low-rank adapter in full precision.

    ``y = HaloLinear(x) + (alpha / r) · B A dropout(x)`` with ``A`` (``r × in``, Kaiming-uniform)
    and ``B`` (``out × r``, zeros: the layer starts equal to the base). The base weight and
    bias are frozen, so its backward computes only ``E_X`` (no weight gradient ``G``); the
    small LoRA matmuls stay in the parameters' precision, as in HALO-PEFT.

    Parameters
    ----------
    base : torch.nn.Linear
        The layer to adapt (its parameters are shared and frozen).
    r : int
        Adapter rank (HALO's scripts: 16).
    alpha : float
        Scale numerator (HALO's scripts: 8).
    dropout : float
        Dropout on the adapter's input, in ``[0, 1)`` (HALO's scripts: 0.1).
    halo_kwargs
        Keyword arguments of :class:`HaloLinear` (``level``, ``fmt``, ...).

    See: book/halo/03-quantized-finetune.ipynb
    """

    def __init__(self, base, r: int = 16, alpha: float = 8.0, dropout: float = 0.1, **halo_kwargs):
        super().__init__()
        if not isinstance(base, nn.Linear):
            raise TypeError(f"base must be an nn.Linear (got {type(base).__name__})")
        r = check_int("r", r, 1, min(base.in_features, base.out_features))
        self.alpha = check_range("alpha", alpha, 0.0, None, low_inclusive=False)
        p = check_range("dropout", dropout, 0.0, 1.0, high_inclusive=False)
        self.r = r
        self.base = (
            base if isinstance(base, HaloLinear) else HaloLinear.from_linear(base, **halo_kwargs)
        )
        for prm in self.base.parameters():
            prm.requires_grad_(False)
        w = self.base.weight
        self.lora_A = nn.Parameter(torch.empty(r, base.in_features, dtype=w.dtype, device=w.device))
        self.lora_B = nn.Parameter(
            torch.zeros(base.out_features, r, dtype=w.dtype, device=w.device)
        )
        nn.init.kaiming_uniform_(self.lora_A, a=5**0.5)
        self.drop = nn.Dropout(p)

    def forward(self, x):
        adapter = self.drop(x) @ self.lora_A.T @ self.lora_B.T  # high precision
        return self.base(x) + (self.alpha / self.r) * adapter


def halo_wrap(model, cfg: dict | None = None, include=None, exclude=None, **kwargs):
    """Replace the ``nn.Linear`` modules of ``model`` in place by :class:`HaloLinear`.

    Parameters
    ----------
    model : torch.nn.Module
    cfg : dict, optional
        Keyword arguments of ``HaloLinear`` (``level``, ``fmt``, ...); ``kwargs`` are merged in.
    include : sequence of str, optional
        Only linears whose qualified name ends with one of these (e.g. ``("q_proj", "fc1")``);
        default: every ``nn.Linear`` (``HaloLinear`` modules are left alone).
    exclude : sequence of str, optional
        Leave alone (full precision) every linear whose qualified name contains one of these,
        as the official ``wrap_model(model, config, exceptions=["classifier", "lm_head"])``
        does; default: none.

    Returns
    -------
    torch.nn.Module
        ``model`` itself (parameters are shared, so optimizers keep working).

    See: book/halo/03-quantized-finetune.ipynb
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module (got {type(model).__name__})")
    if cfg is not None and not isinstance(cfg, dict):
        raise TypeError(f"cfg must be a dict or None (got {type(cfg).__name__})")
    cfg = {**(cfg or {}), **kwargs}
    cls = HaloLinear
    names = {}
    for arg, val in (("include", include), ("exclude", exclude)):
        if val is not None:
            if isinstance(val, str) or not all(isinstance(v, str) for v in val):
                raise TypeError(f"{arg} must be a sequence of str (got {val!r})")
            val = tuple(val)
        names[arg] = val
    include, exclude = names["include"], names["exclude"] or ()
    for name, mod in list(model.named_modules()):
        for child_name, child in list(mod.named_children()):
            full = f"{name}.{child_name}" if name else child_name
            if type(child) is not nn.Linear or any(e in full for e in exclude):
                continue
            if include is None or full.endswith(include):
                setattr(mod, child_name, cls.from_linear(child, **cfg))
    return model


class ChannelGain(nn.Module):
    """A fixed per-channel gain ``y = x · g`` (a buffer, not a parameter), as the gain of an
    RMSNorm: where :func:`inject_massive_activations` puts the massive channels.

    Parameters
    ----------
    features : int
        Number of channels (the last dim of the input); the gain starts at ones.

    See: book/halo/03-quantized-finetune.ipynb
    """

    def __init__(self, features: int):
        super().__init__()
        features = check_int("features", features, 1)
        self.register_buffer("gain", torch.ones(features))

    def forward(self, x):
        return x * self.gain.to(x.dtype)

    def extra_repr(self) -> str:
        return f"features={self.gain.numel()}"


def inject_massive_activations(model, layer: int, channels, scale: float):
    """Function-preserving rescale that creates "massive activation" channels without
    weight outliers.

    Multiplies entries ``channels`` of the ``layer``-th :class:`ChannelGain` of ``model`` (a
    fixed gain after a nonlinearity, as an RMSNorm gain) by ``scale`` and folds the gain out
    of the next ``nn.Linear``: its matching input columns are divided by ``scale``. The
    network's function is unchanged; the activations entering that linear have ``len(channels)``
    channels ``scale`` times larger than the rest, while no weight gets larger (the layer
    before the gain is untouched, the folded columns get smaller).

    Parameters
    ----------
    model : torch.nn.Module
        Holds at least ``layer + 1`` :class:`ChannelGain` modules, each followed (in
        ``modules()`` order) by an ``nn.Linear`` of matching in-features.
    layer : int
        Index among the model's :class:`ChannelGain` modules (in ``modules()`` order).
    channels : sequence of int
    scale : float
        ``> 0``.

    Returns
    -------
    torch.nn.Module
        ``model``, modified in place.

    See: book/halo/03-quantized-finetune.ipynb
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module (got {type(model).__name__})")
    mods = list(model.modules())
    gains = [i for i, m in enumerate(mods) if isinstance(m, ChannelGain)]
    if not gains:
        raise ValueError("model must hold a ChannelGain module (the gain that is rescaled)")
    layer = check_int("layer", layer, 0, len(gains) - 1)
    scale = check_range("scale", scale, 0.0, None, low_inclusive=False)
    at = gains[layer]
    gain = mods[at]
    nxt = next((m for m in mods[at + 1 :] if isinstance(m, nn.Linear)), None)
    if nxt is None or nxt.in_features != gain.gain.numel():
        raise ValueError(
            "the ChannelGain must be followed by an nn.Linear whose in_features equal its "
            "features (the layer the gain is folded out of)"
        )
    try:
        ch = torch.as_tensor(list(channels), dtype=torch.long)
    except (TypeError, ValueError, RuntimeError) as exc:
        raise TypeError(f"channels must be a sequence of ints (got {channels!r})") from exc
    n = gain.gain.numel()
    if ch.numel() == 0 or int(ch.min()) < 0 or int(ch.max()) >= n:
        raise ValueError(f"channels must be indices in [0, {n - 1}] (got {channels})")
    with torch.no_grad():
        gain.gain[ch] *= scale  # massive channels: h_c -> S h_c
        nxt.weight[:, ch] /= scale  # folded out of the next layer: W[:, c] -> W[:, c] / S
    return model
