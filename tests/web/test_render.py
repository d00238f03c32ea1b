"""claimtrace.web.render: what a page may carry (JSON in a script, quotes, invisible characters) and
the templates it is rendered from."""

from __future__ import annotations

import json
import re
from pathlib import Path

from claimtrace.web.render import STATIC, TEMPLATES, json_for_script


def test_json_for_script_escapes_everything_that_could_end_a_script():
    text = str(json_for_script({"a": "</script><!-- & \u2028 \u2029 >"}))
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == {"a": "</script><!-- & \u2028 \u2029 >"}


def test_quotes_are_never_nested_and_invisible_characters_are_shown():
    from claimtrace.web.render import _quoted, _visible

    assert _quoted('"South Australia has the highest power prices in the world".') == (
        '"South Australia has the highest power prices in the world".'
    )
    assert _quoted("Sea levels rise.") == "“Sea levels rise.”"
    # a claim that opens a quotation and never closes it (claim-871): one opening mark, not two
    assert (
        _quoted("“As it happens, Zika may also be a good model.") == "“As it happens, Zika may also be a good model.”"
    )
    shown = str(_visible("elec\u00adtricity\u200b<b>"))
    assert "U+00AD" in shown and "U+200B" in shown and "&lt;b&gt;" in shown and "\u00ad" not in shown


def test_no_template_has_inline_script():
    """The Content-Security-Policy allows no inline script: no on* handler attribute, no
    <script> with code (JSON data blocks and the site's own script files are fine)."""
    for template in Path(TEMPLATES).glob("*.html"):
        text = template.read_text(encoding="utf-8")
        assert not re.search(r"<[^>]*\son[a-z]+\s*=", text, re.IGNORECASE), template.name
        for tag in re.findall(r"<script\b[^>]*>", text, re.IGNORECASE):
            assert "application/json" in tag or "src=" in tag, (template.name, tag)
        assert "javascript:" not in text.lower(), template.name
    assert "preventDefault" in (STATIC / "app-forms.js").read_text(encoding="utf-8")
