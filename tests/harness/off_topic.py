"""Questions a support agent gets that no desk's memory, episode or article answers: world
trivia, recipes, hobbies. The generated desks of the benchmarks and tests ask them as
*unrelated* off-topic queries (`harness.episode_desk`, `benchmarks/_paraphrase_data.py`)."""

from __future__ import annotations

__all__ = ["OFF_TOPIC"]

OFF_TOPIC: tuple[str, ...] = (
    "what's the weather like in Paris tomorrow?",
    "recommend a good science fiction novel",
    "how many moons does Jupiter have?",
    "translate good morning into Italian",
    "write a haiku about autumn leaves",
    "who won the football world cup in 1998?",
    "what is a good recipe for banana bread?",
    "how do I change a flat tyre on a bicycle?",
    "explain quantum entanglement simply",
    "what is the square root of 144?",
    "who painted the Mona Lisa?",
    "how tall is Mount Everest?",
    "what's the plot of Hamlet?",
    "best exercises for lower back pain",
    "how long should I boil an egg?",
    "what are black holes made of?",
    "tips for growing tomatoes on a balcony",
    "when did the Roman Empire fall?",
    "how do vaccines train the immune system?",
    "what's the difference between a violin and a viola?",
    "suggest a name for a goldfish",
    "how do I tie a bowline knot?",
    "what causes the northern lights?",
    "is chess older than backgammon?",
    "how many players are on a rugby team?",
    "what's the capital of Mongolia?",
    "summarise the theory of evolution",
    "how does a jet engine work?",
    "what rhymes with orange?",
    "tell me a joke about penguins",
    "what is the speed of light?",
    "how do bees make honey?",
    "what is the tallest building in the world?",
    "how can I improve my sleep?",
    "what's the best way to learn the guitar?",
    "who discovered penicillin?",
    "how do tides work?",
    "what year did the Berlin Wall come down?",
    "how are diamonds formed?",
    "what's a good stretching routine for runners?",
)
