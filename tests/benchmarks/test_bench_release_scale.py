"""The scale benchmark's bookkeeping: stage spans and peaks from task records,
and the RESULTS.md summary (growth, speed-up, identical releases)."""

from __future__ import annotations

from datetime import datetime

import pytest

from benchmarks import run_all
from benchmarks.bench_release_scale import (
    TaskSampler,
    handoff_gaps,
    metadata_url,
    result_name,
    stages,
)

T0 = datetime.fromisoformat("2026-11-26T00:00:00+00:00").timestamp()


def _ti(tid, task, start, end, state="success", map_index=-1):
    return {"id": tid, "task_id": task, "map_index": map_index, "state": state,
            "start_date": f"2026-11-26T00:00:{start:02d}+00:00",
            "end_date": f"2026-11-26T00:00:{end:02d}+00:00"}


class _Sampler:
    """What stages() reads from a TaskSampler."""

    def __init__(self):
        self.peak = {"a": 100 * 2**20, "b": 300 * 2**20}
        self.cpu = {"a": 8.0, "b": 11.5}
        self.services = [(T0 + 1, {"scheduler": 1.0}),
                         (T0 + 9, {"scheduler": 2.5, "postgres": 0.5}),
                         (T0 + 15, {"scheduler": 4.0, "postgres": 1.0})]

    services_between = TaskSampler.services_between


def test_stages_span_mapped_instances_and_keep_the_largest_peak():
    tis = [_ti("a", "screen", 0, 10, map_index=0), _ti("b", "screen", 2, 14, map_index=1),
           _ti("c", "extract", 20, 25), _ti("d", "hhp_release", 0, 0, state="skipped")]
    out = stages(tis, _Sampler(), 2)
    assert out["screen"] == {"instances": 2, "task_seconds": 22.0, "peak_mb": 300,
                             "span_seconds": 14.0, "task_cpu_seconds": 19.5,
                             "first_start": T0, "last_end": T0 + 14,
                             # samples at or before 00:00:00 (none) and 00:00:14 (T0 + 9)
                             "service_cpu_seconds": {"postgres": 0.5, "scheduler": 2.5}}
    assert out["extract"]["peak_mb"] == 0 and "hhp_release" not in out
    assert out["extract"]["service_cpu_seconds"] == {"postgres": 0.0, "scheduler": 0.0}


def test_handoff_gaps_time_each_start_from_the_slot_that_freed_first():
    # two slots: c takes the slot freed at 4, d the one freed at 5 (c's ends at 9)
    assert handoff_gaps([(0, 4), (0, 5), (4.05, 9), (6, 7)], 2) == [0.05, 1.0]
    assert handoff_gaps([(2, 3), (0, 1)], 1) == [1.0]  # start order, not list order
    assert handoff_gaps([(0, 1)], 2) == []


def test_stages_record_handoff_gaps_only_beyond_the_first_wave():
    tis = [_ti("a", "screen", 0, 3, map_index=0), _ti("b", "screen", 4, 6, map_index=1),
           _ti("c", "extract", 7, 9)]
    out = stages(tis, _Sampler(), 1)
    assert out["screen"]["handoff_gaps"] == [1.0]
    assert "handoff_gaps" not in out["extract"]
    assert "handoff_gaps" not in stages(tis, _Sampler(), 2)["screen"]
    # another stage's task in a slot during the span: its running time is no hand-off
    tis.append(_ti("d", "measure", 2, 5))
    assert "handoff_gaps" not in stages(tis, _Sampler(), 1)["screen"]


def _record(stage_secs, wall, fingerprint, peaks=None):
    return {"figures": {"run_wall_seconds": wall, "max_task_peak_mb": 900,
                        "stages": {k: {"span_seconds": v, "instances": 6,
                                       "peak_mb": (peaks or {}).get(k)}
                                   for k, v in stage_secs.items()},
                        "extract": {"ratio_to_plain_copy": 0.9},
                        "load": {"ratio_to_plain_copy": 1.0},
                        "fingerprints": {"all": fingerprint}}}


def test_summary_reports_growth_speedup_and_identity():
    by_name = {"release_scale_10k_p2": _record({"screen": 5.0, "extract": 4.0}, 60, "x"),
               "release_scale_113k_p2": _record({"screen": 30.0, "extract": 40.0}, 300, "f"),
               "release_scale_113k_p1": _record({"screen": 57.0, "extract": 41.0}, 420, "f")}
    text = "\n".join(run_all.scale_summary(by_name))
    assert "| screen | 5 | 30 | 6 |" in text
    assert "| screen (6 tasks) | 57 | 30 | 1.9 |" in text
    assert "release identical: **yes**" in text
    by_name["release_scale_113k_p1"]["figures"]["fingerprints"]["all"] = "g"
    assert "release identical: **NO**" in "\n".join(run_all.scale_summary(by_name))
    assert run_all.scale_summary({}) == []
    by_name["release_scale_hhp_113k_p1"] = _record({"hhp_search": 80.0}, 400, "h")
    by_name["release_scale_hhp_113k_p2"] = _record({"hhp_search": 50.0}, 330, "h")
    text = "\n".join(run_all.scale_summary(by_name))
    assert "| hhp_search (6 tasks) | 80 | 50 | 1.6 |" in text
    assert text.count("release identical: **yes**") == 1  # HHP; disassociation differs now


def test_memory_table_lists_each_stage_by_size_largest_first():
    by_name = {"release_scale_10k_p2": _record({"screen": 5.0, "extract": 4.0}, 60, "x",
                                               {"screen": 400, "extract": 300}),
               "release_scale_113k_p2": _record({"screen": 30.0, "extract": 40.0}, 300, "f",
                                                {"screen": 410, "extract": 700})}
    by_name["release_scale_10k_p2"]["figures"]["stages"]["load"] = {"span_seconds": 1,
                                                                     "peak_mb": 0}
    lines = run_all.scale_summary(by_name)
    head = lines.index("| stage | tasks at 113k | 10k MB | 113k MB |")
    assert lines[head + 2:head + 5] == ["| extract | 6 | 300 | 700 |",
                                        "| screen | 6 | 400 | 410 |",
                                        "| load | n/a | n/a | n/a |"]


def _partitioned(screen: dict, dis: dict) -> dict:
    """A record whose stages are the two partitioned ones."""
    rec = _record({}, 100, "f")
    rec["figures"]["stages"] = {"screen": screen, "disassociation_disassociate": dis}
    return rec


def test_cpu_table_shows_task_cpu_and_cores_per_round():
    def stage(span, cpu, other):
        return {"span_seconds": span, "task_cpu_seconds": cpu, "instances": 6,
                "service_cpu_seconds": {"scheduler": other / 2, "postgres": other / 2}}

    def record(screen, dis):
        return _partitioned(stage(*screen), stage(*dis))

    by_name = {"release_scale_113k_p1": record((20.0, 19.0, 2.0), (25.0, 24.0, 3.0)),
               "release_scale_113k_p2": record((12.0, 21.0, 2.4), (16.0, 28.8, 3.0))}
    text = "\n".join(run_all._cpu(by_name, run_all.PARTITIONED))
    assert "| 1 | screen | 20, 19, 0.95, 2 | 12, 21, 1.75, 2.4 | 1.105 |" in text
    assert "| 1 | disassociation_disassociate | 25, 24, 0.96, 3 | 16, 28.8, 1.8, 3 | 1.2 |" in text
    del by_name["release_scale_113k_p2"]["figures"]["stages"]["screen"]["task_cpu_seconds"]
    assert "| screen |" not in "\n".join(run_all._cpu(by_name, run_all.PARTITIONED))
    assert run_all._cpu({}, run_all.PARTITIONED) == []


def test_side_by_side_stages_report_their_own_and_joint_speedup():
    def record(verify, measure):
        rec = _record({}, 100, "f")
        rec["figures"]["stages"] = {
            "disassociation_verify_batch": {"span_seconds": verify[1] - verify[0],
                                            "first_start": verify[0], "last_end": verify[1]},
            "disassociation_measure": {"span_seconds": measure[1] - measure[0],
                                       "first_start": measure[0], "last_end": measure[1]}}
        return rec["figures"]

    one, two = record((110.0, 136.0), (100.0, 109.0)), record((100.0, 120.0), (100.0, 110.0))
    text = "\n".join(run_all._side_by_side(one, two))
    assert "| disassociation_verify_batch, its own span | 26 | 20 | 1.3 |" in text
    assert "| disassociation_verify_batch and disassociation_measure | 36 | 20 | 1.8 |" in text
    del two["stages"]["disassociation_measure"]["first_start"]
    assert run_all._side_by_side(one, two) == []


def test_handoff_table_counts_late_handoffs_per_round():
    def record(screen_gaps, dis_gaps):
        return _partitioned({"handoff_gaps": screen_gaps}, {"handoff_gaps": dis_gaps})

    by_name = {"release_scale_113k_p1": record([0.04, 1.02, 0.05], [0.1] * 5),
               "release_scale_113k_p2": record([1.1, 0.9, 0.2, 0.5], [0.05] * 4)}
    text = "\n".join(run_all._handoffs(by_name, run_all.PARTITIONED))
    assert "| 1 | screen | 1 of 3, 1.02, 1.11 | 2 of 4, 2, 2.7 |" in text
    assert "| 1 | disassociation_disassociate | 0 of 5, 0, 0.5 | 0 of 4, 0, 0.2 |" in text
    del by_name["release_scale_113k_p2"]["figures"]["stages"]["screen"]["handoff_gaps"]
    assert "| screen |" not in "\n".join(run_all._handoffs(by_name, run_all.PARTITIONED))
    assert run_all._handoffs({}, run_all.PARTITIONED) == []


@pytest.mark.warehouse
def test_metadata_url_names_a_database_airflow_can_use(warehouse):
    import sqlalchemy

    url = metadata_url("airflow_meta_test")
    assert metadata_url("airflow_meta_test") == url  # the second call finds it
    assert url.startswith("postgresql+psycopg2://")
    engine = sqlalchemy.create_engine(url)
    try:
        with engine.connect() as conn:
            assert conn.exec_driver_sql("SELECT current_database()").scalar() == "airflow_meta_test"
    finally:
        engine.dispose()
        with warehouse.connect(autocommit=True) as conn, conn.cursor() as cur:
            cur.execute("DROP DATABASE airflow_meta_test")
    with pytest.raises(ValueError, match="plain lower-case"):
        metadata_url("meta; DROP DATABASE postgres")


def _round(screen, dis, fingerprint="f", state="success"):
    record = _record({"screen": screen, "disassociation_disassociate": dis}, 250, fingerprint)
    record["figures"]["run_state"] = state
    record["date"] = "2026-11-26T12:00:00+00:00"
    return record


def _rounds(pairs: dict) -> dict:
    return {result_name("disassociation", 113_000, p, r): record
            for r, pair in pairs.items() for p, record in zip((1, 2), pair)}


def test_summary_gives_every_round_and_the_median_speedup():
    by_name = _rounds({1: (_round(50.0, 40.0), _round(25.0, 20.0)),
                       2: (_round(48.0, 44.0), _round(32.0, 22.0)),
                       3: (_round(45.0, 42.0), _round(25.0, 30.0))})
    text = "\n".join(run_all.scale_summary(by_name))
    assert "| 2 (2026-11-26T12:00:00+00:00) | 48, 32, **1.5** | 44, 22, **2** | yes |" in text
    assert ("median speed-up over 3 rounds: screen **1.8x** (lowest 1.5x), "
            "disassociation_disassociate **2x** (lowest 1.4x)") in text
    assert "one release in every run: **yes**" in text
    by_name[result_name("disassociation", 113_000, 2, 3)]["figures"]["fingerprints"]["all"] = "g"
    text = "\n".join(run_all.scale_summary(by_name))
    assert "**1.8** | 42, 30, **1.4** | NO |" in text and "every run: **NO**" in text


def test_round_medians_skip_failed_and_missing_rounds_and_need_fingerprints():
    by_name = _rounds({1: (_round(50.0, 40.0), _round(25.0, 20.0)),
                       2: (_round(48.0, 44.0), _round(32.0, 22.0, state="failed")),
                       3: (_round(45.0, 42.0, fingerprint=None), _round(30.0, 28.0, None))})
    text = "\n".join(run_all.scale_summary(by_name))
    assert "| 2 | run success / failed |" in text
    assert "median speed-up over 2 rounds: screen **1.75x** (lowest 1.5x)" in text
    assert "| 3 (2026-11-26T12:00:00+00:00) | 45, 30, **1.5** | 42, 28, **1.5** | NO |" in text
    del by_name[result_name("disassociation", 113_000, 1, 3)]
    text = "\n".join(run_all.scale_summary(by_name))
    assert "| 3 | no result |" in text
    assert "over 1 rounds: screen **2x** (lowest 2x)" in text
    by_name[result_name("disassociation", 113_000, 1, 1)]["figures"]["stages"] = {}
    assert "screen n/a, disassociation_disassociate n/a" in "\n".join(
        run_all.scale_summary(by_name))
    del by_name[result_name("disassociation", 113_000, 2, 1)]  # one round left: no table
    assert "median" not in "\n".join(run_all.scale_summary(by_name))


def test_result_names():
    assert result_name("disassociation", 113_000, 2) == "release_scale_113k_p2"
    assert result_name("disassociation", 113_000, 1, 3) == "release_scale_113k_p1_r3"
    assert result_name("hhp", 113_000, 1) == "release_scale_hhp_113k_p1"


def test_scale_runs_interleave_the_rounds():
    big = [a for a in run_all.SCALE_RUNS if "113000" in a and "hhp" not in a]
    assert [(a[a.index("--parallelism") + 1], a[a.index("--round") + 1]) for a in big] == \
        [(p, str(r)) for r in range(1, run_all.SPEEDUP_ROUNDS + 1) for p in ("1", "2")]


def test_a_run_with_its_own_refine_window_is_named_apart_from_the_default_runs():
    assert result_name("disassociation", 113_000, 2) == "release_scale_113k_p2"
    assert result_name("disassociation", 113_000, 2, 1, "all") == "release_scale_113k_p2_wall"
    assert result_name("disassociation", 113_000, 2, 3, "4096") == "release_scale_113k_p2_w4096_r3"


@pytest.mark.parametrize("elsewhere", ["connection", "var_dir"])
def test_forgetting_releases_refuses_any_warehouse_but_its_own(monkeypatch, tmp_path, elsewhere):
    """The benchmark deletes its release's published history only in the
    embedded warehouse under its own directory, never through a defined
    ``warehouse`` connection (a real audit trail) or another var dir."""
    from benchmarks import bench_release_scale as brs

    if elsewhere == "connection":
        monkeypatch.setenv("DEID_VAR_DIR", str(brs.HOME))
        monkeypatch.setenv("AIRFLOW_CONN_WAREHOUSE", "postgresql://u:p@db.example/claims")
    else:
        monkeypatch.setenv("DEID_VAR_DIR", str(tmp_path))
        monkeypatch.delenv("AIRFLOW_CONN_WAREHOUSE", raising=False)
        monkeypatch.setattr("deid.warehouse.is_embedded", lambda: True)
    with pytest.raises(RuntimeError, match="its own embedded warehouse"):
        brs.forget_releases(brs.SPECS["disassociation"])
