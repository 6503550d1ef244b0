"""UGACLIP (Loukides, Gkoulalas-Divanis & Malin, PNAS 2010, SI Algorithm 2):
generalize codes within utility constraints, suppress when that cannot help,
until every privacy constraint is held by at least k records."""

from anonymizers.ugaclip.algorithm import ugaclip
from anonymizers.ugaclip.baselines import aclip, suppression_only
from anonymizers.ugaclip.config import UGACLIPConfig, UGACLIPResult
from anonymizers.ugaclip.loss import information_loss
from anonymizers.ugaclip.policy import UtilityPolicy, load_utility_policy

__all__ = [
           "aclip",
           "suppression_only",
           "UGACLIPConfig",
           "UGACLIPResult",
           "UtilityPolicy",
           "information_loss",
           "load_utility_policy",
           "ugaclip",
]
