//! What the guard costs, and how precisely the time limit holds.
//!
//! `CARGO_TARGET_DIR=/work/target-agentdb cargo bench -p wright-agentdb`
//!
//! Four ways to run the same statement on the same file, measured in interleaved rounds so
//! that a busy machine slows them alike:
//! - `raw`: a plain rusqlite connection, cached statement, rows turned into JSON by a loop
//!   written here — the floor;
//! - `unguarded`: [`GuardedConnection`]'s own code with no hooks, limits or caps installed;
//! - `guarded`: the same with every guard — the difference to `unguarded` is the guard;
//! - `async`: [`AgentDatabases::sql`] end to end, including the hop to the agent's thread.
//!
//! Overhead is the median over rounds of (variant / unguarded) per-call time, so slow
//! rounds cancel out. Then the time limit: runaway CTEs at 100 ms and at the real 5 s, and
//! `schema()` (row counts) on a table of a million rows.

use std::path::Path;
use std::time::Instant;

use rusqlite::types::ValueRef;
use serde_json::{Value, json};
use wright_agentdb::{AgentDatabases, AgentDbConfig, AgentDbError, GuardedConnection};
use wright_core::AgentId;

const ROWS: i64 = 10_000;
const ROUNDS: usize = 41;

fn main() {
    let directory = tempfile::tempdir().unwrap();
    let root = directory.path().join("agents");
    let agent = AgentId::parse("bench").unwrap();
    let databases = AgentDatabases::new(&root, AgentDbConfig::default());
    let path = databases.path(&agent);
    populate(&path);

    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let config = AgentDbConfig::default();
    let raw = rusqlite::Connection::open(&path).unwrap();
    let mut unguarded = GuardedConnection::open_unguarded_for_benchmark(&path, &config).unwrap();
    let mut guarded = GuardedConnection::open(&path, &config).unwrap();

    println!("wright-agentdb guard benchmark ({ROUNDS} interleaved rounds, medians)\n");
    type Workload = (&'static str, fn(i64) -> (String, Vec<Value>), usize);
    let workloads: [Workload; 3] = [
        (
            "point query, same text each call (statement cache hit)",
            |key| ("SELECT id, name, value, note FROM items WHERE id = ?".to_owned(), vec![json!(key)]),
            2_000,
        ),
        (
            "point query, new text each call (compiled and authorized every time)",
            |key| (format!("SELECT id, name, value, note FROM items WHERE id = {key}"), vec![]),
            2_000,
        ),
        (
            "1,000-row scan",
            |key| ("SELECT id, name, value, note FROM items WHERE id > ? LIMIT 1000".to_owned(), vec![json!(key)]),
            20,
        ),
    ];
    for (label, statement, calls_per_round) in workloads {
        let mut per_variant: [Vec<f64>; 4] = Default::default();
        // Keys visit every row once per 9,000 calls (7,919 is prime to 9,000), so the
        // "new text" workload never hits the statement cache.
        let mut counter = 0i64;
        for _ in 0..ROUNDS {
            let calls: Vec<(String, Vec<Value>)> = (0..calls_per_round)
                .map(|_| {
                    counter += 1;
                    statement((counter * 7_919) % (ROWS - 1_000) + 1)
                })
                .collect();
            per_variant[0].push(time_per_call(&calls, |sql, params| raw_sql(&raw, sql, params)));
            per_variant[1].push(time_per_call(&calls, |sql, params| unguarded.sql(sql, params).unwrap()));
            per_variant[2].push(time_per_call(&calls, |sql, params| guarded.sql(sql, params).unwrap()));
            per_variant[3].push(time_per_call(&calls, |sql, params| {
                runtime.block_on(databases.sql(&agent, sql, params)).unwrap()
            }));
        }
        let (sql, params) = statement(1);
        let rows = guarded.sql(&sql, &params).unwrap()["row_count"].clone();
        println!("{label} ({rows} rows per call, {calls_per_round} calls per round):");
        for (index, name) in ["raw rusqlite", "unguarded", "guarded", "async API"].iter().enumerate() {
            let ratios: Vec<f64> =
                per_variant[index].iter().zip(&per_variant[1]).map(|(variant, base)| variant / base).collect();
            println!(
                "  {name:<13} {:>9.2} µs/call   {:>+6.1}% vs unguarded",
                median(&per_variant[index]) * 1e6,
                (median(&ratios) - 1.0) * 100.0
            );
        }
        println!();
    }

    println!("time limit precision (runaway recursive CTE):");
    let runaway = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c";
    for (limit_ms, runs) in [(100u64, 25usize), (5_000, 3)] {
        let config = AgentDbConfig { statement_timeout_ms: limit_ms, ..AgentDbConfig::default() };
        let mut connection = GuardedConnection::open(&path, &config).unwrap();
        let mut overshoots = Vec::with_capacity(runs);
        for _ in 0..runs {
            let started = Instant::now();
            let error = connection.sql(runaway, &[]).unwrap_err();
            let took = started.elapsed();
            assert!(matches!(error, AgentDbError::Timeout { .. }), "{error:?}");
            overshoots.push((took.as_secs_f64() - limit_ms as f64 / 1e3) * 1e3);
            connection.sql("SELECT 1", &[]).unwrap();
        }
        let max = overshoots.iter().copied().fold(f64::MIN, f64::max);
        println!(
            "  limit {limit_ms:>5} ms, {runs:>2} runs: stopped {:+.3} ms after the limit (median), {:+.3} ms at worst",
            median(&overshoots),
            max
        );
    }

    println!("\nschema() with a 1,000,000-row table (row counts by count(*)):");
    let mut big = GuardedConnection::open(&path, &AgentDbConfig::default()).unwrap();
    big.sql("CREATE TABLE big (id INTEGER PRIMARY KEY, body TEXT)", &[]).unwrap();
    big.sql(
        "INSERT INTO big (body) SELECT printf('%040d', x) FROM \
         (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 1000000) SELECT x FROM c)",
        &[],
    )
    .unwrap();
    let file_mb = std::fs::metadata(&path).unwrap().len() as f64 / 1e6;
    let mut timings = Vec::new();
    for _ in 0..9 {
        let started = Instant::now();
        let schema = big.schema().unwrap();
        timings.push(started.elapsed().as_secs_f64());
        assert_eq!(schema["tables"][0]["row_count"], 1_000_000);
    }
    println!("  file {file_mb:.0} MB: schema() {:.1} ms (median of 9)", median(&timings) * 1e3);
}

/// 10,000 rows of a typical agent table.
fn populate(path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let connection = rusqlite::Connection::open(path).unwrap();
    connection
        .execute_batch(
            "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, value REAL, note TEXT);
             INSERT INTO items (name, value, note)
             SELECT 'item ' || x, x * 1.5, printf('a note of some length about item %d', x)
             FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 10000) SELECT x FROM c);",
        )
        .unwrap();
    assert_eq!(connection.query_row("SELECT count(*) FROM items", [], |row| row.get::<_, i64>(0)).unwrap(), ROWS);
}

/// The floor: the same statement and the same JSON shape, with nothing of this crate.
fn raw_sql(connection: &rusqlite::Connection, sql: &str, params: &[Value]) -> Value {
    let mut statement = connection.prepare_cached(sql).unwrap();
    for (index, param) in params.iter().enumerate() {
        statement.raw_bind_parameter(index + 1, param.as_i64().unwrap()).unwrap();
    }
    let columns: Vec<Value> = statement.column_names().into_iter().map(|name| Value::String(name.to_owned())).collect();
    let count = columns.len();
    let mut rows_out = Vec::new();
    let mut rows = statement.raw_query();
    while let Some(row) = rows.next().unwrap() {
        let cells: Vec<Value> = (0..count)
            .map(|index| match row.get_ref(index).unwrap() {
                ValueRef::Null => Value::Null,
                ValueRef::Integer(integer) => Value::Number(integer.into()),
                ValueRef::Real(real) => serde_json::Number::from_f64(real).map_or(Value::Null, Value::Number),
                ValueRef::Text(text) => Value::String(String::from_utf8_lossy(text).into_owned()),
                ValueRef::Blob(blob) => Value::Number(blob.len().into()),
            })
            .collect();
        rows_out.push(Value::Array(cells));
    }
    let mut result = serde_json::Map::with_capacity(4);
    result.insert("columns".to_owned(), Value::Array(columns));
    result.insert("row_count".to_owned(), rows_out.len().into());
    result.insert("rows".to_owned(), Value::Array(rows_out));
    result.insert("truncated".to_owned(), Value::Bool(false));
    Value::Object(result)
}

fn time_per_call(calls: &[(String, Vec<Value>)], mut call: impl FnMut(&str, &[Value]) -> Value) -> f64 {
    let started = Instant::now();
    for (sql, params) in calls {
        std::hint::black_box(call(sql, params));
    }
    started.elapsed().as_secs_f64() / calls.len() as f64
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[sorted.len() / 2]
}
