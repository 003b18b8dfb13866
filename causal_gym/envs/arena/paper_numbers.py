"""CausalArena's published numbers, which ``causal-gym reproduce arena`` prints beside ours
(:mod:`.reproduce`): the method names, and the cells of Tables 2, 8, 9, 10, 11 and 18 with their
column orders; and the rows of its pretrained (amortized) methods, whose released checkpoints this
machine cannot download, printed beside our own amortized method's whenever a run includes one
(Tables 9 and 18, and the Sachs row of Table 17).
"""

from __future__ import annotations

__all__ = ["PAPER_NAMES", "PAPER_TABLE2", "PAPER_TABLE8", "PAPER_TABLE9", "PAPER_TABLE10", "PAPER_TABLE11",
           "PAPER_TABLE18", "PAPER_PRETRAINED", "PAPER_PRETRAINED_TABLE9", "PAPER_PRETRAINED_TABLE18",
           "PAPER_PRETRAINED_SACHS"]

PAPER_NAMES = {"pc": "PC", "ges": "GES (causal-learn)", "ges_fast": "GES", "gies": "GIES (gies pkg)",
               "gies_fast": "GIES", "direct_lingam": "LiNGAM", "notears": "NOTEARS", "dagma": "DAGMA",
               "random_regress": "RandomRegress", "xges": "XGES", "notears_mlp": "NOTEARS-MLP",
               "das": "DAS", "sdcd": "SDCD", "igsp": "IGSP", "cdis": "CDIS", "alternet": "AlterNet",
               "cdfm": "CDFM", "avici": "AVICI"}

_PAPER_ROW = {"ges": "gies", "ges_fast": "gies", "gies_fast": "gies", "xges": "gies"}
"""Our method -> the paper's row it is compared with (GES against GIES: see *Methods* in :mod:`.reproduce`)."""

# Table 2 (F1, SHD): Syn./Sem./Form. x obs / obs+int; methods without intervention support have no obs+int cells.
PAPER_TABLE2: dict[str, dict[str, tuple[float, float]]] = {
    "random_regress": {"synthetic/obs": (0.28, 218.0), "semantic/obs": (0.25, 93.2), "formula/obs": (0.20, 108.3)},
    "gies": {"synthetic/obs": (0.48, 123.6), "synthetic/obs+int": (0.48, 134.0), "semantic/obs": (0.55, 33.4),
             "semantic/obs+int": (0.57, 32.9), "formula/obs": (0.47, 36.7), "formula/obs+int": (0.52, 34.7)},
    "pc": {"synthetic/obs": (0.31, 115.4), "semantic/obs": (0.33, 33.5), "formula/obs": (0.22, 31.1)},
    "direct_lingam": {"synthetic/obs": (0.21, 109.6), "semantic/obs": (0.20, 38.9), "formula/obs": (0.24, 34.7)},
    "dagma": {"synthetic/obs": (0.28, 107.2), "semantic/obs": (0.18, 42.0), "formula/obs": (0.18, 39.7)},
    "notears": {"synthetic/obs": (0.28, 104.2), "semantic/obs": (0.20, 38.1), "formula/obs": (0.18, 35.2)},
    "notears_mlp": {"synthetic/obs": (0.35, 107.0), "semantic/obs": (0.22, 44.9), "formula/obs": (0.19, 44.1)},
    "das": {"synthetic/obs": (0.34, 142.6), "semantic/obs": (0.21, 59.5), "formula/obs": (0.16, 64.8)},
    "sdcd": {"synthetic/obs": (0.38, 135.5), "synthetic/obs+int": (0.38, 148.1), "semantic/obs": (0.36, 51.2),
             "semantic/obs+int": (0.36, 51.7), "formula/obs": (0.28, 61.5), "formula/obs+int": (0.29, 61.6)},
    "igsp": {"synthetic/obs": (0.41, 135.6), "synthetic/obs+int": (0.39, 132.8), "semantic/obs": (0.31, 40.8),
             "semantic/obs+int": (0.31, 39.9), "formula/obs": (0.21, 43.3), "formula/obs+int": (0.16, 40.7)},
    "cdis": {"synthetic/obs": (0.38, 143.0), "synthetic/obs+int": (0.40, 140.1), "semantic/obs": (0.40, 31.7),
             "semantic/obs+int": (0.40, 31.9), "formula/obs": (0.23, 31.0), "formula/obs+int": (0.23, 30.9)},
}

# Table 9: synthetic F1 by d, (obs, obs+int); None where the paper has no cell.
_DIMS = (10, 20, 30, 50, 100)
PAPER_TABLE9: dict[str, dict[int, tuple[float, float | None]]] = {
    "random_regress": dict(zip(_DIMS, ((0.34, None), (0.31, None), (0.28, None), (0.25, None), (0.23, None)))),
    "gies": dict(zip(_DIMS, ((0.49, 0.55), (0.49, 0.49), (0.49, 0.48), (0.47, 0.45), (0.47, 0.44)))),
    "pc": dict(zip(_DIMS, ((0.42, None), (0.34, None), (0.31, None), (0.26, None), (0.20, None)))),
    "direct_lingam": dict(zip(_DIMS, ((0.29, None), (0.23, None), (0.21, None), (0.18, None), (0.13, None)))),
    "dagma": dict(zip(_DIMS, ((0.34, None), (0.30, None), (0.29, None), (0.27, None), (0.22, None)))),
    "notears": dict(zip(_DIMS, ((0.33, None), (0.30, None), (0.28, None), (0.26, None), (0.21, None)))),
    "notears_mlp": dict(zip(_DIMS, ((0.39, None), (0.38, None), (0.36, None), (0.34, None), (0.29, None)))),
    "das": dict(zip(_DIMS, ((0.43, None), (0.38, None), (0.34, None), (0.30, None), (0.25, None)))),
    "sdcd": dict(zip(_DIMS, ((0.38, 0.40), (0.39, 0.39), (0.39, 0.38), (0.38, 0.36), (0.37, 0.36)))),
    "igsp": dict(zip(_DIMS, ((0.49, 0.47), (0.45, 0.42), (0.42, 0.40), (0.36, 0.34), (0.32, 0.30)))),
    "cdis": dict(zip(_DIMS, ((0.36, 0.44), (0.39, 0.42), (0.39, 0.40), (0.38, 0.38), (0.36, 0.35)))),
}

# Table 8: synthetic F1 by graph family, (obs, obs+int).
_FAMILY_ORDER = ("erdos_renyi", "scale_free", "chain", "tree", "layered", "collider_rich", "bipartite_layered",
                 "dense_local_module", "small_world", "block_sparse_layered")
PAPER_TABLE8: dict[str, dict[str, tuple[float, float | None]]] = {
    method: dict(zip(_FAMILY_ORDER, zip(obs, interventional)))
    for method, obs, interventional in (
        ("random_regress", (0.27, 0.27, 0.30, 0.27, 0.27, 0.27, 0.27, 0.31, 0.30, 0.30), (None,) * 10),
        ("gies", (0.50, 0.42, 0.45, 0.44, 0.52, 0.49, 0.61, 0.45, 0.44, 0.47),
         (0.48, 0.46, 0.50, 0.48, 0.50, 0.47, 0.51, 0.46, 0.48, 0.47)),
        ("pc", (0.28, 0.25, 0.34, 0.30, 0.32, 0.28, 0.29, 0.35, 0.31, 0.34), (None,) * 10),
        ("direct_lingam", (0.18, 0.21, 0.22, 0.22, 0.21, 0.19, 0.18, 0.23, 0.19, 0.23), (None,) * 10),
        ("dagma", (0.23, 0.34, 0.30, 0.37, 0.26, 0.24, 0.19, 0.32, 0.25, 0.36), (None,) * 10),
        ("notears", (0.24, 0.30, 0.30, 0.33, 0.27, 0.23, 0.20, 0.30, 0.24, 0.34), (None,) * 10),
        ("notears_mlp", (0.32, 0.39, 0.37, 0.41, 0.32, 0.32, 0.29, 0.39, 0.32, 0.40), (None,) * 10),
        ("das", (0.34, 0.39, 0.31, 0.38, 0.33, 0.33, 0.30, 0.37, 0.30, 0.35), (None,) * 10),
        ("sdcd", (0.41, 0.41, 0.34, 0.39, 0.39, 0.39, 0.41, 0.37, 0.36, 0.36),
         (0.40, 0.41, 0.35, 0.38, 0.39, 0.40, 0.38, 0.35, 0.37, 0.34)),
        ("igsp", (0.37, 0.41, 0.38, 0.43, 0.39, 0.38, 0.46, 0.44, 0.36, 0.45),
         (0.36, 0.39, 0.37, 0.40, 0.37, 0.36, 0.44, 0.41, 0.35, 0.43)),
        ("cdis", (0.42, 0.30, 0.33, 0.31, 0.40, 0.41, 0.58, 0.34, 0.34, 0.34),
         (0.42, 0.32, 0.36, 0.35, 0.42, 0.42, 0.58, 0.39, 0.36, 0.38)),
    )
}


# Table 10: synthetic F1 by root dependency, (obs, obs+int); the paper's "correlated normal" is our
# common-factor block, "random covariance normal" our random-covariance block.
_ROOT_ORDER = ("common_factor", "independent", "random_covariance", "uniform_ball")
PAPER_TABLE10: dict[str, dict[str, tuple[float, float | None]]] = {
    method: dict(zip(_ROOT_ORDER, zip(obs, interventional)))
    for method, obs, interventional in (
        ("random_regress", (0.23, 0.29, 0.22, 0.30), (None,) * 4),
        ("gies", (0.37, 0.49, 0.39, 0.54), (0.40, 0.49, 0.40, 0.51)),
        ("pc", (0.25, 0.31, 0.26, 0.32), (None,) * 4),
        ("direct_lingam", (0.21, 0.21, 0.19, 0.20), (None,) * 4),
        ("dagma", (0.32, 0.28, 0.31, 0.24), (None,) * 4),
        ("notears", (0.30, 0.28, 0.29, 0.24), (None,) * 4),
        ("notears_mlp", (0.38, 0.35, 0.37, 0.32), (None,) * 4),
        ("das", (0.33, 0.34, 0.33, 0.32), (None,) * 4),
        ("sdcd", (0.36, 0.39, 0.36, 0.38), (0.35, 0.38, 0.35, 0.38)),
        ("igsp", (0.35, 0.41, 0.37, 0.43), (0.34, 0.39, 0.35, 0.40)),
        ("cdis", (0.27, 0.38, 0.30, 0.45), (0.29, 0.41, 0.30, 0.47)),
    )
}

# Table 11: synthetic F1 by difficulty component, (obs, obs+int); "baseline" is the clean case and a
# configuration with two stressors counts in both columns.
_COMPONENT_ORDER = ("baseline", "distribution_shift", "feature_corruption", "feature_warping", "high_noise",
                    "missingness", "outliers", "soft_interventions", "weak_signal")
PAPER_TABLE11: dict[str, dict[str, tuple[float, float | None]]] = {
    method: dict(zip(_COMPONENT_ORDER, zip(obs, interventional)))
    for method, obs, interventional in (
        ("random_regress", (0.28, 0.28, 0.27, 0.27, 0.30, 0.27, 0.26, 0.28, 0.30), (None,) * 9),
        ("gies", (0.51, 0.50, 0.45, 0.46, 0.52, 0.45, 0.36, 0.49, 0.50),
         (0.52, 0.46, 0.46, 0.48, 0.53, 0.46, 0.37, 0.45, 0.51)),
        ("pc", (0.33, 0.32, 0.31, 0.30, 0.31, 0.31, 0.23, 0.31, 0.31), (None,) * 9),
        ("direct_lingam", (0.26, 0.23, 0.18, 0.21, 0.16, 0.20, 0.06, 0.22, 0.22), (None,) * 9),
        ("dagma", (0.31, 0.30, 0.28, 0.29, 0.30, 0.29, 0.16, 0.29, 0.27), (None,) * 9),
        ("notears", (0.30, 0.29, 0.27, 0.28, 0.28, 0.29, 0.14, 0.28, 0.26), (None,) * 9),
        ("notears_mlp", (0.36, 0.36, 0.34, 0.35, 0.39, 0.35, 0.32, 0.36, 0.35), (None,) * 9),
        ("das", (0.34, 0.35, 0.32, 0.33, 0.41, 0.32, 0.30, 0.34, 0.35), (None,) * 9),
        ("sdcd", (0.40, 0.40, 0.36, 0.39, 0.42, 0.36, 0.28, 0.40, 0.40), (0.40, 0.37, 0.36, 0.39, 0.41, 0.37, 0.29, 0.38, 0.38)),
        ("igsp", (0.42, 0.43, 0.38, 0.39, 0.46, 0.39, 0.30, 0.41, 0.43),
         (0.41, 0.41, 0.35, 0.38, 0.43, 0.37, 0.29, 0.40, 0.41)),
        ("cdis", (0.40, 0.39, 0.35, 0.37, 0.39, 0.36, 0.31, 0.38, 0.38),
         (0.42, 0.43, 0.37, 0.40, 0.40, 0.38, 0.32, 0.41, 0.41)),
    )
}


# Table 18: the sample-size suite (d = 30, 10 configurations per graph family, obs), (F1, SHD) by n.
_SIZES = (100, 200, 500, 1000, 2000, 5000, 10000)
PAPER_TABLE18: dict[str, dict[int, tuple[float, float]]] = {
    method: dict(zip(_SIZES, cells))
    for method, cells in (
        ("random_regress", ((0.25, 76.6), (0.28, 76.8), (0.28, 84.1), (0.29, 88.8), (0.28, 99.2), (0.27, 113.0),
                            (0.26, 125.7))),
        ("gies", ((0.35, 61.8), (0.41, 56.2), (0.46, 54.2), (0.49, 54.6), (0.50, 57.9), (0.49, 65.3), (0.49, 70.6))),
        ("pc", ((0.25, 50.6), (0.27, 50.2), (0.30, 50.8), (0.31, 52.5), (0.32, 54.3), (0.31, 57.9), (0.31, 60.1))),
        ("direct_lingam", ((0.20, 51.3), (0.20, 50.5), (0.21, 49.7), (0.22, 49.5), (0.21, 49.4), (0.21, 49.5),
                           (0.21, 49.5))),
        ("dagma", ((0.27, 53.0), (0.29, 50.1), (0.29, 49.6), (0.29, 49.1), (0.29, 48.8), (0.29, 49.0), (0.29, 49.0))),
        ("notears", ((0.26, 49.2), (0.28, 48.2), (0.28, 47.7), (0.28, 47.4), (0.28, 47.5), (0.28, 47.3),
                     (0.27, 47.5))),
        ("notears_mlp", ((0.26, 78.2), (0.32, 57.9), (0.35, 51.5), (0.36, 49.9), (0.36, 49.9), (0.37, 49.4),
                         (0.36, 49.6))),
        ("das", ((0.22, 61.5), (0.28, 61.5), (0.32, 65.4), (0.35, 67.5), (0.36, 71.0), (0.35, 104.7), (0.36, 87.1))),
        ("sdcd", ((0.22, 118.1), (0.26, 100.0), (0.35, 75.3), (0.38, 68.7), (0.40, 62.8), (0.41, 59.2), (0.43, 54.2))),
        ("igsp", ((0.25, 52.3), (0.31, 51.8), (0.38, 52.2), (0.41, 54.3), (0.43, 58.9), (0.43, 68.8), (0.43, 76.8))),
        ("cdis", ((0.23, 51.1), (0.29, 49.4), (0.36, 48.4), (0.39, 50.8), (0.40, 54.2), (0.42, 60.0), (0.43, 61.7))),
    )
}

# The pretrained methods' rows.
PAPER_PRETRAINED = ("Arrow", "AVICI", "CauScale", "CDFM", "FoundCause", "SEA", "TabCausal")
"""The paper's pretrained methods, in its row order."""

PAPER_PRETRAINED_TABLE9: dict[str, dict[int, tuple[float, float | None]]] = {
    name: dict(zip(_DIMS, cells)) for name, cells in zip(PAPER_PRETRAINED, (
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
    name: dict(zip(_SIZES, cells)) for name, cells in zip(PAPER_PRETRAINED, (
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
