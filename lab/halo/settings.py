"""The settings of notebook 3's experiments: one frozen dataclass per experiment family,
validated once when it is made and passed whole from the notebook to the drivers.

* :class:`FinetuneSettings`: a fine-tuning run of the pre-trained MLP with injected massive
  activations (:func:`lab.halo.experiments.finetune`, the batched runner
  :func:`lab.halo.batched.finetune_seeds`);
* :class:`PretrainSettings`: a run from scratch (:func:`lab.halo.experiments.pretrain`).

The seed is not a setting: the drivers take it beside the settings, so that a study over seeds
(:func:`lab.core.sweep.sweep`) pairs every configuration seed by seed.

See: book/halo/03-quantized-finetune.ipynb
"""

from __future__ import annotations

from dataclasses import dataclass

from lab.core.checks import check_bool, check_choice, check_int, check_range, replace_fields

from .reference import check_fmt

__all__ = ["MODES", "FinetuneSettings", "PretrainSettings"]

MODES = ("fp32", "halo0", "halo1", "halo2")


def _fmt(fmt) -> str:
    fmt = check_fmt(fmt)
    if fmt is None:
        raise ValueError("fmt must be a format name (use mode='fp32' for no quantization)")
    return fmt


@dataclass(frozen=True)
class FinetuneSettings:
    """One fine-tuning configuration (everything but the seed).

    Parameters
    ----------
    mode : str
        ``"fp32"``, ``"halo0"``, ``"halo1"`` or ``"halo2"``.
    fmt : str
        Format of the HALO runs (``"int8"``, ``"fp8_e4m3"``, ``"fp6_e2m3"``, ``"fp6_e3m2"``,
        ``"fp4_e2m1"``); the FP32 run ignores it.
    scale : float
        Massive-activation scale ``S`` (4 channels of layer 1), in ``[1, 1e5]``.
    width, steps, batch : int
        Hidden width (16 to 8192), Adam steps (>= 1), batch rows (>= 2).
    lr : float
        Adam's learning rate, in ``(0, 1]``.
    token_outliers : bool
        Up-weight the loss of 2% of each batch's examples by 100x (row outliers of ``E_Y``).
    cosine_every : int
        Every this many steps the cosine between the simulated and the exact FP32 gradient is
        recorded (the unbatched runner only).
    lora_rank : int
        ``> 0``: HALO-PEFT, every linear layer frozen and adapted by a rank-``lora_rank`` LoRA
        (0 to 64; the unbatched runner only).
    pretrain_seed : int
        Seed of the pre-trained model and of the data split.

    See: book/halo/03-quantized-finetune.ipynb
    """

    mode: str = "halo2"
    fmt: str = "int8"
    scale: float = 300.0
    width: int = 512
    steps: int = 100
    batch: int = 64
    lr: float = 1e-3
    token_outliers: bool = False
    cosine_every: int = 10
    lora_rank: int = 0
    pretrain_seed: int = 0

    def __post_init__(self) -> None:
        checked = {
            "mode": check_choice("mode", self.mode, MODES),
            "fmt": _fmt(self.fmt),
            "scale": float(check_range("scale", self.scale, 1.0, 1e5)),
            "width": check_int("width", self.width, 16, 8192),
            "steps": check_int("steps", self.steps, 1),
            "batch": check_int("batch", self.batch, 2),
            "lr": float(check_range("lr", self.lr, 0.0, 1.0, low_inclusive=False)),
            "token_outliers": bool(check_bool("token_outliers", self.token_outliers)),
            "cosine_every": check_int("cosine_every", self.cosine_every, 1),
            "lora_rank": check_int("lora_rank", self.lora_rank, 0, 64),
            "pretrain_seed": check_int("pretrain_seed", self.pretrain_seed, 0),
        }
        for name, value in checked.items():
            object.__setattr__(self, name, value)

    @property
    def level(self) -> int | None:
        """The HALO level of ``mode`` (``None`` for FP32)."""
        return None if self.mode == "fp32" else int(self.mode[-1])

    def replace(self, **changes) -> FinetuneSettings:
        """A copy with ``changes`` (validated again)."""
        return replace_fields(self, changes)


@dataclass(frozen=True)
class PretrainSettings:
    """A run from scratch on all ten digits (everything but the seed).

    Parameters
    ----------
    mode, fmt
        As :class:`FinetuneSettings` (``"fp4_e2m1"`` included).
    width : int
        Hidden width (16 to 8192).
    steps : int
        Adam steps (>= 10: the divergence test reads the last ten).
    batch : int
        Batch rows (>= 2).
    lr : float
        Adam's learning rate, in ``(0, 1]``.
    eval_batch : int or None
        Rows per evaluation batch (default: ``batch``, as in training; a per-tensor scale over
        a larger batch is set by its largest row).

    See: book/halo/03-quantized-finetune.ipynb
    """

    mode: str = "halo2"
    fmt: str = "int8"
    width: int = 256
    steps: int = 200
    batch: int = 64
    lr: float = 3e-3
    eval_batch: int | None = None

    def __post_init__(self) -> None:
        batch = check_int("batch", self.batch, 2)
        eval_batch = batch if self.eval_batch is None else self.eval_batch
        checked = {
            "mode": check_choice("mode", self.mode, MODES),
            "fmt": _fmt(self.fmt),
            "width": check_int("width", self.width, 16, 8192),
            "steps": check_int("steps", self.steps, 10),
            "batch": batch,
            "lr": float(check_range("lr", self.lr, 0.0, 1.0, low_inclusive=False)),
            "eval_batch": check_int("eval_batch", eval_batch, 1),
        }
        for name, value in checked.items():
            object.__setattr__(self, name, value)

    @property
    def level(self) -> int | None:
        """The HALO level of ``mode`` (``None`` for FP32)."""
        return None if self.mode == "fp32" else int(self.mode[-1])

    def replace(self, **changes) -> PretrainSettings:
        """A copy with ``changes`` (validated again)."""
        return replace_fields(self, changes)
