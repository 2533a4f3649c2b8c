"""Peer implementations the suites compare nvdsl against (imported only when a suite runs them)."""
