"""One look for every figure in the book: a matplotlib style and a plotly template.

Both draw on an opaque white canvas with dark text, so a figure reads the same on the
book's light and dark themes (the figure is a card; its contrast never depends on the page).
Colours are the Okabe-Ito palette, which stays distinguishable under the common forms of
colour blindness. Importing ``lab.core`` registers the plotly template ``"optlab"`` and makes
it the default; ``use_style()`` applies the matplotlib style (notebooks call it via
``lab.setup``).
"""

from __future__ import annotations

PALETTE = (
    "#0072B2",  # blue
    "#D55E00",  # vermillion
    "#009E73",  # bluish green
    "#CC79A7",  # reddish purple
    "#E69F00",  # orange
    "#56B4E9",  # sky blue
    "#F0E442",  # yellow
    "#000000",  # black
)
INK = "#222222"
GRID = "#dddddd"
FONT = "DejaVu Sans, Arial, sans-serif"

MPL_STYLE = {
    "figure.facecolor": "white",
    "axes.facecolor": "white",
    "savefig.facecolor": "white",
    "figure.figsize": (7.0, 4.2),
    "figure.dpi": 100,
    "savefig.dpi": 120,
    "axes.prop_cycle": None,  # filled in use_style (needs cycler)
    "axes.edgecolor": INK,
    "axes.labelcolor": INK,
    "axes.titlesize": 12,
    "axes.labelsize": 11,
    "axes.grid": True,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "grid.color": GRID,
    "grid.linewidth": 0.6,
    "xtick.color": INK,
    "ytick.color": INK,
    "text.color": INK,
    "legend.frameon": False,
    "lines.linewidth": 1.6,
    "font.size": 10,
}


def use_style() -> None:
    """Apply the book's matplotlib style to the current session."""
    import matplotlib as mpl
    from cycler import cycler

    style = dict(MPL_STYLE)
    style["axes.prop_cycle"] = cycler(color=list(PALETTE))
    mpl.rcParams.update(style)


def plotly_template():
    """The ``optlab`` plotly template (a ``plotly.graph_objects.layout.Template``)."""
    import plotly.graph_objects as go

    axis = dict(
        showgrid=True,
        gridcolor=GRID,
        zeroline=False,
        linecolor=INK,
        ticks="outside",
        tickcolor=INK,
        title=dict(font=dict(size=13)),
    )
    return go.layout.Template(
        layout=dict(
            font=dict(family=FONT, size=12, color=INK),
            paper_bgcolor="white",
            plot_bgcolor="white",
            colorway=list(PALETTE),
            xaxis=axis,
            yaxis=axis,
            margin=dict(l=60, r=20, t=60, b=50),
            legend=dict(bgcolor="rgba(255,255,255,0.8)"),
            hoverlabel=dict(font=dict(family=FONT)),
        )
    )


def register_plotly_template(make_default: bool = True) -> None:
    """Register ``optlab`` in ``plotly.io.templates`` (and make it the default)."""
    import plotly.io as pio

    from .checks import check_bool

    make_default = check_bool("make_default", make_default)
    pio.templates["optlab"] = plotly_template()
    if make_default:
        pio.templates.default = "optlab"
