"""Independent verifiers: each re-checks a method's guarantee from its output.

Nothing here imports the algorithm it checks; a verifier is written from the
paper's definition, the slow and obvious way where that is fast enough.
Each verifier returns a ``Verdict``.
"""

from anonymizers.verify.verdict import Verdict

__all__ = ["Verdict"]
