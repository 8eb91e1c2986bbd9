"""The package's version, in one place: the package face, the run record and setup.py read it."""

__version__ = "0.1.0"
