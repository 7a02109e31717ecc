"""A small check set written by hand after the ranker's calibration was fixed, in wordings
unlike the generator's (`_paraphrase_data`): terse or chatty desk questions about the same
attribute types, and off-topic messages that are not trivia questions (small talk, commands,
code, an agent's own asides). Never tuned on; `relevance_gate.py` scores the floor on it.
"""

from __future__ import annotations

__all__ = ["OFF_TOPIC", "ON_TOPIC"]

#: Per attribute type, desk questions in other words than the generator's.
ON_TOPIC: dict[str, tuple[str, ...]] = {
    "contact": ("pref channel for follow-ups?", "ok to leave them a voicemail?"),
    "language": ("reply in what language pls", "will they be fine with an English reply?"),
    "location": ("local time for them right now?", "whereabouts on the map is this person?"),
    "plan": ("tier?", "what are they subscribed to exactly"),
    "payment": ("how does the money reach us from them?", "card or invoice for this one?"),
    "device": ("what hardware are they using our app on", "phone model?"),
    "access": ("does anything make reading our emails hard for them?", "any accessibility needs?"),
    "delivery": ("drop-off instructions?", "anything special for the courier?"),
    "name": ("what do I call them", "nickname?"),
    "hours": ("when can I catch them?", "good time slot to call back?"),
    "history": ("any past billing trouble?", "previous complaints on file?"),
    "tenure": ("long-time customer or new?", "since when are they with us"),
    "job": ("line of work?", "what's their business"),
    "dislikes": ("what annoys them", "pet peeves I should avoid?"),
    "diet": ("food restrictions?", "can we send them the snack box with nuts?"),
    "marketing": ("can I add them to the promo list?", "newsletter consent?"),
    "pets": ("any animals at home", "dog or cat owner?"),
    "budget": ("do they care much about price?", "will a pricier upgrade put them off?"),
    "approver": ("who signs off on their purchases?", "whose ok do we need before billing?"),
    "returns": ("have they sent anything back?", "any returned items before?"),
}

#: Messages to a support agent that no customer memory answers, none of them trivia questions.
OFF_TOPIC: tuple[str, ...] = (
    "hi there!",
    "thanks, that's all for today",
    "are you a real person or a bot?",
    "hold on a second, my coffee is getting cold",
    "sorry, wrong window",
    "lol",
    "can you write me a python function that reverses a list",
    "SELECT * FROM users WHERE id = 1",
    "what's 17 times 23",
    "remind me to call my mum at 5",
    "I think it's going to rain all weekend",
    "my cat just knocked a glass off the table",
    "ugh mondays",
    "play some jazz",
    "set a timer for ten minutes",
    "what should I cook for dinner tonight",
    "good morning team, standup in 5",
    "is it lunch time yet",
    "convert 30 celsius to fahrenheit",
    "I love this song",
    "do you dream?",
    "the printer on floor two is jammed again",
    "who's bringing cake for Friday?",
    "spell necessary",
    "ignore the previous message",
    "testing testing 123",
    "my flight to Rome got delayed",
    "what's your favourite colour",
    "how do you pronounce quinoa",
    "I need a vacation",
    "git push is rejected, what do I do",
    "happy birthday Maria!",
    "the wifi in the office keeps dropping",
    "what is the meaning of this word: ephemeral",
    "let's grab a beer after work",
    "draw me a cat",
    "can you summarise the news today",
    "I'm bored",
    "my knee hurts after running",
    "tell me something interesting",
)
