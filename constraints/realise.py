"""Moved to `lift.realise` (stage "realised": the constraint spaces build no IR): `substitute_sizes`
stays importable from here only for the modules that still import it from here
(rewrites/choose.py); import it from `lift.realise`."""

from lift.realise import substitute_sizes

__all__ = ["substitute_sizes"]
