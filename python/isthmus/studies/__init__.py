"""Reproductions of published studies, one module each."""
