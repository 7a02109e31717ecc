"""Episodic memory: what was tried, and how it ended, in an append-only log."""

from fourfold.episodic.log import EpisodeLog
from fourfold.episodic.render import render_episode, render_episodes

__all__ = ["EpisodeLog", "render_episode", "render_episodes"]
