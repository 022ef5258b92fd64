"""Running prompt versions: the configuration of a run (config), the companion's replies from
a live API or recordings (responder), every version over every scenario with each reply
scored and stored (runner), simulated users over many turns (simulation/), and production
replies scored like a run's (production).
"""
