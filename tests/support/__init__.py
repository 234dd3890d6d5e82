"""Test-only solvers and helpers: plugged in like any outside solver, via hydra.searchpath."""
