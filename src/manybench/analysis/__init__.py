"""Analysis: turn stored records into the figures reports show (docs/definitions.md).

phase_figures: one phase (lateness, skew, sync overhead, aggregate bandwidth, stonewall);
points: a point's phases summarized; stats: medians, spreads, percentiles; efficiency:
measured against each node's theoretical peak, and multi-node scaling shares.
"""
from .phase_figures import PhaseFigures, phase_figures
from .points import PointSummary, summarize
from .stats import Dist, Spread, median, nearest_rank

__all__ = ["PhaseFigures", "PointSummary", "phase_figures", "summarize",
           "Dist", "Spread", "median", "nearest_rank"]
