"""Hydra configuration tree of svmlab (shipped as package data)."""
