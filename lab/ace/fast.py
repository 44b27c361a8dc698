"""Fast path: the batched equivariance error (every sampled group element in one forward pass).

The loop over group elements it replaces, :func:`lab.ace.reference.equivariance_error` (the same
name), is timed in ``benchmarks/bench_ace.py`` and compared with it in ``tests/test_ace.py``.

See: book/ace/02-partial-symmetry.ipynb
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .reference import check_equivariance_args

__all__ = ["equivariance_error"]


def equivariance_error(
    f: Callable,
    x,
    group_sampler: Callable,
    rho_in: Callable,
    rho_out: Callable,
    n: int = 8,
    relative: bool = True,
) -> float:
    r"""Measured equivariance violation of ``f`` on the inputs ``x``.

    .. math:: E = \frac{\mathbb{E}_{g,x}\lVert f(\rho_{in}(g)x) - \rho_{out}(g) f(x)\rVert^2}
                       {\mathbb{E}_x \lVert f(x)\rVert^2}

    (``relative=False`` drops the denominator). All ``n`` sampled group elements go through
    ``f`` in one batched forward pass of size ``n * len(x)``.

    Parameters
    ----------
    f : callable
        Maps a ``(B, d_in)`` tensor to ``(B, d_out)``.
    x : torch.Tensor
        Inputs, shape ``(B, d_in)``.
    group_sampler : callable
        ``group_sampler(n)`` returns ``n`` group elements (anything ``rho_*`` accept).
    rho_in, rho_out : callable
        Map the sampled elements to a ``(n, d_in, d_in)`` / ``(n, d_out, d_out)`` tensor of
        representation matrices.
    n : int
        Number of group elements.

    See: book/ace/02-partial-symmetry.ipynb
    """
    n = check_equivariance_args(f, x, group_sampler, rho_in, rho_out, n)
    g = group_sampler(n)
    Rin = torch.as_tensor(rho_in(g), dtype=x.dtype, device=x.device)
    Rout = torch.as_tensor(rho_out(g), dtype=x.dtype, device=x.device)
    B, d = x.shape
    if Rin.shape != (n, d, d):
        raise ValueError(f"rho_in must return shape {(n, d, d)} (got {tuple(Rin.shape)})")
    with torch.no_grad():
        fx = f(x)  # (B, d_out)
        gx = torch.einsum("gij,bj->gbi", Rin, x).reshape(n * B, d)  # rho_in(g) x, all g
        fgx = f(gx).reshape(n, B, -1)  # f(rho_in(g) x)
        gfx = torch.einsum("gij,bj->gbi", Rout, fx)  # rho_out(g) f(x)
        num = ((fgx - gfx) ** 2).sum(-1).mean()
        if not relative:
            return float(num)
        den = (fx**2).sum(-1).mean()
    return float(num / den) if float(den) > 0 else float("inf")
