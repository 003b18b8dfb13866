"""Benchmark environments of causal_gym, one subpackage per benchmark (heuresis, ...)."""
