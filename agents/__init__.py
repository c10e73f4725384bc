"""Baseline agents. An agent sees only its seat's observation and returns a legal action."""

from agents.random_agent import RandomAgent

__all__ = ["RandomAgent"]
