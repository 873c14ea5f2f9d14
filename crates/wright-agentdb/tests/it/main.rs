//! Integration tests of the guarded agent database, against real files in a temp directory.
//! One test per guard of issue 3, named after what it guards; every failure case ends with
//! `assert_healthy`, which checks that the database still answers normally.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tempfile::TempDir;
use wright_agentdb::{AgentDatabases, AgentDbConfig, AgentDbError};
use wright_core::AgentId;

/// A root directory of agent databases that lives as long as the test.
struct Fixture {
    _directory: TempDir,
    databases: AgentDatabases,
}

fn fixture(config: AgentDbConfig) -> Fixture {
    let directory = tempfile::tempdir().unwrap();
    let databases = AgentDatabases::new(directory.path().join("agents"), config);
    Fixture { _directory: directory, databases }
}

/// Most tests use a short statement limit so that runaway queries end quickly; the test at the
/// real 5 s default is `runaway_cte_times_out_at_five_seconds_while_another_agent_answers`.
fn short_timeout() -> AgentDbConfig {
    AgentDbConfig { statement_timeout_ms: 300, ..AgentDbConfig::default() }
}

fn agent(name: &str) -> AgentId {
    AgentId::parse(name).unwrap()
}

impl Fixture {
    async fn ok(&self, agent: &AgentId, sql: &str, params: &[Value]) -> Value {
        match self.databases.sql(agent, sql, params).await {
            Ok(value) => value,
            Err(error) => panic!("{sql:?} failed: {error}"),
        }
    }

    async fn fails(&self, agent: &AgentId, sql: &str, params: &[Value]) -> AgentDbError {
        match self.databases.sql(agent, sql, params).await {
            Ok(value) => panic!("{sql:?} should fail but returned {value}"),
            Err(error) => error,
        }
    }

    /// The database answers reads and writes normally and is intact.
    async fn assert_healthy(&self, agent: &AgentId) {
        self.ok(agent, "CREATE TABLE IF NOT EXISTS health (n INTEGER)", &[]).await;
        let written = self.ok(agent, "INSERT INTO health (n) VALUES (?)", &[json!(1)]).await;
        assert_eq!(written["changes"], 1, "{written}");
        let read = self.ok(agent, "SELECT count(*) FROM health", &[]).await;
        assert!(read["rows"][0][0].as_i64().unwrap() >= 1, "{read}");
        let check = self.ok(agent, "PRAGMA integrity_check", &[]).await;
        assert_eq!(check["rows"], json!([["ok"]]));
    }

    async fn scalar(&self, agent: &AgentId, sql: &str) -> Value {
        self.ok(agent, sql, &[]).await["rows"][0][0].clone()
    }
}

#[tokio::test]
async fn file_is_created_on_first_write_only() {
    let fixture = fixture(short_timeout());
    let alice = agent("alice");
    let path = fixture.databases.path(&alice);
    assert!(path.ends_with("agents/alice/agent_data.db"), "{}", path.display());
    assert_eq!(fixture.databases.schema(&alice).await.unwrap(), json!({ "tables": [] }));
    assert_eq!(fixture.databases.summary(&alice).await.unwrap(), "");
    assert!(!path.exists(), "schema and summary must not create the file");
    fixture.ok(&alice, "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)", &[]).await;
    assert!(path.exists());
}

#[tokio::test]
async fn statements_that_return_rows_and_statements_that_do_not_have_seed_shapes() {
    let fixture = fixture(short_timeout());
    let alice = agent("alice");
    let created = fixture.ok(&alice, "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL)", &[]).await;
    assert_eq!(created, json!({ "changes": 0, "last_insert_rowid": 0 }));
    let inserted = fixture.ok(&alice, "INSERT INTO t (name) VALUES (?), (?)", &[json!("a"), json!("b")]).await;
    assert_eq!(inserted, json!({ "changes": 2, "last_insert_rowid": 2 }));
    // A statement that changes no rows after one that did reports 0, not the old count.
    let indexed = fixture.ok(&alice, "CREATE INDEX t_name ON t (name)", &[]).await;
    assert_eq!(indexed["changes"], 0);
    let updated = fixture.ok(&alice, "UPDATE t SET name = upper(name)", &[]).await;
    assert_eq!(updated["changes"], 2);

    let selected = fixture.ok(&alice, "SELECT id, name FROM t ORDER BY id", &[]).await;
    assert_eq!(
        selected,
        json!({ "columns": ["id", "name"], "rows": [[1, "A"], [2, "B"]], "row_count": 2, "truncated": false })
    );
    let with = fixture.ok(&alice, "WITH x(n) AS (SELECT 7) SELECT n FROM x", &[]).await;
    assert_eq!(with["rows"], json!([[7]]));
    let values = fixture.ok(&alice, "VALUES (1, 'one'), (2, 'two')", &[]).await;
    assert_eq!(values["row_count"], 2);
    let explain = fixture.ok(&alice, "EXPLAIN QUERY PLAN SELECT * FROM t WHERE name = 'A'", &[]).await;
    assert!(explain["row_count"].as_u64().unwrap() >= 1, "{explain}");
    let info = fixture.ok(&alice, "PRAGMA table_info(t)", &[]).await;
    assert_eq!(info["row_count"], 2);
    let returning = fixture.ok(&alice, "INSERT INTO t (name) VALUES ('c') RETURNING id", &[]).await;
    assert_eq!(returning["rows"], json!([[3]]));
    let set = fixture.ok(&alice, "PRAGMA user_version = 7", &[]).await;
    assert!(set.get("changes").is_some(), "{set}");
    assert_eq!(fixture.scalar(&alice, "PRAGMA user_version").await, 7);
    let empty = fixture.ok(&alice, "SELECT * FROM t WHERE 0", &[]).await;
    assert_eq!(empty, json!({ "columns": ["id", "name"], "rows": [], "row_count": 0, "truncated": false }));
}

#[tokio::test]
async fn binds_of_every_json_type_round_trip() {
    let fixture = fixture(short_timeout());
    let alice = agent("alice");
    let object = json!({ "a": { "b": [1, 2.5, "x", null, true] } });
    let array = json!([1, "two", { "three": 3 }]);
    let params = [
        json!(null),
        json!(true),
        json!(false),
        json!(42),
        json!(i64::MIN),
        json!(i64::MAX),
        json!(-1.5),
        json!(1e300),
        json!("text with 'quotes', \"double\" and ünïcode ✓"),
        json!(""),
        array.clone(),
        object.clone(),
    ];
    let placeholders = vec!["?"; params.len()].join(", ");
    let selected = fixture.ok(&alice, &format!("SELECT {placeholders}"), &params).await;
    let row = selected["rows"][0].as_array().unwrap();
    let expected = [
        json!(null),
        json!(1),
        json!(0),
        json!(42),
        json!(i64::MIN),
        json!(i64::MAX),
        json!(-1.5),
        json!(1e300),
        params[8].clone(),
        json!(""),
    ];
    assert_eq!(&row[..10], &expected, "booleans come back as 1/0, everything else as given");
    // Arrays and objects are stored as their JSON text, which parses back to the same value.
    assert_eq!(serde_json::from_str::<Value>(row[10].as_str().unwrap()).unwrap(), array);
    assert_eq!(serde_json::from_str::<Value>(row[11].as_str().unwrap()).unwrap(), object);
    let types = fixture.ok(&alice, &format!("SELECT {}", vec!["typeof(?)"; params.len()].join(", ")), &params).await;
    assert_eq!(
        types["rows"][0],
        json!([
            "null", "integer", "integer", "integer", "integer", "integer", "real", "real", "text", "text", "text",
            "text"
        ])
    );
    let extracted = fixture.ok(&alice, "SELECT json_extract(?, '$.a.b[1]')", std::slice::from_ref(&object)).await;
    assert_eq!(extracted["rows"], json!([[2.5]]));

    // Through a table too, the usual path.
    fixture.ok(&alice, "CREATE TABLE v (value ANY) STRICT", &[]).await;
    for param in &params {
        fixture.ok(&alice, "INSERT INTO v (value) VALUES (?)", std::slice::from_ref(param)).await;
    }
    let stored = fixture.ok(&alice, "SELECT value FROM v ORDER BY rowid", &[]).await;
    let stored: Vec<Value> = stored["rows"].as_array().unwrap().iter().map(|row| row[0].clone()).collect();
    assert_eq!(&stored[..10], &expected);

    // Blobs come back as hex, and go in through unhex().
    let blob = fixture.ok(&alice, "SELECT x'00FF10', unhex(?)", &[json!("CAFE")]).await;
    assert_eq!(blob["rows"], json!([[{ "blob_hex": "00FF10" }, { "blob_hex": "CAFE" }]]));
    // Infinity has no JSON number.
    let infinite = fixture.ok(&alice, "SELECT 1e308 * 10, -1e308 * 10", &[]).await;
    assert_eq!(infinite["rows"], json!([["Infinity", "-Infinity"]]));

    let error = fixture.fails(&alice, "SELECT ?", &[json!(u64::MAX)]).await;
    assert!(matches!(error, AgentDbError::Params { .. }), "{error:?}");
    assert!(error.to_string().contains("outside SQLite's range"), "{error}");
    fixture.assert_healthy(&alice).await;
}

#[tokio::test]
async fn params_must_match_the_placeholders() {
    let fixture = fixture(short_timeout());
    let alice = agent("alice");
    for (sql, params) in [("SELECT ?, ?", vec![json!(1)]), ("SELECT 1", vec![json!(1)]), ("SELECT ?", vec![])] {
        let error = fixture.fails(&alice, sql, &params).await;
        assert!(matches!(error, AgentDbError::Params { .. }), "{sql}: {error:?}");
    }
    assert_eq!(
        fixture.fails(&alice, "SELECT ?, ?", &[json!(1)]).await.to_string(),
        "the statement has 2 placeholders (?) but 1 param was given"
    );
    // Numbered placeholders count up to the highest number.
    let numbered = fixture.ok(&alice, "SELECT ?2, ?1", &[json!("a"), json!("b")]).await;
    assert_eq!(numbered["rows"], json!([["b", "a"]]));
    fixture.assert_healthy(&alice).await;
}

#[tokio::test]
async fn a_second_statement_is_refused_and_nothing_runs() {
    let fixture = fixture(short_timeout());
    let alice = agent("alice");
    for sql in [
        "SELECT 1; SELECT 2",
        "CREATE TABLE first (x); CREATE TABLE second (x)",
        "CREATE TABLE first (x); DROP TABLE health",
        "SELECT 1; ATTACH DATABASE 'other.db' AS other",
        "SELECT 1; this is not sql",
        "SELECT 1 /* a comment */ ; -- and another\n SELECT 2",
    ] {
        let error = fixture.fails(&alice, sql, &[]).await;
        assert!(matches!(error, AgentDbError::MultipleStatements { first: Some(_) }), "{sql}: {error:?}");
        assert!(error.to_string().contains("one SQL statement per call"));
    }
    // The refusal quotes the first statement, as SQLite's tokenizer ends it, to send alone —
    // also when the second cannot compile before the first has run (its table is not there).
    let error = fixture.fails(&alice, "CREATE TABLE books (title TEXT); INSERT INTO books VALUES ('Dune')", &[]).await;
    assert!(error.to_string().ends_with("Send this one first, alone: CREATE TABLE books (title TEXT)"), "{error}");
    let error = fixture.fails(&alice, "SELECT ';' AS semi; SELECT 2", &[]).await;
    assert!(error.to_string().ends_with("alone: SELECT ';' AS semi"), "{error}");
    assert_eq!(fixture.databases.schema(&alice).await.unwrap(), json!({ "tables": [] }), "nothing ran");
    // When the first statement itself does not compile, its own error is the useful one.
    let error = fixture.fails(&alice, "INSERT INTO nowhere VALUES (1); SELECT 1", &[]).await;
    assert_eq!(error, AgentDbError::Sql { message: "no such table: nowhere".to_owned() });
    // Trailing semicolons, whitespace and comments are not a second statement.
    for sql in ["SELECT 1;", "SELECT 1;;  ", "SELECT 1; -- done", "SELECT 1 /* c */ ; /* c */"] {
        assert_eq!(fixture.ok(&alice, sql, &[]).await["rows"], json!([[1]]), "{sql}");
    }
    for sql in ["", "   ", "-- nothing", ";"] {
        assert_eq!(fixture.fails(&alice, sql, &[]).await, AgentDbError::EmptyStatement, "{sql:?}");
    }
    fixture.assert_healthy(&alice).await;
}

#[tokio::test]
async fn a_thousand_and_one_row_select_is_truncated() {
    let fixture = fixture(short_timeout());
    let alice = agent("alice");
    let count =
        |n: u32| format!("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT {n}) SELECT x FROM c");
    let over = fixture.ok(&alice, &count(1001), &[]).await;
    assert_eq!(over["row_count"], 1000);
    assert_eq!(over["rows"].as_array().unwrap().len(), 1000);
    assert_eq!(over["rows"][999], json!([1000]));
    assert_eq!(over["truncated"], true);
    let exact = fixture.ok(&alice, &count(1000), &[]).await;
    assert_eq!((exact["row_count"].clone(), exact["truncated"].clone()), (json!(1000), json!(false)));
    // A table scan, the same.
    fixture.ok(&alice, &format!("CREATE TABLE big AS {}", count(5000)), &[]).await;
    let scan = fixture.ok(&alice, "SELECT * FROM big", &[]).await;
    assert_eq!((scan["row_count"].clone(), scan["truncated"].clone()), (json!(1000), json!(true)));
    fixture.assert_healthy(&alice).await;
}

#[tokio::test]
async fn a_result_of_huge_blobs_is_bounded_by_the_byte_cap() {
    let fixture = fixture(short_timeout());
    let alice = agent("alice");
    fixture.ok(&alice, "CREATE TABLE blobs (data BLOB)", &[]).await;
    for _ in 0..10 {
        fixture.ok(&alice, "INSERT INTO blobs VALUES (randomblob(999000))", &[]).await;
    }
    // Each row is 2 MB of hex (a stored row is at most 1 MB, the value limit): two fit in the default 5 MiB, the third does not.
    let result = fixture.ok(&alice, "SELECT data FROM blobs", &[]).await;
    assert_eq!(result["row_count"], 2);
    assert_eq!(result["truncated"], true);
    let text = serde_json::to_string(&result).unwrap();
    assert!(text.len() <= 5 * 1024 * 1024, "{} bytes", text.len());

    // One row alone over the cap cannot be cut at a row: an error that says what to do.
    let tiny = fixture_with(AgentDbConfig { max_result_bytes: 1_000, ..short_timeout() });
    tiny.ok(&alice, "CREATE TABLE t (body TEXT)", &[]).await;
    tiny.ok(&alice, "INSERT INTO t VALUES (printf('%.*c', 2000, 'x'))", &[]).await;
    let error = tiny.fails(&alice, "SELECT body FROM t", &[]).await;
    assert_eq!(error, AgentDbError::ResultTooLarge { limit: 1_000 });
    assert!(error.to_string().contains("substr"), "{error}");
    let small_rows = tiny.ok(&alice, "SELECT printf('%.*c', 100, 'y') FROM t, (VALUES (1), (2), (3), (4), (5), (6), (7), (8), (9), (10), (11), (12))", &[]).await;
    assert_eq!(small_rows["truncated"], true);
    assert!(small_rows["row_count"].as_u64().unwrap() < 12);
    assert!(serde_json::to_string(&small_rows).unwrap().len() <= 1_000);
    tiny.assert_healthy(&alice).await;
    fixture.assert_healthy(&alice).await;
}

fn fixture_with(config: AgentDbConfig) -> Fixture {
    fixture(config)
}

/// The issue's headline case, at the real default limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runaway_cte_times_out_at_five_seconds_while_another_agent_answers() {
    let fixture = fixture(AgentDbConfig::default());
    assert_eq!(fixture.databases.config().statement_timeout(), Duration::from_secs(5));
    let (alice, bob) = (agent("alice"), agent("bob"));
    fixture.ok(&bob, "CREATE TABLE t (x)", &[]).await;
    fixture.ok(&alice, "CREATE TABLE t (x)", &[]).await;

    let runaway = async {
        let started = Instant::now();
        let error = fixture
            .fails(
                &alice,
                "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
                &[],
            )
            .await;
        (error, started.elapsed())
    };
    let meanwhile = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let started = Instant::now();
        let answer = fixture.ok(&bob, "SELECT count(*) FROM t", &[]).await;
        (answer, started.elapsed())
    };
    let ((error, runaway_took), (answer, other_took)) = tokio::join!(runaway, meanwhile);
    println!("runaway stopped after {runaway_took:?}; the other agent answered in {other_took:?}");
    assert_eq!(error, AgentDbError::Timeout { limit: Duration::from_secs(5) });
    assert!(error.to_string().contains("5.0 s"), "{error}");
    assert!(
        runaway_took >= Duration::from_millis(4_900) && runaway_took <= Duration::from_millis(5_100),
        "stopped after {runaway_took:?}"
    );
    assert_eq!(answer["rows"], json!([[0]]));
    assert!(other_took < Duration::from_millis(100), "the other agent waited {other_took:?}");
    fixture.assert_healthy(&alice).await;
}

#[tokio::test]
async fn runaway_statements_stop_at_the_limit_and_roll_back() {
    let fixture = fixture(short_timeout());
    let alice = agent("alice");
    fixture.ok(&alice, "CREATE TABLE n AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 2000) SELECT x FROM c", &[]).await;
    for sql in [
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c",
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION SELECT x + 1 FROM c) SELECT x FROM c ORDER BY x DESC LIMIT 1",
        "SELECT count(*) FROM n a, n b, n c",
        "SELECT a.x FROM n a, n b, n c ORDER BY random() LIMIT 1",
        "INSERT INTO n SELECT a.x FROM n a, n b, n c",
        "DELETE FROM n WHERE x IN (SELECT a.x FROM n a, n b, n c WHERE a.x + b.x + c.x = -1)",
    ] {
        let started = Instant::now();
        let error = fixture.fails(&alice, sql, &[]).await;
        let took = started.elapsed();
        assert_eq!(error, AgentDbError::Timeout { limit: Duration::from_millis(300) }, "{sql}");
        // Run to completion these take minutes; the bound is loose so a busy machine (CI, a
        // parallel build) does not fail a limit that held.
        assert!(took < Duration::from_millis(1500), "{sql}: stopped after {took:?}");
        assert_eq!(fixture.scalar(&alice, "SELECT count(*) FROM n").await, 2000, "{sql} was rolled back");
    }
    // Inside an explicit transaction, SQLite rolls the whole transaction back.
    fixture.ok(&alice, "BEGIN", &[]).await;
    fixture.ok(&alice, "INSERT INTO n VALUES (-1)", &[]).await;
    let error = fixture.fails(&alice, "INSERT INTO n SELECT a.x FROM n a, n b, n c", &[]).await;
    assert!(matches!(error, AgentDbError::Timeout { .. }), "{error:?}");
    assert_eq!(fixture.scalar(&alice, "SELECT count(*) FROM n").await, 2000);
    fixture.assert_healthy(&alice).await;
}

#[tokio::test]
async fn a_dropped_call_stops_its_statement() {
    let fixture = fixture(AgentDbConfig { statement_timeout_ms: 30_000, ..AgentDbConfig::default() });
    let alice = agent("alice");
    let runaway = fixture.databases.sql(
        &alice,
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c",
        &[],
    );
    assert!(tokio::time::timeout(Duration::from_millis(200), runaway).await.is_err());
    let started = Instant::now();
    assert_eq!(fixture.scalar(&alice, "SELECT 1").await, 1);
    assert!(started.elapsed() < Duration::from_millis(200), "waited {:?} for the dropped statement", started.elapsed());
    fixture.assert_healthy(&alice).await;
}

#[tokio::test]
async fn attach_is_refused_in_every_spelling() {
    let fixture = fixture(short_timeout());
    let alice = agent("alice");
    fixture.ok(&alice, "CREATE TABLE t (x)", &[]).await;
    let root = fixture.databases.root().to_path_buf();
    let app_database = root.parent().unwrap().join("wright.db");
    std::fs::write(&app_database, b"").unwrap();
    let app = app_database.display().to_string();
    let other = root.join("other.db").display().to_string();
    let spellings = [
        format!("ATTACH DATABASE '{other}' AS other"),
        format!("attach '{other}' as other"),
        format!("AtTaCh DaTaBaSe '{other}' As \"other\""),
        format!("/* hello */ ATTACH /* there */ '{other}' /* you */ AS other -- bye"),
        format!("\n\t  ATTACH\n'{other}'\nAS\n[other]\n"),
        format!("ATTACH 'file:{other}?mode=rwc' AS other"),
        format!("ATTACH '{app}' AS app"),
        "ATTACH DATABASE '../wright.db' AS app".to_owned(),
        "ATTACH ':memory:' AS scratch".to_owned(),
        "ATTACH '' AS scratch".to_owned(),
        "ATTACH 'other' || '.db' AS other".to_owned(),
        "ATTACH (SELECT 'other.db') AS other".to_owned(),
        "ATTACH DATABASE 'x' AS main".to_owned(),
        "ATTACH 'x' AS `temp2`".to_owned(),
    ];
    for sql in &spellings {
        let error = fixture.fails(&alice, sql, &[]).await;
        assert_eq!(error, AgentDbError::Denied { what: "ATTACH".to_owned() }, "{sql}");
    }
    let error = fixture.fails(&alice, "ATTACH ? AS other", &[json!(other)]).await;
    assert_eq!(error, AgentDbError::Denied { what: "ATTACH".to_owned() });
    assert_eq!(error.to_string(), "ATTACH is not allowed in the agent database (one file with fixed limits)");
    for sql in ["DETACH other", "DETACH DATABASE main", "detach temp"] {
        assert!(matches!(fixture.fails(&alice, sql, &[]).await, AgentDbError::Denied { .. }), "{sql}");
    }
    for sql in
        [format!("VACUUM INTO '{other}'"), format!("vacuum main into '{other}'"), "VACUUM INTO ':memory:'".to_owned()]
    {
        let error = fixture.fails(&alice, &sql, &[]).await;
        assert_eq!(error, AgentDbError::Denied { what: "VACUUM INTO".to_owned() }, "{sql}");
    }
    let error = fixture.fails(&alice, "VACUUM INTO ?", &[json!(other)]).await;
    assert!(matches!(error, AgentDbError::Denied { .. }), "{error:?}");
    assert!(!std::path::Path::new(&other).exists(), "no file was created");
    assert_eq!(std::fs::read(&app_database).unwrap(), b"", "the app database file was not touched");
    let error = fixture.fails(&alice, "SELECT * FROM other.sqlite_schema", &[]).await;
    assert!(error.to_string().contains("no such table"), "{error}");
    // Plain VACUUM attaches a nameless temporary database of its own: that one still works.
    fixture.ok(&alice, "VACUUM", &[]).await;
    fixture.assert_healthy(&alice).await;
}

#[tokio::test]
async fn extension_loading_is_refused() {
    let fixture = fixture(short_timeout());
    let alice = agent("alice");
    for sql in [
        "SELECT load_extension('/tmp/libevil.so')",
        "select LOAD_EXTENSION(\"libevil\", 'sqlite3_evil_init')",
        "SELECT \"load_extension\"('x')",
        "SELECT * FROM (SELECT load_extension('x'))",
    ] {
        let error = fixture.fails(&alice, sql, &[]).await;
        assert!(matches!(&error, AgentDbError::Denied { what } if what.contains("load_extension")), "{sql}: {error:?}");
    }
    let error = fixture.fails(&alice, "SELECT load_extension(?)", &[json!("x")]).await;
    assert!(matches!(error, AgentDbError::Denied { .. }), "{error:?}");
    // Not from a view or a trigger either: SQLite resolves their functions when they are used;
    // then the untrusted-schema rule ("unsafe use") or the authorizer refuses it.
    fixture.ok(&alice, "CREATE TABLE t (x)", &[]).await;
    fixture.ok(&alice, "CREATE VIEW loader AS SELECT load_extension('x')", &[]).await;
    fixture.ok(&alice, "CREATE TRIGGER t_load AFTER INSERT ON t BEGIN SELECT load_extension('x'); END", &[]).await;
    for sql in ["SELECT * FROM loader", "INSERT INTO t VALUES (1)"] {
        let error = fixture.fails(&alice, sql, &[]).await;
        println!("{sql}: {error}");
        assert!(error.to_string().contains("load_extension"), "{sql}: {error:?}");
    }
    assert_eq!(fixture.scalar(&alice, "SELECT count(*) FROM t").await, 0);
    fixture.ok(&alice, "DROP TRIGGER t_load", &[]).await;
    fixture.assert_healthy(&alice).await;
}

#[tokio::test]
async fn pragmas_that_change_limits_or_safety_are_refused_and_readable() {
    let fixture = fixture(short_timeout());
    let alice = agent("alice");
    fixture.ok(&alice, "CREATE TABLE t (x)", &[]).await;
    let max_pages = fixture.scalar(&alice, "PRAGMA max_page_count").await;
    assert_eq!(max_pages, 100_000_000 / 4096);
    for sql in [
        "PRAGMA max_page_count = 4294967294",
        "pragma MAX_PAGE_COUNT=1000000000",
        "PRAGMA main.max_page_count(1000000000)",
        "PRAGMA \"max_page_count\" = 1000000000",
        "PRAGMA /* sneaky */ max_page_count -- comment\n = 1000000000",
        "PRAGMA temp.max_page_count = 1000000000",
        "PRAGMA writable_schema = ON",
        "PRAGMA writable_schema = RESET",
        "PRAGMA journal_mode = OFF",
        "PRAGMA journal_mode = WAL",
        "PRAGMA main.journal_mode = MEMORY",
        "PRAGMA trusted_schema = 1",
        "PRAGMA temp_store_directory = '/tmp'",
        "PRAGMA data_store_directory = '/tmp'",
        "PRAGMA page_size = 65536",
        "PRAGMA temp_store = MEMORY",
        "PRAGMA synchronous = OFF",
        "PRAGMA cache_size = -100000000",
        "PRAGMA mmap_size = 1000000000",
        "PRAGMA hard_heap_limit = 1",
        "PRAGMA soft_heap_limit = 1",
        "PRAGMA threads = 8",
        "PRAGMA locking_mode = EXCLUSIVE",
        "PRAGMA query_only = 1",
        "PRAGMA cell_size_check = OFF",
        "PRAGMA ignore_check_constraints = ON",
        "PRAGMA database_list",
        "PRAGMA no_such_pragma",
    ] {
        let error = fixture.fails(&alice, sql, &[]).await;
        assert!(matches!(error, AgentDbError::Denied { .. }), "{sql}: {error:?}");
        assert!(error.to_string().contains("PRAGMA"), "{sql}: {error}");
    }
    // Table-valued pragma functions compile to a nested PRAGMA; whether SQLite refuses the
    // spelling itself or the authorizer refuses the nested PRAGMA, nothing changes.
    for sql in [
        "SELECT * FROM pragma_max_page_count(1000000000)",
        "SELECT * FROM pragma_max_page_count WHERE arg = 1000000000",
        "SELECT * FROM pragma_journal_mode('off')",
        "SELECT * FROM pragma_writable_schema(1)",
        "SELECT * FROM pragma_temp_store(2)",
    ] {
        let error = fixture.fails(&alice, sql, &[]).await;
        assert!(matches!(error, AgentDbError::Denied { .. } | AgentDbError::Sql { .. }), "{sql}: {error:?}");
        println!("{sql}: {error}");
    }
    assert_eq!(fixture.scalar(&alice, "PRAGMA max_page_count").await, max_pages, "the cap is unchanged");
    assert_eq!(fixture.scalar(&alice, "PRAGMA temp.max_page_count").await, max_pages);
    assert_eq!(fixture.scalar(&alice, "PRAGMA journal_mode").await, "delete");
    assert_eq!(fixture.scalar(&alice, "PRAGMA page_size").await, 4096);
    // Writing the schema by hand stays impossible (defensive mode), even in a transaction.
    let error =
        fixture.fails(&alice, "UPDATE sqlite_schema SET sql = 'CREATE TABLE t (y)' WHERE name = 't'", &[]).await;
    assert!(matches!(error, AgentDbError::Sql { .. }), "{error:?}");
    // The informational and harmless ones work.
    for sql in [
        "PRAGMA table_info(t)",
        "PRAGMA table_list",
        "PRAGMA index_list(t)",
        "PRAGMA foreign_key_list(t)",
        "PRAGMA foreign_keys",
        "PRAGMA foreign_keys = ON",
        "PRAGMA user_version = 3",
        "PRAGMA integrity_check",
        "PRAGMA quick_check",
        "PRAGMA page_count",
        "PRAGMA freelist_count",
        "PRAGMA compile_options",
        "PRAGMA optimize",
        "SELECT * FROM pragma_table_info('t')",
    ] {
        fixture.ok(&alice, sql, &[]).await;
    }
    fixture.assert_healthy(&alice).await;
}

#[tokio::test]
async fn filling_past_the_size_limit_fails_cleanly_and_reads_still_work() {
    let fixture = fixture(AgentDbConfig { max_database_bytes: 2_000_000, ..short_timeout() });
    let alice = agent("alice");
    fixture.ok(&alice, "CREATE TABLE filler (data BLOB)", &[]).await;
    let mut inserted = 0;
    let error = loop {
        match fixture.databases.sql(&alice, "INSERT INTO filler VALUES (randomblob(100000))", &[]).await {
            Ok(_) => inserted += 1,
            Err(error) => break error,
        }
        assert!(inserted < 100, "the cap never held");
    };
    assert_eq!(error, AgentDbError::SizeLimit { limit: 2_000_000 });
    assert!(error.to_string().contains("2000000 bytes"), "{error}");
    assert!((15..=20).contains(&inserted), "{inserted} rows of 100 kB fit in 2 MB");
    let path = fixture.databases.path(&alice);
    assert!(std::fs::metadata(&path).unwrap().len() <= 2_000_000);
    assert_eq!(fixture.scalar(&alice, "PRAGMA integrity_check").await, "ok");
    assert_eq!(fixture.scalar(&alice, "SELECT count(*) FROM filler").await, inserted);
    // A bigger write in one statement fails the same way and leaves nothing behind.
    let error = fixture.fails(&alice, "UPDATE filler SET data = randomblob(200000)", &[]).await;
    assert!(matches!(error, AgentDbError::SizeLimit { .. }), "{error:?}");
    assert_eq!(fixture.scalar(&alice, "SELECT count(*) FROM filler WHERE length(data) = 100000").await, inserted);
    // Making room makes writes work again.
    fixture.ok(&alice, "DELETE FROM filler WHERE rowid % 2 = 0", &[]).await;
    fixture.ok(&alice, "INSERT INTO filler VALUES (randomblob(100000))", &[]).await;
    fixture.assert_healthy(&alice).await;
}

#[tokio::test]
async fn the_default_size_limit_is_one_hundred_megabytes() {
    let fixture = fixture(AgentDbConfig::default());
    let alice = agent("alice");
    fixture.ok(&alice, "CREATE TABLE filler (data BLOB)", &[]).await;
    let mut inserted = 0;
    let error = loop {
        let sql = "INSERT INTO filler SELECT randomblob(999000) FROM (VALUES (1), (2), (3), (4), (5), (6), (7), (8), (9), (10))";
        match fixture.databases.sql(&alice, sql, &[]).await {
            Ok(_) => inserted += 10,
            Err(error) => break error,
        }
        assert!(inserted <= 100, "the cap never held");
    };
    assert_eq!(error, AgentDbError::SizeLimit { limit: 100_000_000 });
    assert!(error.to_string().contains("100 MB"), "{error}");
    assert!(std::fs::metadata(fixture.databases.path(&alice)).unwrap().len() <= 100_000_000);
    assert_eq!(fixture.scalar(&alice, "PRAGMA integrity_check").await, "ok");
    fixture.assert_healthy(&alice).await;
}

#[tokio::test]
async fn temporary_tables_and_page_size_cannot_get_around_the_size_limit() {
    let fixture = fixture(AgentDbConfig { max_database_bytes: 1_000_000, ..short_timeout() });
    let alice = agent("alice");
    fixture.ok(&alice, "CREATE TEMP TABLE scratch (data BLOB)", &[]).await;
    fixture.ok(&alice, "CREATE INDEX temp.scratch_data ON scratch (data)", &[]).await;
    let mut error = None;
    for _ in 0..40 {
        if let Err(failure) =
            fixture.databases.sql(&alice, "INSERT INTO temp.scratch VALUES (randomblob(100000))", &[]).await
        {
            error = Some(failure);
            break;
        }
    }
    assert_eq!(error, Some(AgentDbError::SizeLimit { limit: 1_000_000 }));
    // The page size of an empty database cannot be raised to multiply the page cap.
    let bob = agent("bob");
    let error = fixture.fails(&bob, "PRAGMA page_size = 65536", &[]).await;
    assert!(matches!(error, AgentDbError::Denied { .. }), "{error:?}");
    fixture.ok(&bob, "VACUUM", &[]).await;
    assert_eq!(fixture.scalar(&bob, "PRAGMA page_size").await, 4096);
    fixture.assert_healthy(&alice).await;
    fixture.assert_healthy(&bob).await;
}

#[tokio::test]
async fn run_time_limits_stop_single_builtins_early() {
    let fixture = fixture(short_timeout());
    let alice = agent("alice");
    fixture.ok(&alice, "CREATE TABLE t (x)", &[]).await;
    fixture
        .ok(
            &alice,
            "INSERT INTO t WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 10000) SELECT x FROM c",
            &[],
        )
        .await;
    let value_too_large = AgentDbError::ValueTooLarge { limit: 1_000_000 };
    // printf gives up at the limit and returns NULL instead of failing: bounded all the same.
    for sql in ["SELECT printf('%.*c', 2000000000, 'x')", "SELECT printf('%2000000000d', 1)"] {
        let started = Instant::now();
        assert_eq!(fixture.scalar(&alice, sql).await, json!(null), "{sql}");
        assert!(started.elapsed() < Duration::from_millis(250), "{sql} took {:?}", started.elapsed());
    }
    for sql in [
        "SELECT zeroblob(2000000000)",
        "SELECT randomblob(2000000000)",
        "SELECT length(zeroblob(1000001))",
        "SELECT replace(printf('%.*c', 500000, 'x'), 'x', 'xxxx')",
        "SELECT hex(randomblob(600000))",
        "SELECT group_concat(printf('%.*c', 1000, 'x')) FROM t",
        "SELECT json_group_array(printf('%.*c', 1000, 'x')) FROM t",
        "SELECT substr(zeroblob(999999) || zeroblob(999999), 1, 10)",
        "INSERT INTO t VALUES (zeroblob(1000001))",
    ] {
        let started = Instant::now();
        let error = fixture.fails(&alice, sql, &[]).await;
        assert_eq!(error, value_too_large, "{sql}");
        assert!(started.elapsed() < Duration::from_millis(250), "{sql} took {:?}", started.elapsed());
    }
    assert!(value_too_large.to_string().contains("1000000 bytes"));
    let error = fixture.fails(&alice, "INSERT INTO t VALUES (?)", &[json!("x".repeat(1_000_001))]).await;
    assert_eq!(error, value_too_large, "a bound value is held to the same limit");

    let nested = format!("SELECT {}1{}", "abs(".repeat(150), ")".repeat(150));
    let chain = format!("SELECT 1{}", " + 1".repeat(150));
    let compound = vec!["SELECT 1"; 60].join(" UNION ALL ");
    let pattern = format!("SELECT 'x' LIKE '{}'", "%x".repeat(30));
    let arguments = format!("SELECT max({})", vec!["1"; 40].join(", "));
    let columns = format!("CREATE TABLE wide ({})", (0..101).map(|i| format!("c{i}")).collect::<Vec<_>>().join(", "));
    for (sql, mentions) in [
        (nested.as_str(), "depth"),
        (chain.as_str(), "depth"),
        (compound.as_str(), "compound"),
        (pattern.as_str(), "pattern"),
        (arguments.as_str(), "arguments"),
        (columns.as_str(), "columns"),
        ("SELECT ?1001", "variable number"),
    ] {
        let params: Vec<Value> = if sql.contains("?1001") { vec![json!(null); 1001] } else { vec![] };
        let error = fixture.fails(&alice, sql, &params).await;
        assert!(matches!(error, AgentDbError::Sql { .. }), "{sql}: {error:?}");
        assert!(error.to_string().contains(mentions), "{error}");
    }
    // Multi-row VALUES is not a compound select.
    let values = format!("VALUES {}", vec!["(1)"; 500].join(", "));
    assert_eq!(fixture.ok(&alice, &values, &[]).await["row_count"], 500);

    let long_sql = format!("SELECT '{}'", "x".repeat(100_001));
    let error = fixture.fails(&alice, &long_sql, &[]).await;
    assert_eq!(error, AgentDbError::SqlTooLong { length: long_sql.len(), limit: 100_000 });

    // Triggers that fire themselves stop at the trigger depth.
    fixture.ok(&alice, "PRAGMA recursive_triggers = ON", &[]).await;
    fixture.ok(&alice, "CREATE TABLE chain (n INTEGER)", &[]).await;
    fixture
        .ok(&alice, "CREATE TRIGGER again AFTER INSERT ON chain BEGIN INSERT INTO chain VALUES (new.n + 1); END", &[])
        .await;
    let error = fixture.fails(&alice, "INSERT INTO chain VALUES (1)", &[]).await;
    assert!(error.to_string().contains("too many levels of trigger recursion"), "{error}");
    assert_eq!(fixture.scalar(&alice, "SELECT count(*) FROM chain").await, 0);
    fixture.assert_healthy(&alice).await;
}

#[tokio::test]
async fn ordinary_sqlite_features_work_under_the_guard() {
    let fixture = fixture(short_timeout());
    let alice = agent("alice");
    for sql in [
        "CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, born INTEGER) STRICT",
        "CREATE TABLE pets (id INTEGER PRIMARY KEY, owner INTEGER REFERENCES people(id) ON DELETE CASCADE, name TEXT)",
        "CREATE INDEX pets_owner ON pets (owner)",
        "CREATE VIEW owners AS SELECT people.name, count(pets.id) AS pets FROM people LEFT JOIN pets ON pets.owner = people.id GROUP BY people.id",
        "CREATE VIRTUAL TABLE notes USING fts5 (title, body)",
        "CREATE TRIGGER people_notes AFTER INSERT ON people BEGIN INSERT INTO notes (title, body) VALUES (new.name, 'born ' || new.born); END",
        "CREATE VIRTUAL TABLE places USING rtree (id, min_x, max_x, min_y, max_y)",
        "INSERT INTO people (name, born) VALUES ('Ada', 1815), ('Alan', 1912)",
        "INSERT INTO pets (owner, name) VALUES (1, 'Cat'), (1, 'Dog'), (2, 'Fish')",
        "INSERT INTO places VALUES (1, 0, 1, 0, 1)",
        "ALTER TABLE pets ADD COLUMN legs INTEGER DEFAULT 4",
        "ALTER TABLE pets RENAME TO animals",
        "ANALYZE",
        "REINDEX",
        "SAVEPOINT s",
        "DELETE FROM people WHERE name = 'Alan'",
        "ROLLBACK TO s",
        "RELEASE s",
        "BEGIN",
        "UPDATE animals SET legs = 0 WHERE name = 'Fish'",
        "COMMIT",
        "CREATE TEMP TABLE scratch AS SELECT * FROM people",
        "VACUUM",
    ] {
        fixture.ok(&alice, sql, &[]).await;
    }
    assert_eq!(
        fixture.ok(&alice, "SELECT * FROM owners ORDER BY name", &[]).await["rows"],
        json!([["Ada", 2], ["Alan", 1]])
    );
    assert_eq!(fixture.scalar(&alice, "SELECT title FROM notes WHERE notes MATCH 'born'").await, "Ada");
    assert_eq!(fixture.scalar(&alice, "SELECT count(*) FROM places WHERE min_x >= 0").await, 1);
    assert_eq!(fixture.scalar(&alice, "SELECT sum(legs) FROM animals").await, 8);
    let window = fixture.ok(&alice, "SELECT name, row_number() OVER (ORDER BY born DESC) FROM people", &[]).await;
    assert_eq!(window["rows"], json!([["Alan", 1], ["Ada", 2]]));
    assert_eq!(fixture.scalar(&alice, "SELECT json_extract('{\"a\": [1, 2]}', '$.a[1]')").await, 2);
    let error = fixture.fails(&alice, "INSERT INTO people (name, born) VALUES ('Ada', 1)", &[]).await;
    assert!(error.to_string().contains("UNIQUE constraint failed"), "{error}");
    let error = fixture.fails(&alice, "SELEC 1", &[]).await;
    assert_eq!(error, AgentDbError::Sql { message: "near \"SELEC\": syntax error".to_owned() });
    let error = fixture.fails(&alice, "CREATE VIRTUAL TABLE stats USING dbstat", &[]).await;
    assert!(matches!(error, AgentDbError::Denied { .. }), "{error:?}");
    fixture.assert_healthy(&alice).await;
}

#[tokio::test]
async fn schema_and_summary_describe_the_agents_tables() {
    let fixture = fixture(short_timeout());
    let alice = agent("alice");
    fixture.ok(&alice, "CREATE TABLE contacts (id INTEGER PRIMARY KEY, name TEXT NOT NULL, email)", &[]).await;
    fixture.ok(&alice, "CREATE TABLE \"odd \"\"name\"\"\" (x REAL)", &[]).await;
    fixture.ok(&alice, "CREATE VIRTUAL TABLE docs USING fts5 (body)", &[]).await;
    fixture.ok(&alice, "CREATE VIEW names AS SELECT name FROM contacts", &[]).await;
    fixture.ok(&alice, "INSERT INTO contacts (name) VALUES ('a'), ('b'), ('c')", &[]).await;
    fixture.ok(&alice, "INSERT INTO docs VALUES ('hello')", &[]).await;
    fixture.ok(&alice, "ANALYZE", &[]).await;
    let schema = fixture.databases.schema(&alice).await.unwrap();
    assert_eq!(
        schema,
        json!({ "tables": [
            { "name": "contacts", "row_count": 3, "columns": [
                { "name": "id", "type": "INTEGER", "notnull": false, "pk": true },
                { "name": "name", "type": "TEXT", "notnull": true, "pk": false },
                { "name": "email", "type": "", "notnull": false, "pk": false },
            ] },
            { "name": "docs", "row_count": 1, "columns": [
                { "name": "body", "type": "", "notnull": false, "pk": false },
            ] },
            { "name": "odd \"name\"", "row_count": 0, "columns": [
                { "name": "x", "type": "REAL", "notnull": false, "pk": false },
            ] },
        ] })
    );
    let summary = fixture.databases.summary(&alice).await.unwrap();
    assert_eq!(summary, "contacts (3 rows): id, name, email\ndocs (1 row): body\nodd \"name\" (0 rows): x");
}

#[tokio::test]
async fn summary_stays_short_with_many_tables() {
    let fixture = fixture(short_timeout());
    let alice = agent("alice");
    for index in 0..60 {
        fixture.ok(&alice, &format!("CREATE TABLE t{index:02} (a, b)"), &[]).await;
    }
    let summary = fixture.databases.summary(&alice).await.unwrap();
    assert_eq!(summary.lines().count(), 51);
    assert!(summary.ends_with("… and 10 more tables (db_schema lists them all)"), "{summary}");
}

#[tokio::test]
async fn agents_have_separate_files() {
    let fixture = fixture(short_timeout());
    let (alice, bob) = (agent("alice"), agent("bob"));
    fixture.ok(&alice, "CREATE TABLE secrets (x)", &[]).await;
    fixture.ok(&alice, "INSERT INTO secrets VALUES ('alice only')", &[]).await;
    let error = fixture.fails(&bob, "SELECT * FROM secrets", &[]).await;
    assert_eq!(error, AgentDbError::Sql { message: "no such table: secrets".to_owned() });
    assert_ne!(fixture.databases.path(&alice), fixture.databases.path(&bob));
    // Closing an agent's database and using it again reopens it with its data.
    fixture.databases.close(&alice).await;
    assert_eq!(fixture.scalar(&alice, "SELECT x FROM secrets").await, "alice only");
    assert_eq!(fixture.scalar(&alice, "PRAGMA max_page_count").await, 100_000_000 / 4096, "caps are set again");
}

#[test]
fn config_defaults_match_the_issue_and_deserialize_from_an_empty_table() {
    let config = AgentDbConfig::default();
    assert_eq!(config.statement_timeout_ms, 5_000);
    assert_eq!(config.max_rows, 1_000);
    assert_eq!(config.max_result_bytes, 5 * 1024 * 1024);
    assert_eq!(config.max_database_bytes, 100_000_000);
    assert_eq!(serde_json::from_str::<AgentDbConfig>("{}").unwrap(), config);
    let custom: AgentDbConfig = serde_json::from_str(r#"{"statement_timeout_ms": 100, "max_rows": 5}"#).unwrap();
    assert_eq!((custom.statement_timeout_ms, custom.max_rows, custom.max_database_bytes), (100, 5, 100_000_000));
    assert!(serde_json::from_str::<AgentDbConfig>(r#"{"max_row": 5}"#).is_err(), "unknown fields are refused");
}
