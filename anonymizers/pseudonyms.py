"""Fresh pseudonyms for released records.

A pseudonym carries nothing of the source id: it is a random permutation of
0..n-1 drawn from the caller's generator, formatted with a prefix.

Whoever can draw that permutation again maps every pseudonym back to its
source record.  Drawn from the recorded seed alone, anyone who knows the seed
(it is in the release's audit row and its release file) and holds the source
data (an insider; anyone, for a public source such as DE-SynPUF) can replay
the method and draw it.  So a deployment draws it from ``keyed``: a
generator seeded by HMAC-SHA256 of its secret key (a subkey of the token
key), the seed and the stream name, reproducible only by the key's holders.
The command line keys it too (``anonymizers.cli.options``): with the key of
``--pseudonym-key-file``, or else with a fresh random key that is never
written, so that no one, the operator included, can draw it again; so does
the Python API (``anonymizers.run``/``plan``, ``anonymizers.api._keyed``).

``generator`` falls back to the caller's own generator only when it is given
no key (or no seed): a caller of a method's library function (``lda(...)``,
``ugaclip(...)``...) that passes ``pseudonym_key=None`` with a seed gets
pseudonyms that anyone holding the seed can replay.  The
keyed stream is separate from the method's: a key changes the pseudonyms,
never the rest of the release.
"""

from __future__ import annotations

import hashlib
import hmac
import os

import numpy as np

from anonymizers.errors import ParameterError

FRESH = "fresh key, not replayable"  # how a release says its pseudonyms were drawn
FRESH_KEY_BYTES = 32


def fresh_key() -> bytes:
    """A key nobody holds: it lives in this process only (the command line's
    and the Python API's pseudonyms when no key is given)."""
    return os.urandom(FRESH_KEY_BYTES)


def keyed(key: bytes, seed, stream: str = "pseudonyms") -> np.random.Generator:
    """The generator of a pseudonym permutation under the secret ``key``."""
    if not isinstance(key, (bytes, bytearray)) or not key:
        raise ParameterError("pseudonym_key", "must be non-empty bytes (the secret token key)")
    digest = hmac.new(bytes(key), f"{stream}\x1f{seed}".encode(), hashlib.sha256).digest()
    return np.random.default_rng(int.from_bytes(digest, "big"))


def generator(key: bytes | None, seed, unkeyed: np.random.Generator) -> np.random.Generator:
    """``keyed(key, seed)`` when a key and a seed are given, else ``unkeyed``
    (without a seed, ``unkeyed`` draws fresh entropy, which no one replays)."""
    return keyed(key, seed) if key is not None and seed is not None else unkeyed


def fresh(n: int, rng: np.random.Generator, prefix: str = "R") -> np.ndarray:
    """``n`` distinct pseudonyms in a random order drawn from ``rng``."""
    width = max(1, len(str(max(n - 1, 0))))
    order = rng.permutation(n)
    return np.array([f"{prefix}{i:0{width}d}" for i in order], dtype=object)
