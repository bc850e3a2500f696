"""The collector thresholds an applier process runs with."""

from __future__ import annotations

import gc

import pytest

from engine.gc_tuning import THRESHOLDS, relax_garbage_collector


@pytest.fixture
def restore_thresholds():
    saved = gc.get_threshold()
    yield
    gc.set_threshold(*saved)


def test_the_default_thresholds_are_raised(restore_thresholds) -> None:
    gc.set_threshold(700, 10, 10)
    relax_garbage_collector()
    assert gc.get_threshold() == THRESHOLDS
    assert gc.isenabled()  # rarer collections, not none


def test_thresholds_set_higher_are_kept(restore_thresholds) -> None:
    higher = tuple(t * 2 for t in THRESHOLDS)
    gc.set_threshold(*higher)
    relax_garbage_collector()
    assert gc.get_threshold() == higher
