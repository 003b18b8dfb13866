"""The paper's rows for its pretrained (amortized) methods, which this machine cannot run.

Their released checkpoints cannot be downloaded here, so :mod:`.reproduce` prints these cells beside
our own amortized method's (Tables 9 and 18, and the Sachs row of Table 17) whenever a run includes one.
"""

from __future__ import annotations

__all__ = ["PAPER_PRETRAINED", "PAPER_PRETRAINED_TABLE9", "PAPER_PRETRAINED_TABLE18", "PAPER_PRETRAINED_SACHS"]

DIMS = (10, 20, 30, 50, 100)
"""Table 9's columns (d)."""

SIZES = (100, 200, 500, 1000, 2000, 5000, 10000)
"""Table 18's columns (n, at d = 30)."""

PAPER_PRETRAINED = ("Arrow", "AVICI", "CauScale", "CDFM", "FoundCause", "SEA", "TabCausal")
"""The paper's pretrained methods, in its row order."""

PAPER_PRETRAINED_TABLE9: dict[str, dict[int, tuple[float, float | None]]] = {
    name: dict(zip(DIMS, cells)) for name, cells in zip(PAPER_PRETRAINED, (
        ((0.45, None), (0.40, None), (0.36, None), (0.29, None), (0.21, None)),
        ((0.41, 0.46), (0.40, 0.43), (0.36, 0.38), (0.28, 0.29), (0.16, 0.16)),
        ((0.35, 0.43), (0.39, 0.44), (0.41, 0.46), (0.44, 0.47), (0.48, 0.49)),
        ((0.54, None), (0.49, None), (0.44, None), (0.37, None), (0.27, None)),
        ((0.67, None), (0.65, None), (0.63, None), (0.61, None), (0.56, None)),
        ((0.46, None), (0.44, None), (0.42, None), (0.39, None), (0.27, None)),
        ((0.56, 0.58), (0.56, 0.56), (0.53, 0.54), (0.47, 0.47), (0.36, 0.35)),
    ))
}
"""Table 9: obs / obs+int directed F1 by d (None: no obs+int cell in the paper)."""

PAPER_PRETRAINED_TABLE18: dict[str, dict[int, tuple[float, float]]] = {
    name: dict(zip(SIZES, cells)) for name, cells in zip(PAPER_PRETRAINED, (
        ((0.32, 47.5), (0.34, 46.5), (0.35, 46.3), (0.36, 46.6), (0.36, 47.5), (0.34, 50.0), (0.33, 53.5)),
        ((0.22, 58.0), (0.31, 47.5), (0.35, 44.9), (0.35, 44.5), (0.35, 44.3), (0.36, 43.7), (0.36, 40.4)),
        ((0.26, 66.5), (0.33, 49.7), (0.40, 44.6), (0.41, 44.6), (0.40, 47.0), (0.37, 52.6), (0.35, 56.3)),
        ((0.34, 70.5), (0.38, 65.5), (0.42, 61.2), (0.44, 58.0), (0.46, 54.5), (0.48, 52.4), (0.48, 51.2)),
        ((0.43, 49.7), (0.52, 45.2), (0.61, 39.0), (0.64, 35.6), (0.65, 34.7), (0.65, 34.1), (0.66, 33.7)),
        ((0.26, 80.8), (0.34, 58.6), (0.41, 45.7), (0.42, 45.0), (0.42, 45.1), (0.42, 44.7), (0.42, 44.8)),
        ((0.33, 47.6), (0.42, 43.9), (0.49, 41.4), (0.53, 39.2), (0.55, 39.0), (0.57, 38.1), (0.57, 38.6)),
    ))
}
"""Table 18: directed F1 / SHD by n at d = 30, obs."""

PAPER_PRETRAINED_SACHS: dict[str, tuple[float, float]] = dict(zip(PAPER_PRETRAINED, (
    (0.29, 26.0), (0.22, 19.0), (0.13, 21.0), (0.33, 25.0), (0.26, 28.0), (0.32, 22.0), (0.37, 22.0))))
"""Table 17: Sachs flow cytometry, obs (its intervention rows dropped), directed F1 / SHD of each pretrained method."""
