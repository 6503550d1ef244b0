"""Section 5 of Loukides et al. 2014 reproduced exactly: the data of Fig. 1,
the utility constraints of Fig. 3b, k = 3, m = 2, maxClusterSize = 6 give the
clusters of Fig. 11, the chunks of Fig. 4 and the shared chunk of Fig. 10."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest

from anonymizers.disassociation import DisassociationConfig, disassociate
from anonymizers.disassociation import metrics
from anonymizers.disassociation.horpart import horpart
from anonymizers.disassociation.prepare import prepare
from anonymizers.disassociation.reconstruct import reconstruct
from anonymizers.disassociation.verpart import _ordered
from anonymizers.verify.disassociation import verify_disassociation

FIG1 = {
    "r1": ["296.00", "296.01", "296.02", "834.0", "944.01"],
    "r2": ["296.00", "296.02", "296.01", "401.0", "944.01", "692.71", "695.10"],
    "r3": ["296.00", "296.02", "692.71", "834.0", "695.10"],
    "r4": ["296.00", "296.01", "692.71", "401.0"],
    "r5": ["296.00", "296.01", "296.02", "692.71", "695.10"],
    "r6": ["296.03", "295.04", "404.00", "480.1"],
    "r7": ["294.10", "296.03", "834.0", "944.01"],
    "r8": ["294.10", "295.04", "296.03", "480.1"],
    "r9": ["294.10", "295.04", "404.00"],
    "r10": ["294.10", "295.04", "296.03", "834.0", "944.01"],
}
FIG3B = [["294.10", "295.04", "296.00", "296.01", "296.02", "296.03"],
         ["692.71", "695.10"], ["401.0", "404.00"], ["480.1"], ["834.0", "944.01"]]
FIG5 = {
    "r1": ["296.00", "296.01", "834.0", "944.01"],
    "r2": ["296.02", "296.01", "692.71", "834.0"],
    "r3": ["296.00", "296.01", "296.02", "692.71", "695.10", "834.0"],
    "r4": ["296.00", "296.02", "692.71", "695.10"],
    "r5": ["296.00", "296.01", "296.02", "692.71", "695.10", "401.0"],
    "r6": ["296.02", "295.04", "480.1"],
    "r7": ["294.10", "296.02", "404.00", "834.0", "944.01"],
    "r8": ["294.10", "295.04", "296.02", "480.1", "834.0"],
    "r9": ["294.10", "295.04", "404.00", "834.0"],
    "r10": ["294.10", "295.04", "296.02", "834.0", "944.01"],
}


def long(table: dict) -> pd.DataFrame:
    return pd.DataFrame([(p, c) for p, codes in table.items() for c in codes],
                        columns=["patient_id", "code"])


def config(**kw) -> DisassociationConfig:
    return DisassociationConfig(3, 2, max_cluster_size=6, utility_policy=FIG3B, seed=7, **kw)


def bag(subrecords) -> Counter:
    return Counter(tuple(sorted(s)) for s in subrecords)


def test_horpart_gives_the_clusters_of_fig11():
    prep = prepare(long(FIG1), FIG3B, (), False)
    clusters = horpart(prep.records.matrix, prep.constraint, ~prep.sensitive, 6)
    got = [sorted(prep.records.patients[c.rows].tolist()) for c in clusters]
    assert got == [["r1", "r2", "r3", "r4", "r5"], ["r10", "r6", "r7", "r8", "r9"]]


def test_verpart_orders_p1_as_in_section5():
    prep = prepare(long(FIG1), FIG3B, (), False)
    p1 = prep.records.matrix[:5]
    support = np.asarray(p1.sum(axis=0)).ravel()
    chunkable = np.flatnonzero(support >= 3)
    order = prep.records.codes[_ordered(chunkable, support, prep.constraint)].tolist()
    assert order == ["296.00", "296.01", "296.02", "692.71", "695.10"]


def test_vertical_partitioning_gives_the_chunks_of_fig4():
    result = disassociate(long(FIG1), config(refine=False))
    p1, p2 = result.clusters
    assert (p1.size, p2.size) == (5, 5)
    assert [c.codes for c in p1.record_chunks] == [("296.00", "296.01", "296.02"),
                                                   ("692.71", "695.10")]
    assert bag(p1.record_chunks[0].subrecords) == bag(
        [["296.00", "296.01", "296.02"]] * 3 + [["296.00", "296.02"], ["296.00", "296.01"]])
    assert bag(p1.record_chunks[1].subrecords) == bag(
        [[], ["692.71", "695.10"], ["692.71", "695.10"], ["692.71"], ["692.71", "695.10"]])
    assert set(p1.item_chunk) == {"834.0", "401.0", "944.01"}
    assert [c.codes for c in p2.record_chunks] == [("294.10", "295.04", "296.03")]
    assert bag(p2.record_chunks[0].subrecords) == bag(
        [["296.03", "295.04"], ["294.10", "296.03"], ["294.10", "295.04", "296.03"],
         ["294.10", "295.04"], ["294.10", "295.04", "296.03"]])
    assert set(p2.item_chunk) == {"404.00", "480.1", "834.0", "944.01"}
    assert result.shared_chunks == ()


def test_refining_gives_the_shared_chunk_of_fig10():
    result = disassociate(long(FIG1), config())
    (shared,) = result.shared_chunks
    assert shared.clusters == (0, 1)
    assert shared.codes == ("834.0", "944.01")
    assert bag(shared.subrecords) == bag([["834.0", "944.01"]] * 3 + [["944.01"], ["834.0"]]
                                         + [[]] * 5)
    p1, p2 = result.clusters
    assert set(p1.item_chunk) == {"401.0"}
    assert set(p2.item_chunk) == {"404.00", "480.1"}
    assert [c.codes for c in p1.record_chunks] == [("296.00", "296.01", "296.02"),
                                                   ("692.71", "695.10")]


@pytest.mark.parametrize("refine", [False, True])
def test_the_example_release_passes_the_verifier(refine):
    data = long(FIG1)
    verdict = verify_disassociation(data, disassociate(data, config(refine=refine)).to_json())
    assert verdict.ok, verdict.violations
    assert verdict.checked > 0


def test_json_form_of_fig10():
    doc = disassociate(long(FIG1), config()).to_json()
    assert doc["k"] == 3 and doc["m"] == 2
    assert [c["size"] for c in doc["clusters"]] == [5, 5]
    assert all(len(ch["subrecords"]) == 5 for c in doc["clusters"] for ch in c["record_chunks"])
    assert doc["shared_chunks"][0]["clusters"] == [0, 1]
    assert len(doc["shared_chunks"][0]["subrecords"]) == 10


def test_our_reconstruction_is_a_possible_dataset_of_fig4():
    """Fig. 5 itself is garbled in the text (its r2 lacks 296.00, which chunk
    C1 of P1 gives to all five records, and P2 uses 296.02 for 296.03), so we
    check the property it illustrates on our own draw: every record takes one
    subrecord of every chunk of its cluster, plus item-chunk codes."""
    release = disassociate(long(FIG1), config(refine=False)).release
    drawn = reconstruct(release, seed=11)
    records = [set(g["code"]) for _, g in drawn.groupby("patient_id")]
    for cluster in release.clusters:
        local = set().union(*(set(ch.codes) for ch in cluster.record_chunks))
        mine = [r for r in records if r & local]
        assert len(mine) == cluster.size
        for chunk in cluster.record_chunks:
            assert bag(r & set(chunk.codes) for r in mine) == bag(chunk.subrecords)
        assert set().union(*mine) - local <= set(cluster.item_chunk)


def test_attacker_knowing_29601_and_8340_faces_three_records():
    """Section 3.2: with 296.01 and 834.0 the attacker must consider Fig. 5,
    where r1, r2, r3 hold both."""
    fig5 = long(FIG5)
    assert metrics.count(fig5, [("296.01", "834.0")])[0] == 3


def test_mre_and_are_on_fig1_against_fig5():
    """u3 = {401.0, 404.00} matches r2, r4, r6, r9 in Fig. 1 (Section 1.1) and
    r5, r7, r9 in Fig. 5: MRE = (4 - 3) / 4."""
    original, anonymized = long(FIG1), long(FIG5)
    values = metrics.mre(original, anonymized, FIG3B)
    assert values[2] == pytest.approx(0.25)
    assert metrics.matches(original, FIG3B).tolist() == [10, 4, 4, 2, 5]
    # 834.0: 4 -> 7 records; {296.00, 296.01}: 4 -> 3 records
    assert metrics.are(original, anonymized, [("834.0",), ("296.00", "296.01")]) == \
        pytest.approx((3 / 4 + 1 / 4) / 2)


def test_reconstruction_of_the_example_keeps_record_chunk_supports():
    data = long(FIG1)
    release = disassociate(data, config()).release
    drawn = reconstruct(release, seed=3)
    counts = drawn["code"].value_counts()
    original = data["code"].value_counts()
    for code in ("296.00", "296.01", "296.02", "692.71", "695.10", "294.10", "295.04",
                 "296.03", "834.0", "944.01"):
        assert counts[code] == original[code]
    assert 1 <= counts["401.0"] <= 5 and 1 <= counts["404.00"] <= 5
    assert drawn["patient_id"].nunique() == 10
