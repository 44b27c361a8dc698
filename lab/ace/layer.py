"""The homotopy layer :math:`f^{eq} + \\gamma f^{neq}` and the collection of its coefficients.

See: book/ace/01-homotopy-and-duals.ipynb
"""

from __future__ import annotations

import torch
import torch.nn as nn

from lab.core.checks import check_real

__all__ = ["HomotopyLayer", "homotopy"]


class HomotopyLayer(nn.Module):
    r"""One homotopy layer :math:`f^i(x) = f^{eq,i}(x) + \gamma_i f^{neq,i}(x)`.

    Parameters
    ----------
    eq : nn.Module
        A G-equivariant layer.
    neq : nn.Module
        An unconstrained layer with the same input and output shapes as ``eq``.
    gamma0 : float
        Initial homotopy coefficient (the paper starts at 1: the flexible end). With 0 the
        non-equivariant branch gets no gradient and the homotopy never starts.

    Attributes
    ----------
    gamma : nn.Parameter
        The scalar coefficient :math:`\gamma_i` (0-d).
    use_neq : bool
        ``False`` skips the non-equivariant branch (set by :meth:`ACE.truncate`), which
        makes the layer exactly ``eq``.

    See: book/ace/01-homotopy-and-duals.ipynb
    """

    def __init__(self, eq: nn.Module, neq: nn.Module, gamma0: float = 1.0):
        super().__init__()
        if not isinstance(eq, nn.Module):
            raise TypeError(f"eq must be an nn.Module (got {type(eq).__name__})")
        if not isinstance(neq, nn.Module):
            raise TypeError(f"neq must be an nn.Module (got {type(neq).__name__})")
        gamma0 = check_real("gamma0", gamma0)
        self.eq = eq
        self.neq = neq
        ref = next(iter(eq.parameters()), None)
        dtype = ref.dtype if ref is not None else torch.get_default_dtype()
        device = ref.device if ref is not None else None
        self.gamma = nn.Parameter(torch.tensor(gamma0, dtype=dtype, device=device))
        self.use_neq = True

    def forward(self, x, use_neq: bool = True):
        # homotopy layer: f^i(x) = f^{eq,i}(x) + gamma_i f^{neq,i}(x)
        out = self.eq(x)
        if not (use_neq and self.use_neq):
            return out
        side = self.neq(x)
        if side.shape != out.shape:
            raise ValueError(
                f"eq and neq must return the same shape (eq: {tuple(out.shape)}, "
                f"neq: {tuple(side.shape)})"
            )
        return out + self.gamma * side

    def extra_repr(self) -> str:
        return f"gamma={float(self.gamma.detach()):.4g}, use_neq={self.use_neq}"


def homotopy(model) -> list:
    """Every homotopy coefficient :math:`\\gamma_i` of ``model``, in module order.

    See: book/ace/01-homotopy-and-duals.ipynb
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module (got {type(model).__name__})")
    return [m.gamma for m in model.modules() if isinstance(m, HomotopyLayer)]
