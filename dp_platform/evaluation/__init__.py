"""Evaluation of the releases: error metrics and the non-private oracle bounds.

The experiment runner and plots live here too once the core and data layer land; this package
never imports dagster.
"""
