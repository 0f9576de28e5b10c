#!/usr/bin/env bash
# npm run test:heavy: the heavy tier (README, "Testing"). Not run by CI; it must pass before a release and is run
# whenever the areas below change. On embedded PGlite, then on PostgreSQL:
#  - test/integration/hostile-input.test.ts with 50,000 generated requests (IDP_TEST_FUZZ_RUNS; npm test: 1,056);
#  - test/integration/races.test.ts with 200 rounds of every race (IDP_TEST_RACE_ROUNDS; npm test: 25);
#  - test/integration/upgrades.test.ts from every earlier migration (IDP_TEST_UPGRADES=all; npm test: the last);
#  - the files only this tier runs (package.json's tap "exclude" keeps them out of npm test and .ci/run):
#    the fault and SIGKILL tests, the multi-instance test (PostgreSQL only) and, on PGlite, the README quick
#    start from a clean clone (IDP_TEST_QUICKSTART=1: git clone, npm install, build).
# PostgreSQL: DATABASE_URL if set, else postgres://postgres@127.0.0.1:5432/test (started and created as .ci/run
# does). Builds first: the CLI files spawn the build (IDP_TEST_CLI=dist), as in CI.
# Prints each file's result and time, and ends with one plain line: "N passed, N failed".
# `npm run test:heavy -- FILE...` runs only those of its files (e.g. after a change to one area); the counts can
# be changed through the same variables (IDP_TEST_FUZZ_RUNS, IDP_TEST_RACE_ROUNDS).
set -uo pipefail
cd "$(dirname "$0")/.."
PG_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}"
FUZZ_RUNS="${IDP_TEST_FUZZ_RUNS:-50000}"
RACE_ROUNDS="${IDP_TEST_RACE_ROUNDS:-200}"
logs="$(mktemp -d)"
started=$SECONDS

step() { printf '\n==> %s (%ss)\n' "$*" "$((SECONDS - started))"; }
die() { echo "test:heavy: $*" >&2; echo "0 passed, 1 failed"; exit 1; }

# Run harder here, and also in npm test at their default counts.
harder=(test/integration/hostile-input.test.ts test/integration/races.test.ts test/integration/upgrades.test.ts)
# Run here only (each is in package.json's tap "exclude" and in the README's list of what moved, with why).
heavy_only=(test/cli/faults.test.ts)
heavy_only_pg=(test/cli/multi-instance.test.ts)
heavy_only_pglite=(test/e2e/quickstart.test.ts)

for f in "${harder[@]}" "${heavy_only[@]}" "${heavy_only_pg[@]}" "${heavy_only_pglite[@]}"; do
  [ -f "$f" ] || die "$f is missing: update scripts/test-heavy.sh, package.json's tap exclude and the README"
done
# Only the files named on the command line, if any (each must be one of the above).
if [ $# -gt 0 ]; then
  for f in "$@"; do
    case " ${harder[*]} ${heavy_only[*]} ${heavy_only_pg[*]} ${heavy_only_pglite[*]} " in
      *" $f "*) ;;
      *) die "$f is not a file of the heavy tier" ;;
    esac
  done
  ARGS=("$@")
  only() {
    local kept=() f
    for f in "$@"; do [[ " ${ARGS[*]} " == *" $f "* ]] && kept+=("$f"); done
    echo "${kept[@]}"
  }
  read -ra harder <<<"$(only "${harder[@]}")"
  read -ra heavy_only <<<"$(only "${heavy_only[@]}")"
  read -ra heavy_only_pg <<<"$(only "${heavy_only_pg[@]}")"
  read -ra heavy_only_pglite <<<"$(only "${heavy_only_pglite[@]}")"
fi

step "prerequisites"
# A Redis-compatible server (test/cli/multi-instance.test.ts starts its own) and a PostgreSQL server with initdb
# (test/cli/faults.test.ts makes a cluster of its own); git and npm for the quick start.
command -v git >/dev/null 2>&1 || die "no git"
command -v redis-server >/dev/null 2>&1 || command -v valkey-server >/dev/null 2>&1 \
  || die "no redis-server or valkey-server: apt-get install redis-server"
command -v pg_ctlcluster >/dev/null 2>&1 || die "no PostgreSQL server: apt-get install postgresql"

step "build"
npm run --silent build || die "build failed"
export IDP_TEST_CLI=dist

step "PostgreSQL"
if ! pg_isready -q -d "$PG_URL"; then
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n 1)" main start \
    || die "cannot start PostgreSQL"
  for _ in $(seq 1 30); do pg_isready -q -d "$PG_URL" && break; sleep 1; done
fi
db_name="${PG_URL##*/}"
psql "${PG_URL%/*}/postgres" -Atqc "select 1 from pg_database where datname = '$db_name'" | grep -q 1 \
  || psql "${PG_URL%/*}/postgres" -qc "create database \"$db_name\"" || die "cannot create the database $db_name"

PASS=0; FAIL=0; SUMMARY=()
# run_part NAME VAR=VALUE... -- FILE...: one tap run; prints failures in full and each file's result and time.
run_part() {
  local name=$1; shift
  local vars=() files=()
  while [ "$1" != "--" ]; do vars+=("$1"); shift; done
  shift; files=("$@")
  local log="$logs/$name.tap" t0=$SECONDS
  step "$name: ${files[*]}"
  env "${vars[@]}" npx tap --disable-coverage --reporter=tap "${files[@]}" >"$log" 2>&1
  local rc=$?
  grep -E -B2 -A40 '^ *not ok ' "$log" | head -400
  # Skipped subtests are listed: a whole file skipped here would be a file this tier does not really run.
  grep -E '^    ok [0-9]+ - .* # SKIP' "$log" | sed 's/^    /  skipped: /'
  sed -nE -e 's/^ok [0-9]+ - (test\/[^ ]+\.test\.ts) # time=([0-9.]+)ms.*/ok \2 \1/p' \
    -e 's/^not ok [0-9]+ - (test\/[^ ]+\.test\.ts) # time=([0-9.]+)ms.*/FAILED \2 \1/p' "$log" \
    | awk '{ printf "  %-6s %7.1f s  %s\n", $1, $2 / 1000, $3 }'
  local summary pass fail
  summary=$(grep -E '^# \{ total: [0-9]+' "$log" | tail -n 1)
  pass=$(sed -nE 's/.*pass: ([0-9]+).*/\1/p' <<<"$summary")
  fail=$(sed -nE 's/.*fail: ([0-9]+).*/\1/p' <<<"$summary")
  pass=${pass:-0}; fail=${fail:-0}
  if [ "$rc" -ne 0 ] && [ "$fail" -eq 0 ]; then fail=1; echo "test:heavy: $name exited $rc"; tail -n 30 "$log"; fi
  if [ "$pass" -eq 0 ]; then fail=$((fail + 1)); echo "test:heavy: $name ran no test"; fi
  SUMMARY+=("$(printf '%-9s %5d passed, %d failed, %5d s' "$name" "$pass" "$fail" "$((SECONDS - t0))")")
  PASS=$((PASS + pass)); FAIL=$((FAIL + fail))
}

common=(IDP_TEST_FUZZ_RUNS="$FUZZ_RUNS" IDP_TEST_RACE_ROUNDS="$RACE_ROUNDS" IDP_TEST_UPGRADES=all)
pglite_files=("${harder[@]}" "${heavy_only[@]}" "${heavy_only_pglite[@]}")
pg_files=("${harder[@]}" "${heavy_only[@]}" "${heavy_only_pg[@]}")
[ ${#pglite_files[@]} -gt 0 ] \
  && run_part pglite DATABASE_URL= IDP_TEST_QUICKSTART=1 "${common[@]}" -- "${pglite_files[@]}"
# Databases left by an interrupted earlier run (each test file makes its own, test_<pid>_<random>, and its
# tests' schemas in it), and schemas of the runs before those (made in the URL's database itself).
psql "$PG_URL" -Atqc "select format('drop database %I with (force)', datname) from pg_database
  where datname like 'test\_%'" | while read -r drop; do psql "$PG_URL" -qc "$drop"; done
psql "$PG_URL" -Atqc "select string_agg(format('drop schema %I cascade', nspname), '; ') from pg_namespace
  where nspname like 'test\_%'" | { read -r drops; [ -n "$drops" ] && psql "$PG_URL" -qc "$drops"; true; }
# CI=true: the multi-instance file's Redis part may not skip (it fails when no Redis server is found).
[ ${#pg_files[@]} -gt 0 ] && run_part postgres DATABASE_URL="$PG_URL" CI=true "${common[@]}" -- "${pg_files[@]}"

step "done"
printf '%s\n' "${SUMMARY[@]}"
echo "$((SECONDS - started)) s in all; fuzz cases per engine: $FUZZ_RUNS, race rounds: $RACE_ROUNDS"
echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
