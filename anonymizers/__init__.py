"""De-identification methods for diagnosis-code and claims data.

A plain Python library: it never imports Airflow, never opens a database
connection and never reads environment variables.  Every method is a function
of (data, a frozen config dataclass) returning a result dataclass; each
config declares its parameters once (``anonymizers.declare``), from which the
command line and the Airflow Param schemas (``anonymizers.methods``) derive.
See ``anonymizers.records`` for the shared integer encoding of codes.
"""

__version__ = "0.1.0"

# ``anonymizers.verify`` is the package of independent verifiers, so the
# API's ``verify(method, inputs, release)`` is exported here as ``check``.
_API = {"config": "anonymizers.api", "method": "anonymizers.api", "plan": "anonymizers.api",
        "run": "anonymizers.api", "check": "anonymizers.api",
        "Release": "anonymizers.release", "StepPlan": "anonymizers.release",
        "VerificationFailed": "anonymizers.release", "Verdict": "anonymizers.release"}
__all__ = sorted(_API)


def __getattr__(name: str):
    """The Python API (``anonymizers.api``), imported on first use so that
    ``import anonymizers`` stays light for the CLI and the Airflow plugin."""
    if name not in _API:
        raise AttributeError(f"module 'anonymizers' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_API[name]), name)
