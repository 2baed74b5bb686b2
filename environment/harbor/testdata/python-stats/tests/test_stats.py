import importlib.util

import pytest


def load():
    spec = importlib.util.spec_from_file_location("stats_under_test", "/app/stats.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_mean():
    s = load()
    assert s.mean([1, 2, 3, 4]) == pytest.approx(2.5)
    assert s.mean([7]) == 7


def test_median():
    s = load()
    assert s.median([3, 1, 2]) == 2
    assert s.median([4, 1, 3, 2]) == pytest.approx(2.5)


def test_mode():
    s = load()
    assert s.mode([1, 2, 2, 3]) == 2
    assert s.mode([5, 4, 4, 5]) == 4


def test_no_statistics_module():
    with open("/app/stats.py") as f:
        assert "statistics" not in f.read().replace('"""Descriptive statistics', "")
