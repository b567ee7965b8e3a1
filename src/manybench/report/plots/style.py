"""One look for every figure: the Agg backend (no display), small sizes, SVG text as paths
(so a page needs no font), and the helpers to write a figure as SVG text or files."""
from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402  (after the backend is chosen)

from ...outfile import replacing  # noqa: E402

matplotlib.rcParams.update({"svg.fonttype": "path", "svg.hashsalt": "manybench",
                            "font.size": 9, "axes.grid": True, "grid.alpha": 0.3})

SIZE = (6.4, 3.4)


def figure(title: str, rows: int = 1) -> tuple[Figure, list]:
    # fixed margins: a constrained layout measures every label first and doubles the time
    fig = Figure(figsize=(SIZE[0], SIZE[1] * (1 if rows == 1 else 0.75 * rows)))
    fig.subplots_adjust(left=0.11, right=0.98, top=0.91 if rows == 1 else 0.94,
                        bottom=0.14 if rows == 1 else 0.1, hspace=0.25)
    axes = fig.subplots(rows, 1, squeeze=False)[:, 0].tolist()
    axes[0].set_title(title, fontsize=10, loc="left")
    return fig, axes


def svg(fig: Figure) -> str:
    """The figure as an <svg> element (no XML prolog, so it can sit inside HTML)."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg")
    text = buf.getvalue()
    return text[text.index("<svg"):]


def save(fig: Figure, stem: str) -> list[str]:
    """stem.png and stem.svg; returns their paths."""
    out = []
    for ext in ("png", "svg"):
        path = f"{stem}.{ext}"
        with replacing(path, binary=True) as f:     # a full disk leaves the old one
            fig.savefig(f, format=ext, dpi=150 if ext == "png" else None)
        out.append(path)
    return out


def workers(ax, ws: list[int]) -> None:
    """A workers axis: log 2 when it spans a wide range, ticks at the counts measured."""
    if ws and max(ws) / max(min(ws), 1) >= 8:
        ax.set_xscale("log", base=2)
    ax.set_xticks(ws, [str(w) for w in ws])
    ax.minorticks_off()
    ax.set_xlabel("workers")
