"""The Heritage Health Prize claims release method (El Emam et al., "De-
identification methods for open health data: the case of the Heritage Health
Prize claims dataset", JMIR 2012, Multimedia Appendix): screening of
high-risk members and claims (section 2), truncation of claims per member
(section 1), global recoding (sections 7-11), adversary power (section 4),
Monte-Carlo risk per generalization-lattice node (section 5), lattice search
and marketer risk (section 6).

    result = hhp_release(claims_df, HHPConfig(seed=7))
    result.members, result.claims      # the release tables
    result.metrics, result.lattice     # chosen node, risks, search record

``screen(claims_df, policy)``, ``truncate_table``, ``assess_node`` (the risk
of one node), ``RiskModel`` and ``marketer_risk`` are usable alone.

Input: a claims table, one row per claim (a pandas DataFrame; extra columns
are ignored).

==================  ========  ==================================================
column              required  content
==================  ========  ==================================================
member_id           yes       the member's source id (str); never released
claim_id            yes       the claim's source id (str); never released
service_date        yes       date of service: datetime64, 'YYYYMMDD' or
                              'YYYY-MM-DD'
age_at_service      yes       whole years >= 0 at the service date
sex                 yes       '1'/'2' or 'M'/'F' (CMS: 1 = male); one per member
dx_code             yes       primary ICD-9-CM diagnosis, undotted as CMS writes
                              it ('4019', 'V5869', 'E8889'; dots are removed);
                              may be empty
other_dx_codes      no        further diagnoses of the claim separated by ';',
                              ',' or spaces: used by screening only
procedure_code      no        CPT/HCPCS code; may be empty
place_of_service    no        CMS two-digit place of service code; may be empty
specialty           no        provider specialty: CMS specialty code ('08') or a
                              name of the paper's section 10 ('family practice')
length_of_stay      no        days; empty or 0 = no stay
birth_date          no        the member's birth date (for the newborn rule of
                              section 2 only; never released)
==================  ========  ==================================================

An optional column that is absent or empty throughout removes its quasi-
identifier (and its screening rules) from the run; the metrics say which
(``qis_absent``, ``screening_not_applied``).  DE-SynPUF, for instance, has no
place of service or specialty.

Release: ``members`` (member_id pseudonym, age at first claim, sex, claims
per member) and ``claims`` (member_id, dx = primary condition group,
procedure = CPT group, place_of_service and specialty groups, length_of_stay,
dsfc = days since the member's first claim), every value a label of the
chosen node's level; no dates, no source ids.  ``anonymizers.verify.claims``
checks a release independently.
"""

from anonymizers.claims.adversary import adversary_power, eta_cap, simpson_index
from anonymizers.claims.config import HHPConfig
from anonymizers.claims.lattice import build_lattice, search
from anonymizers.claims.marketer import marketer_risk
from anonymizers.claims.policy import ScreeningPolicy, load_policy
from anonymizers.claims.recoding import ALL_QIS, CLAIM_QIS, MEMBER_QIS, prepare
from anonymizers.claims.release import (
    EvaluatedNode,
    HHPResult,
    assess_node,
    hhp_release,
    release_risk,
)
from anonymizers.claims.risk import NodeRisk, RiskModel, RiskSettings
from anonymizers.claims.screening import ScreeningResult, screen
from anonymizers.claims.truncation import truncate_table, truncation_threshold

__all__ = [
    "ALL_QIS", "CLAIM_QIS", "MEMBER_QIS", "EvaluatedNode", "HHPConfig", "HHPResult",
    "NodeRisk", "RiskModel", "RiskSettings", "ScreeningPolicy", "ScreeningResult",
    "adversary_power", "assess_node", "build_lattice", "eta_cap", "hhp_release",
    "load_policy", "marketer_risk", "prepare", "release_risk", "screen", "search",
    "simpson_index", "truncate_table", "truncation_threshold",
]
