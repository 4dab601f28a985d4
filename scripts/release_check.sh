#!/usr/bin/env bash
# Release check (.ci/run's step after `make test`): etl as a user gets it, from a wheel, outside the checkout.
#   1. `make jar` (etl's jar, Maven: no-op when current), then `python -m build --wheel` in a build venv; the
#      wheel must hold etl/jvm/etl-jvm.jar, byte for byte the one built
#   2. a fresh venv in a temporary folder, `pip install <wheel>[connectors]`
#   3. a PATH with a Java runtime but no javac/jar (JAVA_HOME unset): etl must not need a JDK
#   4. `etl --version` (the wheel's version), `etl init` of the filter template, `etl explain` (the target line must
#      say the packaged jar), `etl run --once` of it, its output checked against the template's data
#   5. kafka -> filter -> file against the test broker (scripts/release_kafka.py starts and stops it), without
#      ETL_JAVA_LIB: the wheel fetches Spark's Kafka connector with spark.jars.packages (Ivy: ~/.m2, then Maven
#      Central) into an empty ETL_IVY_DIR, which must then hold it
#   6. nothing was compiled: etl's cache folder holds no javac-built jar
# Every step fails the check loudly (set -e, a message naming the step); each step's seconds are printed.
# Needs `make setup setup-java` (the checkout's venv and java/lib: the broker's class path; the Spark Kafka
# connector, given to the installed etl with ETL_JAVA_LIB in step 4). KEEP=1 keeps the temporary folder.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="$ROOT/.venv/bin/python"
TMP="$(mktemp -d /tmp/etl-release-XXXXXX)"
[[ "${KEEP:-}" == 1 ]] || trap 'rm -rf "$TMP"' EXIT
T0=$SECONDS
step_t=$SECONDS
say() { echo "release check: $*"; }
fail() { echo "release check FAILED: $*" >&2; exit 1; }
done_step() { say "$1 ($((SECONDS - step_t)) s)"; step_t=$SECONDS; }

[[ -x "$PY" ]] || fail "no $PY: run make setup setup-java first"

# 1. the jar and the wheel
make -C "$ROOT" -s jar
python3 -m venv "$TMP/build-venv"
"$TMP/build-venv/bin/python" -m pip install -q --upgrade pip build
"$TMP/build-venv/bin/python" -m build --wheel --outdir "$TMP/dist" "$ROOT" > "$TMP/build.log" 2>&1 \
    || { tail -30 "$TMP/build.log" >&2; fail "python -m build --wheel"; }
WHEEL="$(ls "$TMP"/dist/etl_streams-*.whl)"
"$PY" - "$WHEEL" "$ROOT/etl/jvm/etl-jvm.jar" <<'PY' || fail "the wheel does not ship etl's jar"
import sys, zipfile
wheel, jar = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    assert z.read("etl/jvm/etl-jvm.jar") == open(jar, "rb").read(), "etl/jvm/etl-jvm.jar differs from make jar's"
    assert "etl/jvm/RuleMatch.java" in z.namelist()
PY
done_step "built $(basename "$WHEEL"), with etl/jvm/etl-jvm.jar"

# 2. a fresh venv outside the checkout
python3 -m venv "$TMP/venv"
"$TMP/venv/bin/python" -m pip install -q --upgrade pip
"$TMP/venv/bin/python" -m pip install -q "$WHEEL[connectors]"
done_step "installed the wheel into $TMP/venv"

# 3. a Java runtime, no JDK: every command of /usr/bin and /bin but the JDK's tools
mkdir -p "$TMP/path"
for f in /usr/local/bin/* /usr/bin/* /bin/*; do
    name="$(basename "$f")"
    case "$name" in
        javac|jar|jarsigner|javadoc|jshell|jlink|jmod|jdeps|jpackage|jdeprscan|jimage|jdb|serialver) continue ;;
    esac
    [[ -e "$TMP/path/$name" ]] || ln -s "$f" "$TMP/path/$name"
done
export PATH="$TMP/venv/bin:$TMP/path"
unset JAVA_HOME VIRTUAL_ENV PYTHONPATH
export ETL_CACHE_DIR="$TMP/cache" ETL_JAVA_LIB="$ROOT/java/lib" ETL_JVM_CLASS_ARCHIVE=off
export PYSPARK_PYTHON="$TMP/venv/bin/python" PYSPARK_DRIVER_PYTHON="$TMP/venv/bin/python"
command -v java >/dev/null || fail "no java on the check's PATH"
! command -v javac >/dev/null || fail "javac is still on the check's PATH"
! command -v jar >/dev/null || fail "jar is still on the check's PATH"
cd "$TMP"

# 4. etl --version, init, explain, run
version="$(etl --version)"
want="etl-streams $(basename "$WHEEL" | cut -d- -f2)"
[[ "$version" == "$want" ]] || fail "etl --version printed '$version', expected '$want'"
etl init demo --template filter
etl validate demo/pipeline.yaml
etl explain demo/pipeline.yaml > explain.txt || fail "etl explain"
grep -q "etl jar yes (packaged)" explain.txt || { cat explain.txt >&2; fail "explain does not name the packaged jar"; }
done_step "$version; etl init, validate, explain (etl jar yes (packaged))"
(cd demo && etl run pipeline.yaml --once) || fail "etl run of the filter template"
"$PY" - demo <<'PY' || fail "the filter template's output"
import json, pathlib, sys
demo = pathlib.Path(sys.argv[1])
orders = [json.loads(x) for x in (demo / "data" / "orders.jsonl").read_text().splitlines() if x.strip()]
want = sorted(o["order_id"] for o in orders if o.get("status") == "paid" and (o.get("amount") or 0) >= 500)
got = sorted(json.loads(x)["order_id"] for f in (demo / "out" / "flagged").rglob("*.jsonl")
             for x in f.read_text().splitlines() if x.strip())
assert want and got == want, (got, want)
print(f"release check: the filter template wrote the {len(got)} expected orders of {len(orders)}")
PY
done_step "etl run --once of the filter template"

# 5. kafka -> filter -> file
(unset ETL_JAVA_LIB; ETL_IVY_DIR="$TMP/ivy" "$PY" "$ROOT/scripts/release_kafka.py" --etl "$TMP/venv/bin/etl" \
    --workdir "$TMP/kafka") || fail "kafka -> filter -> file"
compgen -G "$TMP/ivy/jars/org.apache.spark_spark-sql-kafka-0-10_2.13-*.jar" >/dev/null \
    || fail "the Kafka connector was not fetched with spark.jars.packages into ETL_IVY_DIR"
done_step "kafka -> filter -> file (the Kafka connector fetched by Ivy: $(ls "$TMP/ivy/jars" | tr '\n' ' '))"

# 6. no javac was needed
if compgen -G "$ETL_CACHE_DIR/jars/etl-jvm-*.jar" >/dev/null; then fail "etl compiled its jar: $(ls "$ETL_CACHE_DIR"/jars)"; fi
say "passed in $((SECONDS - T0)) s"
