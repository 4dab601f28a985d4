#!/usr/bin/env bash
# Resolve the Java artifacts listed in java/pom.xml into git-ignored folders:
#   java/lib/spark/       Spark Kafka connector + MariaDB JDBC (for spark.jars)
#   java/lib/kafka/       Kafka broker (KRaft) class path
#   java/lib/rocketmq/    RocketMQ name server + broker class path
#   java/lib/opensearch/  OpenSearch integ-test zip, unpacked in opensearch-<v>/
#   java/lib/grok/        elasticsearch-grok jar: the grok pattern libraries (scripts/grok_patterns.py)
# Idempotent: a folder is refreshed only when it is missing or when java/pom.xml,
# java/settings.xml (or, for spark, the pyspark version) changed since it was
# filled. Maven's cache is ~/.m2/repository (elsewhere: MAVEN_OPTS=-Dmaven.repo.local=DIR).
# Force with: setup-java.sh --force
# Only some groups: setup-java.sh spark kafka
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LIB="$ROOT/java/lib"
POM="$ROOT/java/pom.xml"
SETTINGS="$ROOT/java/settings.xml"
PYTHON="${PYTHON:-}"
if [[ -z "$PYTHON" ]]; then
  if [[ -x "$ROOT/.venv/bin/python" ]]; then PYTHON="$ROOT/.venv/bin/python"; else PYTHON=python3; fi
fi

FORCE=0
GROUPS_WANTED=()
for arg in "$@"; do
  case "$arg" in
    --force) FORCE=1 ;;
    spark|kafka|rocketmq|opensearch|grok) GROUPS_WANTED+=("$arg") ;;
    *) echo "usage: $0 [--force] [spark|kafka|rocketmq|opensearch|grok ...]" >&2; exit 2 ;;
  esac
done
[[ ${#GROUPS_WANTED[@]} -gt 0 ]] || GROUPS_WANTED=(spark kafka rocketmq opensearch grok)

command -v mvn >/dev/null || { echo "setup-java: mvn not found (apt-get install -y maven)" >&2; exit 1; }
command -v java >/dev/null || { echo "setup-java: java not found (need Java 17)" >&2; exit 1; }

pyspark_jars() {
  "$PYTHON" -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))'
}

stamp_for() {  # the inputs a group's folder depends on
  local group="$1"
  {
    sha256sum "$POM" "$SETTINGS" | awk '{print $1}'
    echo "group=$group"
    if [[ "$group" == spark ]]; then "$PYTHON" -c 'import pyspark; print("pyspark", pyspark.__version__)'; fi
  } | sha256sum | awk '{print $1}'
}

fill() {
  local group="$1" dir="$LIB/$1"
  local want; want="$(stamp_for "$group")"
  if [[ $FORCE -eq 0 && -f "$dir/.stamp" && "$(cat "$dir/.stamp")" == "$want" ]]; then
    echo "setup-java: $group up to date ($dir)"
    return
  fi
  echo "setup-java: resolving $group into $dir"
  rm -rf "$dir.tmp"
  mkdir -p "$dir.tmp"
  # (sed: Maven 3.8 prints bare ANSI resets even in batch mode)
  mvn -q -B -Dstyle.color=never -s "$SETTINGS" -f "$POM" -P "$group" dependency:copy-dependencies \
      -DoutputDirectory="$dir.tmp" 2>&1 | sed -e 's/\x1b\[[0-9;]*m//g' -e '/^$/d'
  ls "$dir.tmp"/* >/dev/null 2>&1 || { echo "setup-java: maven copied nothing for $group" >&2; exit 1; }
  case "$group" in
    spark) drop_pyspark_duplicates "$dir.tmp" ;;
    opensearch) unpack_opensearch "$dir.tmp" ;;
  esac
  echo "$want" > "$dir.tmp/.stamp"
  rm -rf "$dir"
  mv "$dir.tmp" "$dir"
}

# A jar that pyspark already ships (same artifact, any version) must not be on
# spark.jars too: two versions of one library on the class path break Spark.
drop_pyspark_duplicates() {
  local dir="$1" pj base
  pj="$(pyspark_jars)"
  for jar in "$dir"/*.jar; do
    base="$(basename "$jar" .jar | sed -E 's/-[0-9][0-9A-Za-z.+_-]*$//')"
    if compgen -G "$pj/$base-[0-9]*.jar" >/dev/null; then
      echo "setup-java: dropping $(basename "$jar"): pyspark ships $(basename "$(compgen -G "$pj/$base-[0-9]*.jar" | head -1)")"
      rm -f "$jar"
    fi
  done
}

unpack_opensearch() {
  local dir="$1" zip
  zip="$(ls "$dir"/opensearch-*.zip)"
  "$PYTHON" - "$zip" "$dir" <<'PY'
import os, stat, sys, zipfile
zip_path, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(zip_path) as zf:
    for info in zf.infolist():
        path = zf.extract(info, dest)
        mode = info.external_attr >> 16
        if mode and not info.is_dir():
            os.chmod(path, stat.S_IMODE(mode))
PY
  rm -f "$zip"
}

for g in "${GROUPS_WANTED[@]}"; do fill "$g"; done
