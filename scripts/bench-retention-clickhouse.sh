#!/bin/bash
# Retention on ClickHouse at 10M events (10 projects, 12 months): one ALTER … DELETE mutation for one
# project's first six months vs rewriting those month partitions without the project (INSERT … SELECT into
# a copy, REPLACE PARTITION). Usage: TEST_CLICKHOUSE_URL=http://host:8123 bash scripts/bench-retention-clickhouse.sh
# Creates and drops the database rbench.
set -e
U=${TEST_CLICKHOUSE_URL:-http://127.0.0.1:8123}
q() { curl -sS --fail-with-body "$U/?database=rbench" --data-binary "$1"; }
curl -sS "$U/" --data-binary "DROP DATABASE IF EXISTS rbench" >/dev/null
curl -sS "$U/" --data-binary "CREATE DATABASE rbench" >/dev/null
q "SELECT version()"
DDL="(project_id UInt32, id Int64, event String, distinct_id String, time Int64, insert_id String, properties String DEFAULT '', prop_keys Array(String), prop_values Array(String), received_at Int64, person_id String DEFAULT distinct_id, person_key UInt64 DEFAULT halfMD5(person_id), prop_types String DEFAULT '') ENGINE = ReplacingMergeTree() PARTITION BY toYYYYMM(toDateTime(intDiv(time, 1000))) ORDER BY (project_id, event, time, distinct_id, insert_id)"
q "CREATE TABLE events $DDL"
T0=1704067200000 # 2024-01-01, 12 months of events, 10 projects
q "INSERT INTO events (project_id, id, event, distinct_id, time, insert_id, prop_keys, prop_values, prop_types, received_at, person_id) SELECT number % 10, number, concat('e', toString(number % 20)), concat('u', toString(number % 100000)), $T0 + intDiv(number * 31536000000, 10000000), toString(number), ['plan','path'], ['pro', concat('/p/', toString(number % 97))], 'ss', $T0, concat('u', toString(number % 100000)) FROM numbers(10000000)"
q "OPTIMIZE TABLE events FINAL" || true
q "SELECT count() FROM events"
CUT=$((T0 + 182 * 86400000)) # first half of the year expired for project 3
# A: one mutation
s=$(date +%s.%N)
q "ALTER TABLE events DELETE WHERE project_id = 3 AND time < $CUT"
while [ "$(q "SELECT count() FROM system.mutations WHERE database = 'rbench' AND is_done = 0")" != "0" ]; do sleep 0.1; done
e=$(date +%s.%N); echo "mutation: $(echo "$e - $s" | bc) s; rows left of project 3 before cut: $(q "SELECT count() FROM events WHERE project_id = 3 AND time < $CUT")"
# B: rewrite each month partition wholly before the cut without project 5's rows (REPLACE PARTITION from a copy)
q "CREATE TABLE tmp AS events"
s=$(date +%s.%N)
for p in $(q "SELECT DISTINCT partition FROM system.parts WHERE database = 'rbench' AND table = 'events' AND active AND max_date < toDate(intDiv($CUT, 1000)) ORDER BY partition"); do
  q "INSERT INTO tmp SELECT * FROM events WHERE toYYYYMM(toDateTime(intDiv(time, 1000))) = $p AND project_id != 5"
  q "ALTER TABLE events REPLACE PARTITION $p FROM tmp"
  q "ALTER TABLE tmp DROP PARTITION $p"
done
e=$(date +%s.%N); echo "partition rewrite: $(echo "$e - $s" | bc) s; rows left of project 5 before cut: $(q "SELECT count() FROM events WHERE project_id = 5 AND time < $CUT")"
curl -sS "$U/" --data-binary "DROP DATABASE rbench" >/dev/null
