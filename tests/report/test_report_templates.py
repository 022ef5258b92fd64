"""The report's templates escape every value a run brings in, and leave markup as markup.

A version name, a notice or a rule message is text from a run; in the page it must show as
text (`<script>` as `&lt;script&gt;`), quoted the way `html.escape` quotes, while the pieces
the report draws itself (charts, level tags) come in as markup and stay markup.
"""

from __future__ import annotations

from types import SimpleNamespace

from markupsafe import Markup

from evaluators.report.templates import render

HOSTILE = "<script>alert(\"x's\")</script> & more"


def test_text_is_escaped_as_html_escape_quotes_it():
    page = render("page.html", title=HOSTILE, css=Markup("a > b {}"), body=Markup("<main>ok</main>"))
    assert "<title>&lt;script&gt;alert(&quot;x&#x27;s&quot;)&lt;/script&gt; &amp; more</title>" in page
    assert "<script>" not in page


def test_markup_is_left_as_markup():
    page = render("page.html", title="t", css=Markup("a > b {}"), body=Markup("<main>ok</main>"))
    assert "<style>a > b {}</style>" in page and "<body><main>ok</main></body>" in page


def test_a_header_escapes_notices_and_coverage():
    coverage = SimpleNamespace(complete=False, message=HOSTILE, finish=["<i>resume</i>", "b"], failed=0)
    report = SimpleNamespace(run_id="<r>", rubric_hash="h", sample_data=False, notices=[HOSTILE],
                             decisions=[SimpleNamespace(prompt_version="<v>", coverage=coverage)])
    header = render("header.html", report=report, rubric=SimpleNamespace(name="R", version="1"), decided="1 version")
    assert "<r>" not in header and "<v>" not in header and "<i>" not in header and "<script>" not in header
    assert "run <code>&lt;r&gt;</code>" in header
    assert "(&lt;script&gt;" in header and "&lt;i&gt;resume&lt;/i&gt;; b." in header
