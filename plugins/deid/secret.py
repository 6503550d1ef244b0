"""The deployment's secret token key (Airflow Variable ``deid_token_key``).

The key lives only in Airflow's secrets: an environment variable
(``AIRFLOW_VAR_DEID_TOKEN_KEY``), a secrets backend or the Variables table.
It never reaches the warehouse.  What the pipeline uses are values derived
from it, each with its own label, so that none exposes another:

- ``code_token_key``: keys the code tokens of restricted releases
  (``load.tokenize``); the data owner maps tokens back to codes with it;
- ``pseudonym_key``: keys the pseudonym permutations of every method
  (``anonymizers.pseudonyms``), so that a permutation cannot be drawn again
  from the seed a release records;
- ``key_fingerprint``: the only trace kept in the warehouse
  (``restricted.token_keys.key_sha256``), to tell which key made a release.

Derivation: the key is stretched with scrypt (RFC 7914) into a 32-byte
pseudo-random key, from which each value is HKDF-Expand (RFC 5869, HMAC-SHA256)
under its label.  HMAC being a pseudo-random function, knowing the fingerprint,
or the code-token key handed to whoever decodes tokens, tells nothing about
the pseudonym key or the secret; scrypt makes each guess of a weak secret
cost ~16 MiB and tens of milliseconds, so that a fingerprint does not give a
guessable key away cheaply.  A random key (``openssl rand -hex 32``) cannot
be guessed at all; keep it stable, since a new key deals the same records to
other pseudonyms and codes to other tokens.

docker-compose.yml sets it from ``.env``; ``make demo`` and ``make airflow``
generate one into ``var/token_key``.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import os

ENV = "AIRFLOW_VAR_DEID_TOKEN_KEY"  # Airflow's environment-variable backend
SALT = b"deid-claims token key v1"
LABELS = {"code_tokens": b"deid-claims code tokens v1",
          "pseudonyms": b"deid-claims pseudonym permutations v1",
          "fingerprint": b"deid-claims key fingerprint v1"}


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


def hkdf_expand(prk: bytes, info: bytes) -> bytes:
    """HKDF-Expand (RFC 5869 section 2.3) for one SHA-256 block: T(1), 32 bytes."""
    return hmac.new(prk, info + b"\x01", hashlib.sha256).digest()


@functools.lru_cache(maxsize=4)
def _stretched(secret: str) -> bytes:
    """scrypt(secret) with N=2^14, r=8, p=1: the pseudo-random key of HKDF."""
    return hashlib.scrypt(secret.encode(), salt=SALT, n=2 ** 14, r=8, p=1, dklen=32)


def derive(purpose: str, secret: str | None = None) -> bytes:
    """The 32-byte value of ``purpose`` (a key of ``LABELS``) from the secret."""
    return hkdf_expand(_stretched(secret if secret is not None else token_key()),
                       LABELS[purpose])


def code_token_key(secret: str | None = None) -> bytes:
    """The key of the code tokens (HMAC-SHA256 of each code, ``load.tokenize``)."""
    return derive("code_tokens", secret)


def pseudonym_key(secret: str | None = None) -> bytes:
    """The key of the pseudonym permutations."""
    return derive("pseudonyms", secret)


def key_fingerprint(secret: str | None = None) -> str:
    """Hex fingerprint of the secret, what ``restricted.token_keys`` keeps."""
    return derive("fingerprint", secret).hex()
