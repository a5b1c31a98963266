"""Baseline control programs, one module each."""
