"""Simulated users: personas that talk with a prompt version over many turns.

Flow: `scenarios/personas/*.yaml` -> Persona (persona.py) -> a simulator LLM plays the persona
against the companion -> a played conversation goes through the same runner, scoring and store
as a scripted scenario (family "personas") -> conversation-level metrics read its turns together
with the persona's facts.
"""
