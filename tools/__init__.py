"""Development tools, run from a checkout: ``make demo`` (``tools.demo``),
``make airflow`` (``tools.standalone``), the demo's synthetic claims
(``tools.demo_data``) and the tests' and benchmarks' real Airflow server
(``tools.airflow_server``).

They live outside the Airflow plugin package ``deid`` (plugins/deid): a
deployment ships that package to its Airflow, and a tool that truncates the
source tables to load made-up claims (``demo_data --replace``) has no place
there.  Nothing in ``deid`` or ``anonymizers`` imports them, and they are not
installed (pyproject.toml installs ``anonymizers`` and ``deid`` only): run them
from the repository root, ``python -m tools.<name>``, as the Makefile does.
"""
