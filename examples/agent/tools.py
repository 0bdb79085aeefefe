"""The agent's tools: plain Python functions the openai target runs when the model calls them
(target.openai.tools in evalgate.yml). Their signatures and docstrings are what the model is told."""

# A fixed world, so every run sees the same weather.
STATIONS = {
    "Paris": 20,
    "Oslo": 5,
    "Cairo": 35,
    "Lima": 15,
    "Seoul": 25,
    "Reykjavik": 0,
    "Nairobi": 30,
    "Toronto": -5,
    "Madrid": 10,
    "Tokyo": 25,
    "Sydney": 15,
    "Quito": 10,
}


def get_weather(city: str) -> dict:
    """The current temperature of a city, in degrees Celsius."""
    if city not in STATIONS:
        raise LookupError(f"no weather station in {city}")
    return {"city": city, "temp_c": STATIONS[city]}


def to_fahrenheit(celsius: float) -> float:
    """Degrees Celsius in degrees Fahrenheit."""
    return celsius * 9 / 5 + 32
