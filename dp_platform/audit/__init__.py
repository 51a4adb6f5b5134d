"""The empirical privacy audit (``dp-platform audit``): canaries, probes, a distinguisher and
the lower bounds its guesses prove (docs/privacy.md, "The empirical audit")."""
