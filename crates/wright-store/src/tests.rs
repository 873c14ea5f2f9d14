use crate::documents::DocumentEdit;
use crate::migrations::MIGRATIONS;

#[test]
fn every_migration_file_is_embedded_in_order() {
    let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations");
    let mut files: Vec<String> = std::fs::read_dir(folder)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.ends_with(".sql"))
        .collect();
    files.sort();
    let embedded: Vec<String> =
        MIGRATIONS.iter().map(|(version, description, _)| format!("{version:04}_{description}.sql")).collect();
    assert_eq!(files, embedded, "migrations/ and MIGRATIONS in migrations.rs must list the same files");
}

fn check(edit: DocumentEdit, before: &str, expect: Result<&str, &str>) {
    check_with_cap(edit, before, 1024, expect);
}

fn check_with_cap(edit: DocumentEdit, before: &str, max_bytes: usize, expect: Result<&str, &str>) {
    match (edit.apply(before, max_bytes, wright_core::DocumentKind::LearnedNotes), expect) {
        (Ok(after), Ok(expected)) => assert_eq!(after, expected),
        (Err(error), Err(fragment)) => {
            let message = error.to_string();
            assert!(message.contains(fragment), "{message:?} should contain {fragment:?}")
        }
        (got, expected) => panic!("got {got:?}, expected {expected:?}"),
    }
}

fn text(value: &str) -> String {
    value.to_owned()
}

#[test]
fn edits_apply_as_the_seed_describes() {
    check(DocumentEdit::Replace { content: text("new") }, "old", Ok("new"));
    check(DocumentEdit::Append { content: text("b") }, "a", Ok("a\nb"));
    check(DocumentEdit::Append { content: text("b") }, "a\n", Ok("a\nb"));
    check(DocumentEdit::Append { content: text("b") }, "", Ok("b"));
    check(DocumentEdit::Prepend { content: text("a") }, "b", Ok("a\nb"));
    check(DocumentEdit::Prepend { content: text("a") }, "", Ok("a"));
    check(DocumentEdit::FindReplace { find: text("x"), replace: text("y"), replace_all: false }, "x x", Ok("y x"));
    check(DocumentEdit::FindReplace { find: text("x"), replace: text("y"), replace_all: true }, "x x", Ok("y y"));
    check(DocumentEdit::Delete { content: text(" two") }, "one two three two", Ok("one three two"));
}

#[test]
fn edits_that_cannot_apply_quote_what_was_not_found() {
    check(
        DocumentEdit::FindReplace { find: text("not there"), replace: text("y"), replace_all: false },
        "text",
        Err("the text \"not there\" was not found"),
    );
    check(DocumentEdit::Delete { content: text("absent") }, "text", Err("the text \"absent\" was not found"));
    check(
        DocumentEdit::FindReplace { find: text(""), replace: text("y"), replace_all: false },
        "t",
        Err("`find` must not be empty"),
    );
    check(DocumentEdit::Delete { content: text("") }, "t", Err("must not be empty"));
}

/// Guards the find/replace that grew the server to 23.8 GB: the result's length is known from
/// the match count before any text is built, so this returns at once with the sizes.
#[test]
fn edits_over_the_document_cap_are_refused_before_the_result_is_built() {
    let notes = "a".repeat(1_000_000);
    let replace = "b".repeat(1_000_000);
    check_with_cap(
        DocumentEdit::FindReplace { find: text("a"), replace, replace_all: true },
        &notes,
        2_000_000,
        Err("the learned_notes would be 1000000000000 bytes; the limit is 2000000 bytes ([limits] max_document_bytes)"),
    );
    check_with_cap(DocumentEdit::Append { content: text("bc") }, "a", 3, Err("would be 4 bytes; the limit is 3"));
    check_with_cap(DocumentEdit::Append { content: text("b") }, "a", 3, Ok("a\nb"));
    check_with_cap(DocumentEdit::Replace { content: text("four") }, "", 3, Err("would be 4 bytes"));
    // Only the first match counts without replace_all; deleting always shrinks.
    check_with_cap(
        DocumentEdit::FindReplace { find: text("a"), replace: text("bb"), replace_all: false },
        "aa",
        3,
        Ok("bba"),
    );
    check_with_cap(DocumentEdit::Delete { content: text("a") }, "aaaa", 2, Ok("aaa"));
}

/// Events stored before the protocol was typed (user text and error messages only in
/// `content`) read back as typed bodies after migration 6, with nothing rewritten but their
/// representation, and the append-only trigger is back afterwards.
#[tokio::test]
async fn events_stored_before_the_typed_protocol_read_back_typed() {
    use std::borrow::Cow;
    use std::str::FromStr;

    use sqlx::migrate::{Migration, MigrationType, Migrator};
    use wright_core::{EventBody, Notice};

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wright.db");
    let options =
        sqlx::sqlite::SqliteConnectOptions::from_str("sqlite:").unwrap().filename(&path).create_if_missing(true);
    let pool = sqlx::SqlitePool::connect_with(options).await.unwrap();
    let before_typing: Vec<Migration> = MIGRATIONS
        .iter()
        .filter(|(version, _, _)| *version < 6)
        .map(|(version, description, sql)| {
            let sql = sqlx::SqlSafeStr::into_sql_str(*sql);
            Migration::new(*version, Cow::Borrowed(*description), MigrationType::Simple, sql, false)
        })
        .collect();
    Migrator { migrations: Cow::Owned(before_typing), ..Migrator::DEFAULT }.run(&pool).await.unwrap();
    sqlx::query("INSERT INTO agents (id, name) VALUES ('default', 'Default')").execute(&pool).await.unwrap();
    sqlx::query("INSERT INTO conversations (id, agent_id, title, status) VALUES ('old', 'default', 'Old', 'running')")
        .execute(&pool)
        .await
        .unwrap();
    for (seq, kind, content, data) in [
        (1, "user", "hello there", "{}"),
        (2, "assistant", "Hi.", r#"{"text":"Hi.","provider":null}"#),
        (3, "notice", "model error: rate limited", r#"{"type":"error"}"#),
        (4, "notice", "Stopped after 2 tool turns", r#"{"type":"turn_limit"}"#),
    ] {
        sqlx::query("INSERT INTO events (conversation_id, seq, kind, content, data_json) VALUES ('old', ?, ?, ?, ?)")
            .bind(seq)
            .bind(kind)
            .bind(content)
            .bind(data)
            .execute(&pool)
            .await
            .unwrap();
    }
    pool.close().await;
    let store = crate::Store::open(&path, crate::StateLimits::default()).await.unwrap();
    let bodies: Vec<EventBody> =
        store.events_after("old", 0).await.unwrap().into_iter().map(|stored| stored.event.body).collect();
    assert_eq!(bodies[0], EventBody::User { text: "hello there".into(), component: None });
    assert_eq!(bodies[2], EventBody::Notice(Notice::Error { message: "model error: rate limited".into() }));
    assert_eq!(bodies[3], EventBody::Notice(Notice::TurnLimit { max_tool_turns: 0 }));
    let orphans = store.claimed_runs().await.unwrap();
    assert!(
        orphans.len() == 1 && orphans[0].expired,
        "the old running conversation is recovered at start: {orphans:?}"
    );
    let rewrite = sqlx::query("UPDATE events SET content = 'x'").execute(&store.writer).await;
    assert!(rewrite.unwrap_err().to_string().contains("append-only"));
}

#[tokio::test]
async fn an_agents_own_model_wins_over_the_default_and_deleting_a_connection_clears_its_choices() {
    let dir = tempfile::tempdir().unwrap();
    let store = crate::Store::open(&dir.path().join("wright.db"), crate::StateLimits::default()).await.unwrap();
    let fields = crate::ConnectionFields { name: "local", kind: "openai_compatible", base_url: Some("http://x/v1") };
    let connection = store.create_provider_connection(&fields).await.unwrap();
    assert!(matches!(
        store.create_provider_connection(&fields).await,
        Err(crate::StoreError::ItemExists { kind: "connection", .. })
    ));
    let choice = |target, model: &str| crate::ModelChoice {
        target,
        connection_id: connection.id.clone(),
        model: model.to_owned(),
        tool_calls: wright_core::ToolCallMode::Native,
        context_window: Some(8192),
    };
    store.set_model_choice(&choice(crate::ChoiceTarget::Default, "small")).await.unwrap();
    store.set_model_choice(&choice(crate::ChoiceTarget::Agent("writer".into()), "large")).await.unwrap();
    assert_eq!(store.model_choice_for("writer").await.unwrap().unwrap().model, "large");
    assert_eq!(store.model_choice_for("other").await.unwrap().unwrap().model, "small");
    store.delete_provider_connection(&connection.id).await.unwrap();
    assert_eq!(store.model_choice_for("writer").await.unwrap(), None);
    assert!(store.model_choices().await.unwrap().is_empty());
}

#[tokio::test]
async fn the_agents_notifications_are_rate_limited_and_the_schedulers_are_not() {
    let directory = tempfile::tempdir().unwrap();
    let clock = std::sync::Arc::new(wright_core::FixedClock::at(1_795_500_000_000));
    let store = crate::Store::open(&directory.path().join("wright.db"), crate::StateLimits::default())
        .await
        .unwrap()
        .with_memory(crate::MemoryConfig::default(), clock.clone())
        .with_notify(crate::NotifyConfig { max_per_hour: 2, max_chars: 50 });
    let agent = wright_core::AgentId::default_agent();
    let note = |source| crate::NewNotification {
        source,
        title: "t".into(),
        text: "hello".into(),
        conversation_id: None,
        schedule_id: None,
    };
    store.add_notification(&agent, &note(crate::NotificationSource::Agent)).await.unwrap();
    clock.advance_ms(60_000);
    store.add_notification(&agent, &note(crate::NotificationSource::Agent)).await.unwrap();
    let refused = store.add_notification(&agent, &note(crate::NotificationSource::Agent)).await;
    match refused {
        Err(crate::StoreError::RateLimited { retry_after_secs, .. }) => assert_eq!(retry_after_secs, 3600 - 60),
        other => panic!("{other:?}"),
    }
    store.add_notification(&agent, &note(crate::NotificationSource::Schedule)).await.unwrap();
    clock.advance_ms(3_600_000 - 60_000 + 1);
    store.add_notification(&agent, &note(crate::NotificationSource::Agent)).await.unwrap();
    let long = crate::NewNotification { text: "x".repeat(51), ..note(crate::NotificationSource::Agent) };
    assert!(matches!(store.add_notification(&agent, &long).await, Err(crate::StoreError::LimitExceeded(_))));
    assert_eq!(store.list_notifications(&agent, 0, 10).await.unwrap().len(), 4);
}
