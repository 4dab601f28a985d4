"""etl.secrets: what is hidden (by the README's rule), what is not, and where."""

from __future__ import annotations

import json
import logging

import pytest

from etl import secrets


@pytest.fixture(autouse=True)
def clean_registry():
    secrets.clear()
    yield
    secrets.clear()


def test_long_value_hidden_in_every_form():
    value = 's3cr3t-"Val\\ue'
    secrets.register([value])
    text = (f"plain {value}, lower {value.lower()}, upper {value.upper()}, json {json.dumps(value)}, "
            f"repr {value!r}, url s3cr3t-%22Val%5Cue, cut '{value[:8]}...' and {value[:6]}…")
    assert secrets.redact(text) == ('plain ***, lower ***, upper ***, json "***", repr \'***\', url ***, '
                                    "cut '***...' and ***…")


def test_prefix_alone_is_not_hidden_without_a_cut_mark():
    secrets.register(["s3cr3t-Value"])
    assert secrets.redact("s3cr3t is a word") == "s3cr3t is a word"


def test_one_character_value_hidden_only_where_it_stands_as_a_value():
    secrets.register(["e"])
    text = "f.yaml:4:11: E103 unknown source type 'e'\nthe pipeline e\nurl?p=e&x=1\nname: e"
    assert secrets.redact(text) == ("f.yaml:4:11: E103 unknown source type '***'\nthe pipeline ***\n"
                                    "url?p=***&x=1\nname: ***")
    assert secrets.redact("every letter here stays") == "every letter here stays"


def test_empty_and_blank_values_are_nothing_to_hide():
    secrets.register(["", "  "])
    assert secrets.registered() == frozenset()
    assert secrets.redact("a  b") == "a  b"


def test_log_records_are_redacted(caplog):
    secrets.register(["s3cr3t-Value"])
    with caplog.at_level(logging.WARNING, logger="etl.rules"):
        logging.getLogger("etl.rules").warning("rejected %s at %s", "x", "http://u:s3cr3t-Value@h")
    assert caplog.records[-1].getMessage() == "rejected x at http://u:***@h"


def test_values_read_by_a_failing_template_are_registered(tmp_path):
    from etl.diagnostics import Report
    from etl.load import load_text

    report = Report()
    doc = load_text("name: {{ env('X') }}\nx: [\n", "p.yaml", report, environ={"X": "Zq9-hidden"})
    assert doc is None and [d.code for d in report.errors] == ["E001"]
    assert "Zq9-hidden" in secrets.registered()


@pytest.mark.parametrize("mode", ["plain", "json"])
def test_progress_lines_are_redacted(mode):
    import io

    from etl.runtime.progress import Progress

    secrets.register(["s3cr3t-Value"])
    out = io.StringIO()
    progress = Progress("p", mode=mode, stream=out)
    progress.on_progress({"name": "p/q-s3cr3t-Value", "batchId": 0, "numInputRows": 3})
    assert "s3cr3t" not in out.getvalue() and "q-***" in out.getvalue()


def test_url_passwords_are_hidden_whatever_their_origin():
    assert secrets.redact("retry 2 of 5: http://etl:literal-pw@es:9200/_bulk failed") == \
        "retry 2 of 5: http://etl:***@es:9200/_bulk failed"
    assert secrets.redact("jdbc:mysql://db:3306/x and http://host:9200/") == "jdbc:mysql://db:3306/x and http://host:9200/"


# ----------------------------------------------------------------- escaped forms (issue 35)
import base64  # noqa: E402
import re  # noqa: E402
import textwrap  # noqa: E402
from urllib.parse import quote, quote_plus  # noqa: E402

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from etl.regexes.hsregex import _esc  # noqa: E402


def hyperscan_escape(value: str) -> str:
    """How etl writes a literal into a Hyperscan/java.util.regex pattern (etl.regexes)."""
    return "".join(_esc(ord(c)) for c in value)


def java_string(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').encode("ascii", "backslashreplace").decode()


FORMS = {
    "plain": lambda v: v,
    "re.escape": re.escape,
    "hyperscan": hyperscan_escape,
    "hyperscan in a JSON string": lambda v: json.dumps(hyperscan_escape(v))[1:-1],
    "re.escape in a JSON string": lambda v: json.dumps(re.escape(v))[1:-1],
    "re.escape in a Python repr": lambda v: repr(re.escape(v))[1:-1],
    "java.util.regex \\x{..}": lambda v: "".join(c if c.isalnum() else f"\\x{{{ord(c):x}}}" for c in v),
    "json": lambda v: json.dumps(v)[1:-1],
    "json ascii": lambda v: json.dumps(v, ensure_ascii=True)[1:-1],
    "python repr": lambda v: repr(v)[1:-1],
    "sql quoted (Flink)": lambda v: v.replace("'", "''"),
    "sql quoted (Spark)": lambda v: v.replace("\\", "\\\\").replace("'", "\\'"),
    "url": lambda v: quote(v, safe=""),
    "url plus": quote_plus,
    "java string": java_string,
    "upper": str.upper,
    "lower": str.lower,
}


@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("value", ["Zm9vYmFy+c2VjcmV0/dG9rZW4=", "ghp_abc.def-123", "correct horse battery staple",
                                   "pä$$w'ord\"\\ü€😀", "tab\there\nnewline"])
def test_every_escaped_form_is_hidden(value, form):
    text = FORMS[form](value)
    secrets.register([value])
    out = secrets.redact(f"before <{text}> after")
    assert out == "before <***> after", (form, text, out)


@settings(max_examples=150, deadline=None)
@given(value=st.text(min_size=4, max_size=24).filter(lambda v: v.strip() and not v[0].isspace()
                                                      and not v[-1].isspace()),
       form=st.sampled_from(sorted(FORMS)))
def test_any_value_in_any_form_is_hidden(value, form):
    secrets.clear()
    secrets.register([value])
    text = FORMS[form](value)
    out = secrets.redact(f"[{text}]")
    assert out == "[***]", (value, form, text, out)


def test_a_value_wrapped_across_lines_is_hidden_whole():
    secrets.register(["correct horse battery staple"])
    line = "expr: customer = 'the quick brown fox jumps over the lazy dog and some words to correct horse battery staple'"
    wrapped = "\n".join(textwrap.wrap(line, 100, subsequent_indent="      "))
    assert "correct horse\n" in wrapped  # the wrap fell inside the value
    out = secrets.redact(wrapped)
    assert "horse" not in out and "battery" not in out and out.endswith("words to ***'")


def test_the_base64_of_a_value_is_hidden_at_any_offset():
    value = "Zq9-hidden-pw"
    secrets.register([value])
    for prefix in ("", "u:", "us:", "user:"):
        token = base64.b64encode(f"{prefix}{value}".encode()).decode()
        out = secrets.redact(f"Authorization: Basic {token}")
        assert "***" in out
        kept = out.removeprefix("Authorization: Basic ").split("***")
        # what is left around the mask is at most the groups mixing the value with its neighbours (<= 4 chars a side)
        assert len(kept[0]) <= len(base64.b64encode(prefix.encode())) and len(kept[1]) <= 4, out


def test_a_cut_form_is_hidden_and_a_mere_prefix_is_not():
    secrets.register(["ghp_abc.def-123"])
    assert secrets.redact('pattern "ghp\\\\_abc\\\\.d..." too long') == 'pattern "***..." too long'
    assert secrets.redact("ghp_abc is a word") == "ghp_abc is a word"


def test_java_replacements_mirror_redact():
    assert secrets.java_replacements() == [(secrets._URL_PASSWORD.pattern, "$1***@")]
    secrets.register(["ghp_abc.def-123"])
    pairs = secrets.java_replacements()
    assert len(pairs) == 2 and pairs[1][0].startswith("(?imu)") and pairs[1][1] == "***"
    # the same text, flags apart, as the Python pattern: one definition
    assert pairs[1][0].removeprefix("(?imu)") == secrets._matcher.source
