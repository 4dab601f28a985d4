"""The trigger groups of the JVM rule path over several fields (etl.optimize.jvmmulti): a rule is evaluated on a
row only when a predicate of each of its groups holds, so a group is chosen among the rule's mandatory parts as
the likely rarest: a needle the rule set names everywhere (a generic path like \\Windows\\) loses to one it
names rarely, even a shorter one."""

from __future__ import annotations

from etl.optimize import compile_rules
from etl.optimize.jvmmulti import multi_plan
from etl.spec.rules import Rule


def _groups(rules: list[dict]) -> dict[str, list[set[tuple[str, str, str]]]]:
    """rule id -> its trigger groups, each a set of (field, op, value) of its predicates."""
    program = compile_rules([Rule.model_validate(r) for r in rules])
    body = multi_plan(program).body
    assert body is not None
    out = {}
    for line in body.splitlines():
        f = line.split(" ")
        if f[0] == "R":
            key = lambda i: (program.predicates[i].key.field, program.predicates[i].key.op,  # noqa: E731
                             program.predicates[i].key.value)
            out[bytes.fromhex(f[1]).decode()] = [{key(int(i)) for i in g.split(",")} for g in f[4].split(";")]
    return out


def test_a_needle_many_rules_name_is_not_the_trigger_when_a_rarer_part_exists():
    generic = [{"id": f"g{k}", "when": {"all": [
        {"field": "Image", "contains": f"\\Windows\\System32\\tool{k}.exe", "caseless": True},
        {"field": "CommandLine", "contains": f" /opt{k}", "caseless": True}]}} for k in range(30)]
    traversal = {"id": "traversal", "when": {"all": [
        {"field": "Image", "contains": "\\Windows\\", "caseless": True},
        {"field": "CommandLine", "contains": "\\..\\Win", "caseless": True}]}}
    groups = _groups(generic + [traversal])
    # by length alone \Windows\ (9 characters) would come first; 31 needles hold it, 1 holds \..\Win
    assert groups["traversal"][0] == {("CommandLine", "contains", "\\..\\Win")}
    assert groups["g0"][0] == {("Image", "contains", "\\Windows\\System32\\tool0.exe")}


def test_each_conjunct_of_a_nested_all_is_a_group_of_its_own():
    # Sigma's `selection and not filter` where the selection names several fields: each field's part is a
    # necessary condition, so a row must hold one predicate of each before the rule is evaluated
    rule = {"id": "as_system", "when": {"all": [
        {"all": [{"field": "ParentUser", "ends_with": "\\LOCAL SERVICE", "caseless": True},
                 {"field": "User", "ends_with": "\\SYSTEM", "caseless": True},
                 {"field": "IntegrityLevel", "eq": "System", "caseless": True}]},
        {"not": {"field": "Image", "ends_with": "\\rundll32.exe", "caseless": True}}]}}
    groups = _groups([rule])["as_system"]
    assert sorted(map(len, groups)) == [1, 1, 1]
    assert set().union(*groups) == {("ParentUser", "ends_with", "\\LOCAL SERVICE"), ("User", "ends_with", "\\SYSTEM"),
                                    ("IntegrityLevel", "eq", "System")}


def test_a_pattern_with_literals_may_be_a_group_one_without_may_not():
    def rule(rid: str, regex: str) -> dict:
        return {"id": rid, "when": {"all": [
            {"field": "Image", "ends_with": "\\cmd.exe", "caseless": True},
            {"any": [{"field": "CommandLine", "contains": " /decode ", "caseless": True},
                     {"field": "CommandLine", "regex": regex}]}]}}

    groups = _groups([rule("literal", "net\\s+user\\s+"), rule("bare", "\\d{3}\\s\\d{3}")])
    either = {("CommandLine", "contains", " /decode ")}
    # the pattern runs only on values holding `net` and `user`: the command line's part is the second group
    assert groups["literal"] == [{("Image", "ends_with", "\\cmd.exe")},
                                 either | {("CommandLine", "regex", "net\\s+user\\s+")}]
    # a pattern without literals would run on every command line: its part stays out of the groups
    assert groups["bare"] == [{("Image", "ends_with", "\\cmd.exe")}]
