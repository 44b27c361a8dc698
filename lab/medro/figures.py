"""Experiments and figures of the medro chapter (plotly for ``lab.core.explore``, matplotlib panels).

Kept out of the notebooks so that each cell stays a sentence of code.

See: book/medro/01-conflicting-environments.ipynb, book/medro/02-experts-and-inference.ipynb
"""

from __future__ import annotations

import functools

import numpy as np

from ..core.checks import check_choice, check_int, check_positive, check_range
from . import fit, make_rotated_spurious_envs, predict, train_gate

__all__ = [
    "METHOD_COLOURS",
    "accuracy",
    "conflict_sweep",
    "env_thetas",
    "inference_figure",
    "shift_experiment",
    "toy_envs",
    "train_run",
    "training_figure",
]

METHOD_COLOURS = {
    "ERM": "#999999",
    "GroupDRO": "#0072B2",
    "GroupDRO-ensemble": "#56B4E9",
    "MEDRO": "#D55E00",
    "MEDRO α=2": "#CC79A7",
}


def env_thetas(angle: float, m: int) -> np.ndarray:
    """Rotations of ``m`` training environments spread evenly on ``[-angle, angle]``.

    See: book/medro/01-conflicting-environments.ipynb
    """
    angle = check_range("angle", angle, 0.0, 1.5)
    m = check_int("m", m, 1, 8)
    return np.zeros(1) if m == 1 else np.linspace(-angle, angle, m)


def toy_envs(angle: float = 0.6, m: int = 3, n: int = 1000, seed: int = 0):
    """The chapter's training environments: rotations ``env_thetas``, spurious agreement 0.9 → 0.7.

    See: book/medro/01-conflicting-environments.ipynb
    """
    rho = np.array([0.8]) if m == 1 else np.linspace(0.9, 0.7, m)
    return make_rotated_spurious_envs(n, rho, env_thetas(angle, m), seed=seed)


def accuracy(probs, y) -> float:
    """Fraction of ``argmax(probs) == y``.

    See: book/medro/02-experts-and-inference.ipynb
    """
    return float((probs.argmax(1) == y).float().mean())


@functools.lru_cache(maxsize=32)
def train_run(
    method: str = "medro",
    angle: float = 0.6,
    m: int = 3,
    eta_q: float = 0.05,
    alpha: float = 0.0,
    steps: int = 300,
    seed: int = 0,
):
    """A cached :func:`lab.medro.fit` on :func:`toy_envs` (recording every 10 steps).

    See: book/medro/01-conflicting-environments.ipynb
    """
    envs = toy_envs(angle, m, seed=seed)
    return fit(envs, method, steps=steps, eta_q=eta_q, alpha=alpha, seed=seed, record_every=10)


def training_figure(step: int = 290, angle: float = 0.6, m: int = 3, eta_q: float = 0.05):
    """Risk matrix ``R̂[k, e]``, adversary ``q[k, e]`` and the worst cell over training (MEDRO).

    See: book/medro/01-conflicting-environments.ipynb
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    step = check_int("step", step, 0)
    eta_q = check_positive("eta_q", eta_q)
    run = train_run("medro", float(angle), int(m), float(eta_q))
    i = int(np.searchsorted(run.steps, min(step, run.steps[-1])))
    R, q = run.R[i], run.q[i]
    labels_k = [f"expert {k + 1}" for k in range(R.shape[0])]
    labels_e = [f"env {e + 1}" for e in range(R.shape[1])]
    fig = make_subplots(
        rows=1,
        cols=3,
        subplot_titles=("risk R̂[k, e]", "adversary q[k, e]", "worst cell max R̂ over training"),
        horizontal_spacing=0.09,
    )
    fig.add_trace(
        go.Heatmap(
            z=R, x=labels_e, y=labels_k, zmin=0.0, zmax=0.8, colorscale="Viridis",
            colorbar={"x": 0.27, "len": 0.8, "thickness": 10}, text=np.round(R, 2),
            texttemplate="%{text}", showscale=True,
        ),
        1, 1,
    )  # fmt: skip
    fig.add_trace(
        go.Heatmap(
            z=q, x=labels_e, y=labels_k, zmin=0.0, zmax=float(max(0.3, q.max())),
            colorscale="Magma", colorbar={"x": 0.63, "len": 0.8, "thickness": 10},
            text=np.round(q, 2), texttemplate="%{text}",
        ),
        1, 2,
    )  # fmt: skip
    worst = run.R.reshape(len(run.steps), -1).max(1)
    fig.add_trace(go.Scatter(x=run.steps, y=worst, mode="lines", name="max R̂"), 1, 3)
    fig.add_trace(
        go.Scatter(x=[run.steps[i]], y=[worst[i]], mode="markers", marker={"size": 11}, name="now"),
        1, 3,
    )  # fmt: skip
    fig.update_yaxes(autorange="reversed", row=1, col=1)
    fig.update_yaxes(autorange="reversed", row=1, col=2)
    fig.update_xaxes(title_text="training step", row=1, col=3)
    fig.update_yaxes(title_text="cross-entropy", row=1, col=3)
    fig.update_layout(
        title_text=f"MEDRO, m = {m}, conflict ±{angle:.2f} rad, η_q = {eta_q:.3g}: step {run.steps[i]}",
        showlegend=False,
        height=380,
    )
    return fig


def conflict_sweep(angles, steps: int = 300, seed: int = 0, n_test: int = 2000):
    """Per-environment test accuracy (spurious coordinate uninformative) of GroupDRO and of the
    MEDRO experts (each expert on its own environment, ``oracle``) for each conflict angle.

    Returns ``{"angles", "groupdro" [A, 3], "medro_oracle" [A, 3], "medro_ensemble" [A, 3]}``.

    See: book/medro/01-conflicting-environments.ipynb
    """
    out = {"angles": np.asarray(angles, float), "groupdro": [], "medro_oracle": []}
    out["medro_ensemble"] = []
    for a in angles:
        test = make_rotated_spurious_envs(n_test, [0.5] * 3, env_thetas(a, 3), seed=seed + 100)
        g = train_run("groupdro", float(a), 3, 0.05, 0.0, steps, seed).model
        md = train_run("medro", float(a), 3, 0.05, 0.0, steps, seed).model
        out["groupdro"].append([accuracy(predict(g, x), y) for x, y in test])
        out["medro_oracle"].append(
            [accuracy(predict(md, x, "oracle", env=e), y) for e, (x, y) in enumerate(test)]
        )
        out["medro_ensemble"].append([accuracy(predict(md, x), y) for x, y in test])
    return {k: np.asarray(v) for k, v in out.items()}


def shift_experiment(
    angle: float = 0.6,
    seeds=(0, 1, 2),
    steps: int = 300,
    test_thetas=None,
    rho_test: float = 0.5,
    n_test: int = 1000,
):
    """Train every method on every seed, then sweep the test rotation.

    Returns a dict with ``thetas``, ``acc[(method, mode)] -> [S, T]`` accuracies (mode is
    ``ensemble``, ``gate`` or ``oracle`` for multi-head methods, ``single`` otherwise), the
    models, the gates and the gate probabilities averaged over each test environment.

    See: book/medro/02-experts-and-inference.ipynb
    """
    import torch

    rho_test = check_range("rho_test", rho_test, 0.0, 1.0)
    if test_thetas is None:
        test_thetas = np.round(np.linspace(-angle - 0.4, angle + 0.4, 13), 3)
    test_thetas = np.asarray(test_thetas, float)
    train_thetas = env_thetas(angle, 3)
    specs = [
        ("ERM", "erm", 0.0),
        ("GroupDRO", "groupdro", 0.0),
        ("GroupDRO-ensemble", "groupdro_ensemble", 0.0),
        ("MEDRO", "medro", 0.0),
        ("MEDRO α=2", "medro", 2.0),
    ]
    models, acc, gate_probs = {}, {}, {}
    for s in seeds:
        envs = toy_envs(angle, 3, seed=s)
        test = make_rotated_spurious_envs(
            n_test, [rho_test] * len(test_thetas), test_thetas, seed=1000 + s
        )
        for name, method, alpha in specs:
            model = train_run(method, float(angle), 3, 0.05, alpha, steps, s).model
            gate = train_gate(model, envs) if model.n_heads > 1 else None
            models[(name, s)] = (model, gate)
            for j, (x, y) in enumerate(test):
                near = int(np.argmin(np.abs(train_thetas - test_thetas[j])))
                if gate is None:
                    acc.setdefault((name, "single"), np.zeros((len(seeds), len(test_thetas))))
                    acc[(name, "single")][seeds.index(s), j] = accuracy(predict(model, x), y)
                    continue
                for mode in ("ensemble", "gate", "oracle"):
                    p = predict(model, x, mode, gate=gate, env=near)
                    acc.setdefault((name, mode), np.zeros((len(seeds), len(test_thetas))))
                    acc[(name, mode)][seeds.index(s), j] = accuracy(p, y)
                if name == "MEDRO α=2" and s == seeds[0]:
                    with torch.no_grad():
                        gate_probs[j] = gate(x).mean(0).numpy()
    return {
        "thetas": test_thetas,
        "train_thetas": train_thetas,
        "acc": acc,
        "models": models,
        "gate_probs": gate_probs,
        "seeds": tuple(seeds),
    }


def inference_figure(result, theta_test: float, mode: str = "gate"):
    """Accuracy versus the test rotation for each method (multi-head ones under ``mode``),
    the bars at ``theta_test``, and the gate's mean probabilities there (MEDRO α=2).

    See: book/medro/02-experts-and-inference.ipynb
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    mode = check_choice("mode", mode, ("ensemble", "gate", "oracle"))
    th = result["thetas"]
    j = int(np.argmin(np.abs(th - theta_test)))
    fig = make_subplots(
        rows=1,
        cols=3,
        column_widths=[0.5, 0.3, 0.2],
        subplot_titles=(
            "test accuracy vs test rotation (mean of seeds)",
            "at the chosen θ_test (± std)",
            "gate (MEDRO α=2)",
        ),
    )
    names, means, errs = [], [], []
    for name, colour in METHOD_COLOURS.items():
        key = (name, "single") if (name, "single") in result["acc"] else (name, mode)
        a = result["acc"][key]
        fig.add_trace(
            go.Scatter(x=th, y=a.mean(0), mode="lines+markers", name=name, line={"color": colour}),
            1, 1,
        )  # fmt: skip
        names.append(name)
        means.append(a[:, j].mean())
        errs.append(a[:, j].std())
    fig.add_trace(
        go.Scatter(x=[th[j], th[j]], y=[0.45, 1.0], mode="lines", line={"dash": "dot"}, showlegend=False),
        1, 1,
    )  # fmt: skip
    for t in result["train_thetas"]:
        fig.add_vline(x=float(t), line={"color": "#bbbbbb", "width": 1}, row=1, col=1)
    fig.add_trace(
        go.Bar(
            x=names, y=means, error_y={"type": "data", "array": errs},
            marker={"color": list(METHOD_COLOURS.values())}, showlegend=False,
        ),
        1, 2,
    )  # fmt: skip
    g = result["gate_probs"][j]
    ent = float(-(g * np.log(np.clip(g, 1e-12, 1))).sum())
    fig.add_trace(
        go.Bar(x=[f"env {k + 1}" for k in range(len(g))], y=g, showlegend=False,
               marker={"color": "#009E73"}, name=f"entropy {ent:.2f}"),
        1, 3,
    )  # fmt: skip
    fig.update_xaxes(title_text="test rotation θ_test (rad)", row=1, col=1)
    fig.update_yaxes(title_text="accuracy", range=[0.45, 1.0], row=1, col=1)
    fig.update_yaxes(range=[0.45, 1.0], row=1, col=2)
    fig.update_yaxes(range=[0, 1], title_text="mean gate probability", row=1, col=3)
    fig.update_layout(
        title_text=f"θ_test = {th[j]:.2f} rad; multi-head models predict by: {mode}",
        height=420,
        legend={"orientation": "h", "y": -0.25},
    )
    return fig
