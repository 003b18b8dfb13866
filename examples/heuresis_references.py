"""Reproduce the Heuresis reference tables (Tables 2, 3 and 11 next to the paper's numbers).

Same as ``causal-gym reproduce heuresis``; see :mod:`causal_gym.envs.heuresis.reproduce` for the
options (``--quick`` for a few instances per family, ``--difficulty-only`` for Table 2).

    python examples/heuresis_references.py --quick
"""

from causal_gym.envs.heuresis.reproduce import main

if __name__ == "__main__":
    main()
