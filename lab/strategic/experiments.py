"""Drivers of the chapter's notebooks: each takes a settings object
(:mod:`lab.strategic.settings`), computes, and returns a small result that
:mod:`lab.strategic.figures` draws.

* :func:`raise_curves` - the expected loss of the raised boundary, several radii (notebook 1);
* :func:`best_response_scene` - one picture of the agents' best responses (notebook 1's widget);
* :func:`compare_learners` - the paper's algorithm and the baselines on the same seeds;
* :func:`horizon_study` - the paper's algorithm at several horizons;
* :func:`prop4_outcomes` - Proposition 4 scored on the complete batches of a run (notebook 2);
* :func:`parameter_sweep` - one parameter of the instance or one constant varied (notebook 3).

The expensive drivers keep their results on disk (:func:`lab.core.diskcache.disk_memo`); the
extra baseline's seed loop runs through :func:`lab.core.sweep.sweep`.

See: book/strategic/01-best-responses.ipynb, book/strategic/02-regret.ipynb,
book/strategic/03-sweeps.ipynb
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from lab.core.checks import check_array, check_bool, check_instance
from lab.core.diskcache import disk_memo
from lab.core.memo import memo
from lab.core.runtime import resolve_device, smoke_steps
from lab.core.sweep import sweep
from lab.strategic.doubling_epochs import explore_fit_shift
from lab.strategic.fast import (
    draw_streams,
    strategic_massart_many_unchecked,
    strategic_perceptron_unchecked,
)
from lab.strategic.offset_game import (
    StrategicEnv,
    accepts,
    best_response,
    closed_form_unshifted_gap,
)
from lab.strategic.settings import (
    ComparisonSettings,
    HorizonSettings,
    Instance,
    RaiseSettings,
    ScatterSettings,
    SweepSettings,
)

__all__ = [
    "Comparison",
    "Prop4",
    "RaiseCurves",
    "ResponseScene",
    "Sweep",
    "best_response_scene",
    "compare_learners",
    "horizon_study",
    "parameter_sweep",
    "prop4_outcomes",
    "raise_curves",
]


# ------------------------------------------------------------------------------------------
# Notebook 1: the game
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RaiseCurves:
    """Expected 0-1 loss of posting ``(w*, b* + s)`` for each shift ``s`` and radius ``r``:
    ``loss[r]`` ``[len(shifts)]``, the ``best`` shift per radius and ``gap[r]`` = (the unraised
    rule's loss minus the smallest on the grid, its closed form by quadrature)."""

    shifts: np.ndarray
    loss: dict
    best: dict
    gap: dict


@memo
def raise_curves(settings: RaiseSettings) -> RaiseCurves:
    """The loss of the raised boundary on the offset game's Monte Carlo pool (``b* = 0``).

    See: book/strategic/01-best-responses.ipynb
    """
    st = check_instance("settings", settings, RaiseSettings)
    shifts = np.array(st.shifts)
    loss, best, gap = {}, {}, {}
    for radius in st.radii:
        env = StrategicEnv(b_star=0.0, r=radius, n_mc=st.n_mc, seed=st.seed)
        loss[radius] = np.array([env.expected_loss(env.w_star, env.b_star + s) for s in shifts])
        best[radius] = shifts[np.argmin(loss[radius])]
        unraised = loss[radius][shifts == 0][0] if np.any(shifts == 0) else np.nan
        gap[radius] = (unraised - loss[radius].min(), closed_form_unshifted_gap(env))
    return RaiseCurves(shifts, loss, best, gap)


@dataclass(frozen=True)
class ResponseScene:
    """Agents facing the rule ``<w, x> >= tau``: true features ``X``, reported ``Xt``, labels
    ``y``, the ``accepted`` and ``moved`` masks, the rule, the radius ``r``, the true offset
    ``b_star`` and the rule's expected ``regret`` per round."""

    X: np.ndarray
    Xt: np.ndarray
    y: np.ndarray
    accepted: np.ndarray
    moved: np.ndarray
    w: np.ndarray
    tau: float
    r: float
    b_star: float
    shift: float
    regret: float


def best_response_scene(settings: ScatterSettings) -> ResponseScene:
    """Draw ``n`` agents of the offset game (``b* = 0``, radius ``r``) and let them best-respond
    to ``<w*, x> >= shift``.

    See: book/strategic/01-best-responses.ipynb
    """
    st = check_instance("settings", settings, ScatterSettings)
    env = StrategicEnv(b_star=0.0, r=st.r, noise=st.noise, n_mc=20_000)
    X, y = env.sample(st.n, np.random.default_rng(st.seed))
    w, tau = env.w_star, env.b_star + st.shift
    Xt = best_response(X, w, tau, st.r)
    acc = accepts(Xt, w, tau)
    moved = np.any(Xt != X, axis=1)
    return ResponseScene(
        X, Xt, y, acc, moved, w, tau, st.r, env.b_star, st.shift, env.regret(w, tau)
    )


# ------------------------------------------------------------------------------------------
# Notebook 2: the learners
# ------------------------------------------------------------------------------------------
@dataclass
class Comparison:
    """Cumulative expected regret per learner: ``mean`` curves ``[T]`` and ``final`` ``[S]``
    (``angles`` ``[S, batches]`` for ours); ``batch_angles`` and ``phases`` per learner of
    :func:`~lab.strategic.fast.strategic_massart_many` (ours and Zhang et al.'s);
    ``cumulative`` ``[S, T]`` per learner."""

    T: int
    mean: dict
    final: dict
    angles: np.ndarray
    batch_angles: dict = field(default_factory=dict)
    phases: dict = field(default_factory=dict)
    cumulative: dict = field(default_factory=dict)


def _explore_fit_shift_regret(instance: Instance, T: int, seed: int) -> np.ndarray:
    """The per-round regret of the extra baseline on the offset game with ``b* = 0``."""
    env = instance.env
    game = StrategicEnv(
        w_star=env.w_star, b_star=0.0, r=env.gamma, noise="uniform", eta_max=env.eta, n_mc=50_000
    )
    return explore_fit_shift(game, T, seed=seed, n_dirs=180)["regret"]


def _explore_fit_shift_runs(instance: Instance, T: int, seeds) -> np.ndarray:
    """The extra baseline, one seed at a time (:func:`lab.core.sweep.sweep`): ``[S, T]``."""
    runs = {}

    def final_regret(seed: int) -> float:
        runs[seed] = _explore_fit_shift_regret(instance, T, seed)
        return float(runs[seed].sum())

    table = sweep(final_regret, None, seeds=seeds, desc="explore-fit-shift")
    return np.stack([runs[s] for s in table.seeds])


@disk_memo
def _compare(settings: ComparisonSettings, device: str) -> Comparison:
    env, T = settings.instance.env, settings.T
    draws = draw_streams(T, env.d, list(settings.seeds))
    mean, final, angles, batch_angles, phases = {}, {}, np.zeros((len(settings.seeds), 0)), {}, {}
    cumulative = {}
    for name in settings.learners:
        if name.startswith("perceptron"):
            reg = strategic_perceptron_unchecked(
                env, T, draws[0], draws[1], name.split("-")[1]
            ).regret
        elif name == "explore-fit-shift":
            if env.d != 2:
                continue
            reg = _explore_fit_shift_runs(settings.instance, T, settings.seeds)
        else:
            run = strategic_massart_many_unchecked(env, T, draws, settings.constants, name, device)
            reg = run.regret
            batch_angles[name], phases[name] = run.angles, run.phases
            if name == "ours":
                angles = run.angles
        cum = np.cumsum(reg, axis=1)
        mean[name], final[name], cumulative[name] = cum.mean(0), cum[:, -1], cum
    return Comparison(T, mean, final, angles, batch_angles, phases, cumulative)


def compare_learners(settings: ComparisonSettings, device=None) -> Comparison:
    """Run the paper's algorithm and the baselines on the same instance and seeds.

    ``settings.learners`` from :data:`lab.strategic.settings.LEARNERS`; the extra baseline
    ``"explore-fit-shift"`` runs in ``d = 2`` only, one seed at a time, with a Monte Carlo
    regret. Results are kept on disk.

    See: book/strategic/02-regret.ipynb
    """
    settings = check_instance("settings", settings, ComparisonSettings)
    return _compare(settings, str(resolve_device(device)))


@dataclass
class Prop4:
    """Proposition 4 read on the complete enhancement batches of a run (``[S, K]`` arrays over
    seeds and complete batches ``k = 1..K``): the angle to ``w*`` at the batch's start and at its
    output, the cone angle ``theta_k = pi / 2^(k+1)``, whether the precondition
    ``angle(w*, w_k) <= theta_k`` holds and whether the output meets ``theta_k / 2``."""

    k: np.ndarray
    start: np.ndarray
    output: np.ndarray
    theta: np.ndarray
    precondition: np.ndarray
    within: np.ndarray

    @property
    def conditional_share(self) -> float:
        """Share of (seed, batch) pairs meeting the precondition whose output meets the bound."""
        n = int(self.precondition.sum())
        return float(self.within[self.precondition].mean()) if n else float("nan")

    @property
    def chain_share(self) -> float:
        """Share of seeds whose every complete batch ends within its bound ``pi / 2^(k+2)``."""
        return float(np.all(self.within, axis=1).mean())


def prop4_outcomes(angles, phases) -> Prop4:
    """Score Proposition 4 on the complete enhancement batches of a batched run.

    Parameters
    ----------
    angles : ndarray [S, n_outputs]
        Angles to ``w*`` of ``w~0``, of the refinement's output and of each batch's output
        (:class:`~lab.strategic.fast.BatchRun`), so batch ``k`` starts at output ``k`` and ends
        at output ``k + 1``.
    phases : list of Phase
        The run's schedule (:func:`lab.strategic.reference.schedule`); a batch cut by the
        horizon (``complete=False``) is left out.

    See: book/strategic/02-regret.ipynb
    """
    angles = check_array("angles", angles, ndim=2)
    if not isinstance(phases, list):
        raise TypeError(f"phases must be a list of Phase (got {type(phases).__name__})")
    batches = [p for p in phases if p.kind == "enhance" and p.complete]
    ks = np.array([p.k for p in batches], dtype=int)
    if ks.size and angles.shape[1] < ks.max() + 2:
        raise ValueError(f"angles must hold {ks.max() + 2} outputs (got {angles.shape[1]})")
    theta = np.array([p.theta for p in batches])[None, :] * np.ones((angles.shape[0], 1))
    start, out = angles[:, ks], angles[:, ks + 1]
    return Prop4(ks, start, out, theta, start <= theta, out <= theta / 2)


@disk_memo
def _horizons(settings: HorizonSettings, device: str):
    env, finals, means = settings.instance.env, [], []
    for T in settings.T_grid:
        draws = draw_streams(T, env.d, list(settings.seeds))
        reg = strategic_massart_many_unchecked(
            env, T, draws, settings.constants, "ours", device
        ).regret
        finals.append(reg.sum(1))
        means.append(np.cumsum(reg, axis=1).mean(0))
    return np.stack(finals, 1), means


def horizon_study(settings: HorizonSettings, device=None, *, curves: bool = False):
    """Final regret of the paper's algorithm run with each horizon ``T`` (the algorithm uses
    ``ln T``, so each horizon is its own run): ``[S, len(T_grid)]``; with ``curves=True``, also
    the mean cumulative regret curve of each horizon (a list of ``[T]`` arrays).

    See: book/strategic/02-regret.ipynb
    """
    settings = check_instance("settings", settings, HorizonSettings)
    curves = check_bool("curves", curves)
    final, means = _horizons(settings, str(resolve_device(device)))
    return (final, means) if curves else final


# ------------------------------------------------------------------------------------------
# Notebook 3: the sweeps
# ------------------------------------------------------------------------------------------
@dataclass
class Sweep:
    """Final regret ``[S, len(values)]`` of the paper's algorithm as ``name`` varies."""

    name: str
    values: list
    final: np.ndarray


@disk_memo
def _sweep(settings: SweepSettings, device: str, T: int) -> Sweep:
    st, cols = settings, []
    for v in st.values:
        base, constants = st.base, st.constants
        if st.name.startswith("c"):
            constants = replace(constants, **{st.name: float(v)})
            env = base.env
        else:
            kw = dict(d=base.d, gamma=base.gamma, eta=base.eta, noise=base.noise)
            kw[st.name] = int(v) if st.name == "d" else float(v)
            env = Instance(**kw).env  # w* = e_1, as in the paper's d sweep
        draws = draw_streams(T, env.d, list(st.seeds))
        cols.append(
            strategic_massart_many_unchecked(
                env, T, draws, constants, st.variant, device
            ).regret.sum(1)
        )
    return Sweep(st.name, list(st.values), np.stack(cols, 1))


def parameter_sweep(settings: SweepSettings, device=None) -> Sweep:
    """Vary one parameter (``"gamma"``, ``"d"``, ``"eta"`` of the instance or a constant
    ``"c0"`` .. ``"c7"``) and record the final regret per seed, of the paper's algorithm or
    (``settings.variant``) of Zhang et al.'s learner. In smoke mode (``LAB_SMOKE=1``) each run
    stops after 200 cycles (the shapes are unchanged: one final regret per seed and value).

    See: book/strategic/03-sweeps.ipynb
    """
    settings = check_instance("settings", settings, SweepSettings)
    return _sweep(settings, str(resolve_device(device)), smoke_steps(settings.T, 200))
