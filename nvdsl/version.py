"""nvdsl's version, on the ground floor: the compile cache keys by it."""

__version__ = "0.1.0"
