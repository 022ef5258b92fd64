"""Jinja2 templates of the HTML report page, autoescaped: the page, its header and the cards.

Why templates: the report shows text a run brings in (version and prompt names, notices,
rule messages, coverage steps); in a template every such value is escaped unless it is
marked as markup, so none can break or script the page, and the markup reads as markup.
Values are escaped the way `html.escape(..., quote=True)` does (`finalize`), so the page is
byte for byte what the hand-built strings gave. The sections not yet moved here (charts,
tables) are built in evaluators/report/html.py and come in as markup.
"""

from __future__ import annotations

from html import escape

from jinja2 import DictLoader, Environment
from markupsafe import Markup


def _escaped(value: object) -> Markup:
    """Every value a template prints: markup as it is, anything else escaped."""
    if isinstance(value, Markup):
        return value
    return Markup(escape("" if value is None else str(value), quote=True))


PAGE = (
    '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
    '<meta name="viewport" content="width=device-width, initial-scale=1">'
    '<title>{{ title }}</title><link rel="icon" href="data:,"><style>{{ css }}</style></head><body>'
    "{{ body }}</body></html>\n"
)

HEADER = (
    '<header><h1>Penpal release report</h1><p class="muted">run <code>{{ report.run_id }}</code> · '
    "{{ rubric.name }} v{{ rubric.version }} (<code>{{ report.rubric_hash }}</code>) · {{ decided }} decided</p>"
    "{% if report.sample_data %}"
    '<p class="banner">These scores are of the recorded sample replies (replay), not of a live model.</p>'
    "{% endif %}"
    '{% for notice in report.notices %}<p class="banner">{{ notice }}</p>{% endfor %}'
    "{% for decision in report.decisions %}{% set coverage = decision.coverage %}"
    "{% if coverage is not none and not coverage.complete %}"
    '<p class="banner coverage"><strong>{{ decision.prompt_version }}</strong>: the run does not cover its '
    "scenario set ({{ coverage.message }}). "
    "{% for step in coverage.finish %}{% if not loop.first %}; {% endif %}{{ step }}{% endfor %}."
    '{% if coverage.failed %} <a href="#failed-cases">The failed cases, with their reasons.</a>{% endif %}</p>'
    "{% endif %}{% endfor %}"
    "{% for decision in report.decisions %}{% set evidence = decision.safety_evidence %}"
    "{% if decision.refused and evidence is not none %}"
    '<p class="banner safety-refused" data-refused="{{ decision.refused }}"><strong>Safety not verified: '
    "{{ 'deploy' if decision.refused == 'deploy' else 'A/B test' }} of {{ decision.prompt_version }} refused"
    "</strong> ({{ evidence.unverified }} of {{ evidence.relevant }} safety-relevant replies unverified; "
    "{{ evidence.sentence() }}). Verify them: <code>{{ evidence.verify }}</code></p>"
    "{% endif %}{% endfor %}"
    "</header>"
)

CARD = (
    '<article class="card outcome-{{ decision.outcome }}" id="version-{{ slug }}" '
    'data-outcome="{{ decision.outcome }}">'
    '<span class="badge {{ decision.outcome }}">{{ outcome_title }}</span>'
    "<h3>{{ decision.prompt_version }}</h3>"
    '<p class="muted">{{ decision.prompt_name }} · '
    "{% if decision.baseline %}baseline <code>{{ decision.baseline }}</code>{% else %}no baseline{% endif %}</p>"
    '<dl class="figures"><dt>average</dt><dd><span class="big">{{ average }}</span> '
    '{{ level_tag }}<br><span class="muted">{{ decision.average_of }}</span></dd>'
    "<dt>composite</dt><dd>{{ composite }}</dd>"
    "{% for title, name, value, sentence in counts %}"
    '<dt>{{ title }}</dt><dd data-count="{{ name }}" data-value="{{ value }}">{{ sentence }}</dd>'
    "{% endfor %}"
    "<dt>cases</dt><dd>{{ aggregate.scored }} of the {{ aggregate.cases }} in the store scored"
    '{% if aggregate.failed %} (<a href="#failed-cases">{{ failed }}, with the reasons</a>){% endif %}</dd>'
    "{% set coverage = decision.coverage %}{% if coverage is not none %}"
    '<dt>coverage</dt><dd class="coverage">{{ coverage.message }}'
    '{% for step in coverage.finish %}<br><span class="muted">{{ step }}</span>{% endfor %}'
    "{% if decision.partial %}<br><strong>decided on partial evidence: never deploy</strong>{% endif %}</dd>"
    "{% endif %}"
    "{% set evidence = decision.safety_evidence %}{% if evidence is not none %}"
    '<dt>safety evidence</dt><dd class="safety-evidence" data-unverified="{{ evidence.unverified }}">'
    "{{ evidence.sentence() }}{% if decision.refused %}<br><strong>"
    "{{ 'deploy' if decision.refused == 'deploy' else 'A/B test' }} refused until they are verified</strong>"
    "{% endif %}</dd>{% endif %}"
    "{% if judge %}<dt>judge overall</dt><dd>{{ judge.overall }} ({{ judge.verdicts }}; "
    "{{ judge.fallbacks }} left out)</dd>{% endif %}"
    "</dl>"
    '<h4>Why</h4><ul class="reasons">'
    "{% for reason in reasons %}"
    '<li class="{{ reason.css }}"><code>{{ reason.name }}</code> {{ reason.message }}'
    "{% if reason.links %}"
    ' <span class="change">What to change: '
    '{% for href, label in reason.links %}{% if not loop.first %}, {% endif %}<a href="#{{ href }}">{{ label }}</a>'
    "{% endfor %}.</span>"
    "{% endif %}</li>"
    "{% endfor %}"
    "</ul></article>"
)

ENVIRONMENT = Environment(loader=DictLoader({"page.html": PAGE, "header.html": HEADER, "card.html": CARD}),
                          autoescape=True, finalize=_escaped, keep_trailing_newline=True)


def render(name: str, **values: object) -> Markup:
    """Template `name` filled with `values`; strings that are markup must come as `Markup`."""
    return Markup(ENVIRONMENT.get_template(name).render(**values))
