"""The system under test: answers "What is the capital of X?". Most answers are plain; four hedge
("Canberra, or maybe Sydney"), which the people who labelled the cases fail and a lenient judge
passes; four are wrong."""

from __future__ import annotations

RIGHT = {
    "France": "Paris", "Germany": "Berlin", "Italy": "Rome", "Spain": "Madrid", "Japan": "Tokyo", "Egypt": "Cairo",
    "Kenya": "Nairobi", "Peru": "Lima", "Norway": "Oslo", "Greece": "Athens", "Chile": "Santiago",
    "Poland": "Warsaw", "Cuba": "Havana", "Iran": "Tehran", "Ireland": "Dublin", "Austria": "Vienna",
}  # fmt: skip
HEDGED = {
    "Australia": "Canberra, or maybe Sydney",
    "Canada": "Ottawa, unless it is Toronto",
    "Brazil": "Brasília, though Rio de Janeiro is also said",
    "Turkey": "Ankara or Istanbul",
}
WRONG = {"Switzerland": "Zurich", "Morocco": "Casablanca", "Nigeria": "Lagos", "Vietnam": "Ho Chi Minh City"}


def answer(question: str) -> str:
    country = question.removeprefix("What is the capital of ").removesuffix("?")
    return {**RIGHT, **HEDGED, **WRONG}[country]
