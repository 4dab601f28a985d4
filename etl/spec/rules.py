"""The rule language: rules are boolean trees (all/any/not) of predicates over fields."""

from __future__ import annotations

from functools import cached_property
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Discriminator, Field, RootModel, Tag, field_validator, model_validator
from pydantic_core import PydanticCustomError

from etl.spec.base import Identifier, Model

Scalar = str | int | float | bool
Derivation = Literal["lower", "upper", "trim", "collapse_ws"]

PATTERN_OPS = ("regex", "like", "contains", "starts_with", "ends_with")
NATIVE_OPS = ("eq", "ne", "in", "gt", "ge", "lt", "le", "is_null", "not_null", "fieldref")
IP_OPS = ("cidr",)
ALL_OPS = PATTERN_OPS + NATIVE_OPS + IP_OPS
# Longest pattern (regex, like, contains, ...) a rule may hold, Sigma's after its modifiers (base64offset triples
# a value, 4/3 as long each): the optimizer and `etl explain` work per character (a 200 KB value took 13 s to
# explain, 2 MB two minutes; 64 KB takes 2 s).
MAX_PATTERN_CHARS = 65_536


def pattern_too_long(value: Any) -> str | None:
    """Why a pattern value is too long, or None."""
    if isinstance(value, str) and len(value) > MAX_PATTERN_CHARS:
        return f"a pattern of {len(value):,} characters is longer than etl's limit of {MAX_PATTERN_CHARS:,}"
    return None


class Predicate(Model):
    """One test on one field: exactly one operator key."""

    # a rule may compare with inf or nan (a value, not a setting: nothing is sized or timed by it)
    model_config = ConfigDict(**Model.model_config | {"allow_inf_nan": True})

    field: str = Field(description="column the predicate reads (dots for nested fields)")
    apply: list[Derivation] = Field(default_factory=list, description="derivations applied to the value first, in order")
    caseless: bool = Field(default=False, description="case-insensitive pattern match")
    regex: str | None = Field(default=None, description="regular expression searched anywhere in the value")
    like: str | None = Field(default=None, description="SQL LIKE pattern (% and _), matched against the whole value")
    contains: str | None = Field(default=None, description="the field contains this text")
    starts_with: str | None = Field(default=None, description="the field starts with this text")
    ends_with: str | None = Field(default=None, description="the field ends with this text")
    eq: Scalar | None = Field(default=None, description="the field equals this value")
    ne: Scalar | None = Field(default=None, description="the field differs from this value")
    in_: list[Scalar] | None = Field(default=None, alias="in", description="the field is one of these values")
    gt: float | str | None = Field(default=None, description="the field is greater than this")
    ge: float | str | None = Field(default=None, description="the field is at least this")
    lt: float | str | None = Field(default=None, description="the field is less than this")
    le: float | str | None = Field(default=None, description="the field is at most this")
    is_null: Literal[True] | None = Field(default=None, description="the field is NULL")
    not_null: Literal[True] | None = Field(default=None, description="the field is not NULL")
    cidr: str | list[str] | None = Field(default=None, description="IPv4/IPv6 network(s), e.g. 10.0.0.0/8")
    fieldref: str | None = Field(default=None, description="another field: the two values are equal (as eq)")

    @field_validator(*PATTERN_OPS)
    @classmethod
    def _not_too_long(cls, v: str | None) -> str | None:
        why = pattern_too_long(v)
        if why is not None:
            raise PydanticCustomError("pattern_too_long", why)  # E102 at the value
        return v

    @model_validator(mode="after")
    def _exactly_one_op(self) -> Predicate:
        ops = self.ops()
        if len(ops) != 1:
            got = ", ".join(ops) if ops else "none"
            raise ValueError(f"a predicate needs exactly one operator of {', '.join(ALL_OPS)} (got {got})")
        return self

    def ops(self) -> list[str]:
        return [op for op in ALL_OPS if getattr(self, "in_" if op == "in" else op) is not None]

    @cached_property
    def op(self) -> str:
        return self.ops()[0]

    @property
    def value(self) -> Any:
        return getattr(self, "in_" if self.op == "in" else self.op)


class All(Model):
    all: list[Node] = Field(min_length=1, description="every condition holds")


class AnyOf(Model):
    any: list[Node] = Field(min_length=1, description="at least one condition holds")


class Not(Model):
    not_: Node = Field(alias="not", description="the condition does not hold")


def _node_tag(v: Any) -> str | None:
    if isinstance(v, dict):
        for key in ("all", "any", "not"):
            if key in v:
                return key
        return "predicate"
    for cls, tag in ((All, "all"), (AnyOf, "any"), (Not, "not"), (Predicate, "predicate")):
        if isinstance(v, cls):
            return tag
    return None


Node = Annotated[
    Annotated[All, Tag("all")]
    | Annotated[AnyOf, Tag("any")]
    | Annotated[Not, Tag("not")]
    | Annotated[Predicate, Tag("predicate")],
    Discriminator(_node_tag, custom_error_type="invalid_rule_node",
                  custom_error_message="expected a predicate or one of all/any/not"),
]

All.model_rebuild()
AnyOf.model_rebuild()
Not.model_rebuild()


class Rule(Model):
    id: Identifier = Field(description="the rule's id, unique in its filter")
    when: Node = Field(description="boolean tree of predicates: all / any / not / {field, <op>: value}")
    severity: Literal["info", "low", "medium", "high", "critical"] | None = Field(default=None,
        description="info, low, medium, high or critical")
    tags: list[str] = Field(default_factory=list, description="labels of the rule")
    description: str | None = Field(default=None, description="what the rule detects")


class RuleFile(Model):
    """Top level of a separate rules file (a bare list of rules is accepted too: RuleList)."""

    rules: list[Rule]


class RuleList(RootModel[list[Rule]]):
    """A rules file written as a bare list of rules."""

    model_config = ConfigDict(frozen=True)


def predicates(node: Any):
    """Every predicate in a rule tree, depth first."""
    if isinstance(node, Predicate):
        yield node
    elif isinstance(node, All):
        for c in node.all:
            yield from predicates(c)
    elif isinstance(node, AnyOf):
        for c in node.any:
            yield from predicates(c)
    elif isinstance(node, Not):
        yield from predicates(node.not_)


def walk_predicates(node: Any, path: tuple = ()):
    """Every predicate of a rule tree with its document path relative to the tree:
    ("all", 0), ("any", 2, "not"), ... (the keys a YAML or SQL front-end maps to positions)."""
    if isinstance(node, Predicate):
        yield node, path
    elif isinstance(node, All):
        for i, c in enumerate(node.all):
            yield from walk_predicates(c, path + ("all", i))
    elif isinstance(node, AnyOf):
        for i, c in enumerate(node.any):
            yield from walk_predicates(c, path + ("any", i))
    elif isinstance(node, Not):
        yield from walk_predicates(node.not_, path + ("not",))
