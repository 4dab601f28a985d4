"""etl.load.secrets: what is hidden (by the README's rule), what is not, and where."""

from __future__ import annotations

import json
import logging

import pytest

from etl.load import secrets


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
