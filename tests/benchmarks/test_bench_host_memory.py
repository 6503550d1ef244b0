"""The host memory probe runs and reports every case: its structure only (with no
idle time nothing is cold here, and the figures are the host's)."""

from __future__ import annotations

from benchmarks import bench_host_memory


def test_probe_reports_each_case_for_every_round():
    out = bench_host_memory.measure(16, 2, idle=0.0)
    cases = {"warm_one", "cold_one", "cold_two", "warm_two"}
    assert set(out["seconds_median_slowest_process"]) == cases
    assert len(out["all_rounds"]) == 2
    for r in out["all_rounds"]:
        assert set(r) == cases
        assert len(r["cold_two"]) == len(r["warm_two"]) == 2  # two processes at once
        assert all(0 < s < 60 for times in r.values() for s in times)
    assert out["cold_over_warm_one"] > 0


def test_page_reporting_is_read_from_the_kernel_command_line(monkeypatch, tmp_path):
    cmdline = tmp_path / "cmdline"
    cmdline.write_text("quiet page_reporting.page_reporting_order=11 panic=1\n")
    real = bench_host_memory.Path
    monkeypatch.setattr(bench_host_memory, "Path",
                        lambda p: cmdline if p == "/proc/cmdline" else real(p))
    assert bench_host_memory.page_reporting() == "page_reporting.page_reporting_order=11"
    cmdline.write_text("quiet\n")
    assert bench_host_memory.page_reporting() is None
