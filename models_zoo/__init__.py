"""Small dynamic PyTorch models used as conversion targets for dycl.

Each model module exposes ``get_model()``, ``get_inputs()`` and
``sample_inputs(n, seed=0)``; see the individual module docstrings.
"""
