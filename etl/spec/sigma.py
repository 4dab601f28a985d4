"""The `sigma:` block of a filter: Sigma rule files, which of them to load, and how their fields map."""

from __future__ import annotations

from typing import Literal, Union

from pydantic import Field

from etl.spec.base import Model

# output of a filter with rules (any rules, Sigma or not) in tag mode with details, and in alerts mode
DETAIL_TYPE = "array<struct<rule:string,id:string,title:string,level:string,tags:array<string>>>"
ALERT_COLUMNS = {"rule": "string", "rule_id": "string", "rule_title": "string", "rule_level": "string",
                 "rule_tags": "array<string>"}

SigmaLevel = Literal["informational", "low", "medium", "high", "critical"]
SigmaStatus = Literal["stable", "test", "experimental", "deprecated", "unsupported"]


class SigmaSelect(Model):
    """Which rules of the files are loaded: every given key must match (logsource keys case-insensitively)."""

    product: str | None = Field(default=None, description="logsource product, e.g. windows")
    category: str | None = Field(default=None, description="logsource category, e.g. process_creation")
    service: str | None = Field(default=None, description="logsource service, e.g. security")
    status: list[SigmaStatus] = Field(default_factory=list, description="allowed statuses (all when empty)")
    level: list[SigmaLevel] = Field(default_factory=list, description="allowed levels (all when empty)")


class SigmaSpec(Model):
    """Sigma rules of a filter (see README "Sigma rules")."""

    paths: list[str] = Field(min_length=1, description=".yml files, folders (read recursively) or globs, "
                             "relative to the pipeline file's folder")
    select: SigmaSelect = Field(default_factory=SigmaSelect)
    preset: Literal["sysmon", "ecs", "ocsf"] | None = Field(
        default=None, description="named field mapping: sysmon (Sigma's names, as Sysmon writes them), ecs or ocsf")
    field_mapping: dict[str, str] = Field(
        default_factory=dict, description="Sigma field -> event column or nested path (a.b); wins over the preset")
    keyword_fields: list[str] = Field(
        default_factory=list, description="text columns that keyword (field-less) searches look in")
    vars: dict[str, Union[str, list[str]]] = Field(
        default_factory=dict, description="values of the %name% placeholders of the `expand` modifier")
