"""The liftcl version (read by the build-cache key and `lift.__version__`)."""

__version__ = "0.1.0"
