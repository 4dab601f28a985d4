"""A join's time bound: how far the right event time may lie from the left's, before and after.

Written as one duration (`within: 1m`: the right event time lies within one minute of the left's, before or
after) or as two signed durations (`within: [-5m, +1m]`: from five minutes before the left event time to one
minute after it; `[0s, 10m]`: at most ten minutes after). The value is `(lower, upper)` in seconds, lower <=
upper: the join keeps the pairs with `right time - left time BETWEEN lower AND upper`."""

from __future__ import annotations

from typing import Any

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic_core import PydanticCustomError, core_schema

from etl.spec.base import DURATION_PART, Duration


def _signed(value: Any) -> float:
    if isinstance(value, str) and value.strip()[:1] in "+-":
        text = value.strip()
        return (-1.0 if text[0] == "-" else 1.0) * Duration.parse(text[1:].strip()).seconds
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
        return -Duration.parse(-value).seconds
    return Duration.parse(value).seconds


def signed_text(seconds: float) -> str:
    """'+1m', '-5m', '0s'."""
    if seconds == 0:
        return "0s"
    return ("-" if seconds < 0 else "+") + str(Duration(abs(seconds)))


class TimeBounds(tuple):
    """(lower, upper) seconds of `right time - left time`."""

    @property
    def lower(self) -> float:
        return float(self[0])

    @property
    def upper(self) -> float:
        return float(self[1])

    @property
    def symmetric(self) -> bool:
        return self.lower == -self.upper

    @classmethod
    def parse(cls, value: Any) -> TimeBounds:
        try:
            if isinstance(value, (list, tuple)):
                if len(value) != 2:
                    raise ValueError("give two durations, [before, after], e.g. [-5m, +1m]")
                lo, hi = _signed(value[0]), _signed(value[1])
                if lo > hi:
                    raise ValueError(f"the lower bound {signed_text(lo)} is after the upper bound {signed_text(hi)}")
                return cls((lo, hi))
            d = Duration.parse(value).seconds
            return cls((-d, d))
        except ValueError as e:
            raise PydanticCustomError("time_bounds", "{reason}", {"reason": str(e)}) from None

    def __str__(self) -> str:
        return str(Duration(self.upper)) if self.symmetric else f"[{signed_text(self.lower)}, {signed_text(self.upper)}]"

    __repr__ = __str__

    def serialized(self) -> Any:
        return str(Duration(self.upper)) if self.symmetric else [signed_text(self.lower), signed_text(self.upper)]

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return core_schema.no_info_plain_validator_function(
            cls.parse, serialization=core_schema.plain_serializer_function_ser_schema(lambda v: v.serialized()))

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: Any, handler: GetJsonSchemaHandler) -> dict:
        signed = {"type": "string", "pattern": rf"^\s*[+-]?\s*{DURATION_PART}\s*$"}
        return {
            "anyOf": [signed, {"type": "number", "minimum": 0},
                      {"type": "array", "items": {"anyOf": [signed, {"type": "number"}]}, "minItems": 2,
                       "maxItems": 2}],
            "description": "time bound of `right time - left time`: one duration (before or after, e.g. '1m') "
                           "or [lower, upper] signed durations, e.g. ['-5m', '+1m']",
        }
