"""Episodic memory: what was tried, and how it ended, in an appended log that erasure can cut."""

from fourfold.episodic.log import SHARED_SCOPE, EpisodeLog
from fourfold.episodic.render import render_episode, render_episodes

__all__ = ["SHARED_SCOPE", "EpisodeLog", "render_episode", "render_episodes"]
