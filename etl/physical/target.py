"""The planner's settings snapshot (`Target`): every knob that decides which engine runs a node.

`planner_settings` is the one function that builds it, from etl's settings
snapshot (etl.settings: environment and `--set`) and the command line. A
run replaces the predicted `jvm` by what its session actually has; `demoted`
grows at run time when a rule pattern runs past its step budget in the JVM.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, replace
from collections.abc import Mapping

from etl import settings

SWITCHES = {"rules_jvm": "ETL_RULES_JVM", "prefilter": "ETL_PREFILTER", "grok_program": "ETL_GROK_PROGRAM",
            "lookup_jvm": "ETL_LOOKUP_JVM", "component_counts": "ETL_COMPONENT_COUNTS"}


@dataclass(frozen=True)
class Target:
    master: str = "local[*]"
    jvm: bool = True  # etl's jar (etl/jvm/*.java) is on the session's class path
    jvm_why: str = ""  # why not, when it is not
    jvm_how: str = ""  # where the jar comes from when it is there: "" (not said), "packaged", or javac's reason
    jdk: bool = True  # etl's jar can be had (packaged, or javac and jar on PATH), and added to a session without it
    rules_jvm: bool = True  # ETL_RULES_JVM: rule sets may run in the JVM (RuleMatch)
    prefilter: bool = True  # ETL_PREFILTER: the literal prefilter of rule filters
    grok_program: bool = True  # ETL_GROK_PROGRAM: grok's matcher program (etl/grokvm) before java.util.regex
    lookup_jvm: bool = True  # ETL_LOOKUP_JVM: rocksdb lookups held by the JVM on a local master
    component_counts: bool = False  # ETL_COMPONENT_COUNTS: every transform's rows out observed (etl.compile.counts)
    demoted: frozenset[str] = frozenset()  # rule programs (digests) moved to Python workers by a step budget
    force: frozenset[str] = frozenset()  # engines taken before the preferred ones wherever they can run (tests)

    @property
    def local(self) -> bool:
        return self.master.startswith("local")

    def text(self) -> str:
        on = lambda b: "on" if b else "off"  # noqa: E731
        jar = (f"yes ({self.jvm_how})" if self.jvm_how else "yes") if self.jvm else \
            f"no ({self.jvm_why or 'not on the class path'})"
        return (f"master {self.master}, etl jar {jar}, rules_jvm {on(self.rules_jvm)}, "
                f"prefilter {on(self.prefilter)}, grok_program {on(self.grok_program)}, "
                f"lookup_jvm {on(self.lookup_jvm)}" + (f", forced {', '.join(sorted(self.force))}" if self.force else ""))

    def with_(self, **changes: object) -> Target:
        return replace(self, **changes)  # type: ignore[arg-type]


def predicted_jvm() -> tuple[bool, str, str]:
    """Will a session etl starts have its jar, why not, and whence: yes with the packaged jar of these sources
    (etl.physical.jar), else when a JDK (javac, jar) is on PATH (etl.compile.jvm builds it: the development path)."""
    from etl.physical.jar import packaged

    shipped, why_not = packaged()
    if shipped is not None:
        return True, "", "packaged"
    if shutil.which("javac") is None or shutil.which("jar") is None:
        return False, f"{why_not}, and javac/jar not found (install a JDK)", ""
    return True, "", f"built with javac, the development path: {why_not}"


def planner_settings(environ: Mapping[str, str] | None = None, *, master: str | None = None,
                     jvm: bool | None = None, jvm_why: str = "") -> Target:
    """The Target from the environment (ETL_RULES_JVM, ETL_PREFILTER, ETL_GROK_PROGRAM, ETL_LOOKUP_JVM, and
    ETL_FORCE_ENGINES: comma-separated engine names taken first wherever they can run) and the command line
    (`--master`); `jvm`: what a running session has (None: predicted from the JDK on PATH)."""
    snap = settings.current() if environ is None else settings.load(environ)
    jdk, why, how = predicted_jvm()
    if jvm is None:
        jvm, jvm_why = jdk, why
    return Target(master=master or "local[*]", jvm=jvm, jvm_why="" if jvm else jvm_why, jvm_how=how if jvm else "",
                  jdk=jdk,
                  force=snap.force_engines, **{k: getattr(snap, k) for k in SWITCHES})
