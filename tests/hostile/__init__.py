"""Regression suites of hostile input: each case is one class of bad input an operator could
hand the platform, driven through the real command line."""
