"""The deployment's secret token key (Airflow Variable ``deid_token_key``).

It keys the code tokens of restricted releases (``load.tokenize``) and the
pseudonym permutations of every method (``anonymizers.pseudonyms``), so that
neither can be recomputed from what a release and its audit row record.
docker-compose.yml sets it from ``.env``; ``make demo`` and ``make airflow``
generate one into ``var/token_key``.
"""

from __future__ import annotations

import os

ENV = "AIRFLOW_VAR_DEID_TOKEN_KEY"  # Airflow's environment-variable backend


def token_key() -> str:
    """The key, from the environment first, then Airflow's Variables; an
    error saying what to set when neither has it."""
    value = os.environ.get(ENV)
    if not value:
        try:
            from airflow.sdk import Variable

            value = Variable.get("deid_token_key")
        except Exception as exc:  # noqa: BLE001 - any lookup failure means: not set
            raise RuntimeError(f"the secret token key is not set: set the Airflow Variable "
                               f"deid_token_key (or {ENV})") from exc
    if not value:
        raise RuntimeError(f"the secret token key is empty: set the Airflow Variable "
                           f"deid_token_key (or {ENV})")
    return value


def pseudonym_key() -> bytes:
    """The key of the pseudonym permutations."""
    return token_key().encode()
