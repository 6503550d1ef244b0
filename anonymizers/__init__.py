"""De-identification methods for diagnosis-code and claims data.

A plain Python library: it never imports Airflow, never opens a database
connection and never reads environment variables.  Every method is a function
of (data, a frozen config dataclass) returning a result dataclass; see
``anonymizers.records`` for the shared integer encoding of codes.
"""

__version__ = "0.1.0"
