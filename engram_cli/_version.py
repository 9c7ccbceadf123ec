"""The package version, in a module of its own so that anything may import it without a circle."""

__version__ = "0.2.0"
