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
    match (edit.apply(before), expect) {
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
