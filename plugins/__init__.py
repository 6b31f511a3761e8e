"""Built-in losses and feature maps of onlinekernel.

Registered through the ``onlinekernel`` entry-point group exactly as a
third-party plugin would be (see ``pyproject.toml``): the loss hooks live in
:mod:`onlinekernel_plugins.losses`, the feature-map hooks in
:mod:`onlinekernel_plugins.feature_maps`.
"""
