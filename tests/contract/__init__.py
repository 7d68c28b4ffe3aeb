"""Tests of the pure helpers of :mod:`common.contract` that no single program owns."""
