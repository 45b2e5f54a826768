"""Simulation: SimGrid platforms generated from the synthetic machine models."""
