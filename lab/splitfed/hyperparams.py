"""MU-SplitFed's hyper-parameters: :class:`MUSplitFedConfig`, with the step coupling ``steps(tau)``.

The record of a run is :class:`lab.splitfed.history.History`; the seeded draws live in
:mod:`lab.splitfed.draws`, the straggler clock and the adaptive ``tau`` in
:mod:`lab.splitfed.stragglers`, the loss with the model in :mod:`lab.splitfed.models`.

See: book/splitfed/02-unbalanced-updates.ipynb
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from lab.core.checks import (
    check_bool,
    check_choice,
    check_int,
    check_positive,
    check_range,
    check_real,
    replace_fields,
)

__all__ = ["MUSplitFedConfig"]

#: how the server's step follows tau (see ``MUSplitFedConfig.coupling``)
COUPLINGS = ("sqrt", "fixed")


@dataclass(frozen=True)
class MUSplitFedConfig:
    """Hyper-parameters of MU-SplitFed (defaults: the paper's Table 6 on the digits MLP).

    Parameters
    ----------
    tau : int
        Server steps per client round (``tau = 1`` is vanilla ZO SplitFed).
    lam : float
        ZO perturbation size ``lam > 0``.
    eta_s, eta_c, eta_g : float
        Server, client and global step sizes.
    batch : int
        Client batch size ``B``.
    clients : int
        Number of clients ``M``.
    participation : float
        Fraction in ``(0, 1]`` of clients sampled per round (``P = round(M * participation)``).
    rounds : int
        Global rounds ``T``.
    theory_steps : bool
        Use the theory's coupling ``eta_s = eta_c / tau`` and ``eta_g = sqrt(tau P)``
        (Corollary 4.4 with the ``P`` participants in place of ``M``) instead of the fixed values.
    adaptive_tau : bool
        Set ``tau`` each round from the measured straggler wait (:func:`choose_tau`).
    tau_max : int
        Upper clip of the adaptive ``tau``.
    coupling : {"sqrt", "fixed"}
        How the server step follows ``tau``. ``"sqrt"`` (default): each of the ``tau`` server
        steps takes ``eta_s / sqrt(tau)``, the theory's coupling ``eta ∝ tau^(-1/2)``
        (Corollary 4.2: ``eta <= 1/sqrt(d tau T)``; Corollary 4.4: ``eta <= 1/(L tau sqrt(dT))``
        with ``eta_g = sqrt(tau M)``, an effective step ``∝ tau^(-1/2)``), so ``eta_s`` is
        vanilla's (``tau = 1``) step and the zeroth-order noise a round injects into the server
        half, ``tau (eta_s/sqrt(tau))^2``, does not grow with ``tau``. ``"fixed"``: every step
        takes ``eta_s`` (the paper's experiments, Table 6, for ``tau <= 4``); a large or
        adaptive ``tau`` then diverges after a few hundred rounds (the chapter's adaptive run:
        loss ``5.6e34`` at round 800). Ignored with ``theory_steps``.
    delay_mean : float or None
        Mean exponential straggler delay per client and round, in units of one client
        forward (``None``: no delays).
    seed : int
        Seeds every draw (batches, directions, participation, delays).
    eval_every : int
        Rounds between evaluations by ``eval_fn``.
    dtype : {"float32", "float64"}
        Precision of parameters and activations.
    t_client, t_server : float
        Simulated compute time of one client forward pass and of one server ZO step
        (the clock unit is one client forward).
    stop_loss : float or None
        Stop a simulated run after the first evaluation whose ``loss`` is ``<= stop_loss``
        (``None``: run all ``rounds``).

    See: book/splitfed/02-unbalanced-updates.ipynb
    """

    tau: int = 2
    lam: float = 5e-3
    eta_s: float = 0.01
    eta_c: float = 0.005
    eta_g: float = 0.3
    batch: int = 32
    clients: int = 10
    participation: float = 0.5
    rounds: int = 600
    theory_steps: bool = False
    adaptive_tau: bool = False
    tau_max: int = 16
    coupling: str = "sqrt"
    delay_mean: float | None = None
    seed: int = 0
    eval_every: int = 10
    dtype: str = "float32"
    t_client: float = 1.0
    t_server: float = 0.1
    stop_loss: float | None = None

    def __post_init__(self) -> None:
        # frozen: the checked (normalised) values are written once, here
        for name, value in self._checked().items():
            object.__setattr__(self, name, value)

    def _checked(self) -> dict[str, Any]:
        v: dict[str, Any] = {}
        v["tau"] = check_int("tau", self.tau, 1)
        v["lam"] = check_positive("lam", self.lam)
        v["eta_s"] = check_positive("eta_s", self.eta_s, allow_zero=True)
        v["eta_c"] = check_positive("eta_c", self.eta_c, allow_zero=True)
        v["eta_g"] = check_positive("eta_g", self.eta_g, allow_zero=True)
        v["batch"] = check_int("batch", self.batch, 1)
        v["clients"] = check_int("clients", self.clients, 1)
        v["participation"] = check_range(
            "participation", self.participation, 0.0, 1.0, low_inclusive=False
        )
        v["rounds"] = check_int("rounds", self.rounds, 0)
        v["theory_steps"] = check_bool("theory_steps", self.theory_steps)
        v["adaptive_tau"] = check_bool("adaptive_tau", self.adaptive_tau)
        v["tau_max"] = check_int("tau_max", self.tau_max, 1)
        check_choice("coupling", self.coupling, list(COUPLINGS))
        if self.delay_mean is not None:
            v["delay_mean"] = check_positive("delay_mean", self.delay_mean, allow_zero=True)
        v["seed"] = check_int("seed", self.seed, 0)
        v["eval_every"] = check_int("eval_every", self.eval_every, 1)
        check_choice("dtype", self.dtype, ["float32", "float64"])
        v["t_client"] = check_positive("t_client", self.t_client, allow_zero=True)
        v["t_server"] = check_positive("t_server", self.t_server)
        if self.stop_loss is not None:
            v["stop_loss"] = check_real("stop_loss", self.stop_loss)
        return v

    @property
    def participants(self) -> int:
        """``P``: clients sampled per round (at least 1)."""
        return max(1, int(round(self.clients * self.participation)))

    def steps(self, tau: int) -> tuple[float, float, float]:
        """``(eta_s, eta_c, eta_g)`` used in a round with ``tau`` server steps.

        With ``theory_steps``: ``eta_s = eta_c / tau`` and ``eta_g = sqrt(tau P)``; otherwise
        ``eta_s / sqrt(tau)`` (``coupling="sqrt"``) or ``eta_s`` (``"fixed"``), with ``eta_c``
        and ``eta_g`` as given.
        """
        tau = check_int("tau", tau, 1)
        if self.theory_steps:
            return self.eta_c / tau, self.eta_c, math.sqrt(tau * self.participants)
        eta_s = self.eta_s
        if self.coupling == "sqrt":
            eta_s = eta_s / math.sqrt(tau)  # Cor. 4.2/4.4: eta ∝ tau^(-1/2)
        return eta_s, self.eta_c, self.eta_g

    def replace(self, **changes: Any) -> MUSplitFedConfig:
        """A copy with some fields changed (validated again)."""
        return replace_fields(self, changes)
