"""Compose svmlab's Hydra config as `svmlab train` does, for the tests of configs and presets."""

from hydra import compose, initialize_config_module
from hydra.core.global_hydra import GlobalHydra

from svmlab.app.config.schema import register_configs


def composed(*overrides: str, hydra: bool = False):
    """The config for ``overrides`` (with Hydra's own node if ``hydra``)."""
    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_module("svmlab.conf", version_base="1.3"):
        return compose("config", overrides=list(overrides), return_hydra_config=hydra)
