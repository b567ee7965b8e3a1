"""Analysis: turn stored records into the figures reports show (DESIGN.md "Definitions")."""
from .aggregate import PhaseFigures, PointSummary, phase_figures, summarize
from .stats import Dist, Spread, median, nearest_rank

__all__ = ["PhaseFigures", "PointSummary", "phase_figures", "summarize",
           "Dist", "Spread", "median", "nearest_rank"]
