"""Successive releases of one scope (issue 25): what an adversary who keeps
every release learns, and what the pipeline promises against it.

- ``check.check(method, history, new, params)``: the independent
  cross-release verifier run at validate time;
- ``registry.attack_for(method)``: the comparison attack of each method,
  imported on use (``harness`` holds the shared machinery);
- one module per method (``disassociation``, ``kanon`` for UGACLIP and LDA,
  ``gccens``; ``medco`` is MedCo's): its attack and its defence.

The threat model and the reading of each guarantee across releases are in
docs/threat-model-successive.md.
"""
