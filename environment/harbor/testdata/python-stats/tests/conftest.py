"""Writes /logs/verifier/ctrf.json (CTRF) from pytest's own reports: the
per-test results traj reads, without the pytest-json-ctrf plugin (not in
Debian)."""
import json
import time

_tests = []


def pytest_runtest_logreport(report):
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        status = {"passed": "passed", "failed": "failed", "skipped": "skipped"}[report.outcome]
        _tests.append({"name": report.nodeid.split("::")[-1], "status": status,
                       "duration": int(report.duration * 1000),
                       "message": str(report.longrepr)[-1000:] if report.failed else ""})


def pytest_sessionfinish(session, exitstatus):
    passed = sum(t["status"] == "passed" for t in _tests)
    failed = sum(t["status"] == "failed" for t in _tests)
    report = {"results": {"tool": {"name": "pytest"},
                          "summary": {"tests": len(_tests), "passed": passed, "failed": failed,
                                      "pending": 0, "skipped": len(_tests) - passed - failed, "other": 0,
                                      "start": 0, "stop": int(time.time() * 1000)},
                          "tests": _tests}}
    with open("/logs/verifier/ctrf.json", "w") as f:
        json.dump(report, f)
