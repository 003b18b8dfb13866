"""CausalArena's local families (Appendix A.1), registered in :mod:`causal_gym.scm`.

Importing this module registers (names new to causal_gym carry the ``arena_`` prefix, so the
global registries stay unambiguous; families that are the same thing as a built-in are reused):

- 16 **mechanism tags** realised by 17 generator forms (the two multiplicative forms share a
  tag, as in the paper's analyses). ``linear`` (:class:`~causal_gym.scm.mechanisms.Linear`) and
  ``mlp`` are the built-ins; the other 15 forms are ``arena_*`` mechanisms. Each form is an
  ordinary causal_gym mechanism, ``f(pa) + eps``, usable on its own with ``SCM.random``.
- 14 **root distributions** ``arena_root_*``: noise families (a root's value is its noise) that
  also expose ``quantile(params, u)``, so dependent root blocks can give every root its own
  marginal through a copula.
- 15 **noise tags**: ``gaussian``, ``uniform``, ``laplace`` and ``student_t`` reuse the
  built-in noise families (unit-variance draws times ``scale``, the standard deviation); beta,
  exponential, Gumbel, mixture-outlier and no-noise draws are ``arena_*`` noise families; the
  tags whose noise does not simply add (multiplicative lognormal, heteroskedastic, RFF
  heteroskedastic, quantized, censored; target-R^2 picks its scale from the signal) are
  *couplings* applied by the node wrapper.
- three wrappers: ``arena_node`` (a structural node: standardised inputs, a form, a
  standardised and gain-scaled signal, a noise coupling, optional hidden additive inputs),
  ``arena_root_copula`` (a root of a dependent root block) and ``arena_blend`` (a soft
  intervention, the stressor of A.1).

A structural node computes, with ``z`` its parents standardised on a reference draw (and
guarded to ``[-10, 10]``, :data:`INPUT_GUARD`),

    ``s = gain * amplitude * (f(z) - center) / spread``,   ``X = couple(s, eps) + sum(hidden)``

``center``/``spread`` make the form's output mean 0, variance 1 on the SCM's own observational
distribution, so every form lives on the scale the paper's noise ranges assume and deep graphs
cannot blow up (a degree-4 polynomial of a degree-4 polynomial ...). The paper's pure output
scales become ``amplitude`` (random-function product ``U[0.4, 1.6]``, RFF ``U[0.4, 2.5]``; 1
otherwise); weights scaled by ``0.8 / sqrt(k)`` and additive biases of forms that are affine in
them (linear) are absorbed by the standardisation. ``gain`` is 1, or 0.45 under the weak-signal
stressor, and is what ``ParameterShift`` scales.

Parameter ranges follow A.1 item by item and are the keyword defaults of each
``sample_params``; choices where the paper is silent are stated in each docstring.

The package holds one concept per module: :mod:`.tags` (the tables and counting rules),
:mod:`.forms`, :mod:`.roots`, :mod:`.noises` and :mod:`.nodes`; importing it registers them all.
"""

from __future__ import annotations

from causal_gym.envs.arena.families import roots  # noqa: F401 -- registers the arena_root_* noise families
from causal_gym.envs.arena.families.forms import ACTIVATIONS, form_config
from causal_gym.envs.arena.families.nodes import INPUT_GUARD, ArenaNode
from causal_gym.envs.arena.families.noises import NoiseChoice, calibrate_noise, couple, draw_noise
from causal_gym.envs.arena.families.tags import (
    COUPLINGS,
    FORM_AMPLITUDE,
    MECHANISM_FORMS,
    MECHANISM_TAGS,
    NOISE_TAGS,
    ROOT_FAMILIES,
    mixing_count_range,
    root_family_count_range,
    root_noise_name,
)

__all__ = [
    "MECHANISM_TAGS",
    "MECHANISM_FORMS",
    "FORM_AMPLITUDE",
    "ROOT_FAMILIES",
    "NOISE_TAGS",
    "COUPLINGS",
    "ACTIVATIONS",
    "INPUT_GUARD",
    "NoiseChoice",
    "ArenaNode",
    "mixing_count_range",
    "root_family_count_range",
    "root_noise_name",
    "form_config",
    "draw_noise",
    "calibrate_noise",
    "couple",
]

