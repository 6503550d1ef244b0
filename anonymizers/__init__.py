"""De-identification methods for diagnosis-code and claims data.

A plain Python library: it never imports Airflow, never opens a database
connection and never reads environment variables.  Every method is a function
of (data, a frozen config dataclass) returning a result dataclass; each
config declares its parameters once (``anonymizers.declare``), from which the
command line and the Airflow Param schemas (``anonymizers.methods``) derive.
See ``anonymizers.records`` for the shared integer encoding of codes.
"""

__version__ = "0.1.0"
