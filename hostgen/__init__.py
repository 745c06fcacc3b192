"""hostgen: source code for the host program and the region functions."""
from .host import host_source
from .regions import regions_source

__all__ = ["host_source", "regions_source"]
