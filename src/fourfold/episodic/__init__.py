"""Episodic memory: what was tried, and how it ended, in an appended log that erasure can cut."""

from fourfold.episodic._index import dense_text, lexical_text
from fourfold.episodic.log import PENDING_SCOPE, SHARED_SCOPE, EpisodeLog
from fourfold.episodic.render import render_episode, render_episodes, render_ticket

__all__ = ["PENDING_SCOPE", "SHARED_SCOPE", "EpisodeLog", "dense_text", "lexical_text", "render_episode", "render_episodes",
           "render_ticket"]
