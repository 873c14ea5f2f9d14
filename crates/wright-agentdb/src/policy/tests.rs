use super::*;

fn pragma_context<'a>(name: &'a str, value: Option<&'a str>) -> AuthContext<'a> {
    AuthContext {
        action: AuthAction::Pragma { pragma_name: name, pragma_value: value },
        database_name: Some("main"),
        accessor: None,
    }
}

#[test]
fn limit_pragmas_are_readable_but_not_settable() {
    for name in ["max_page_count", "MAX_PAGE_COUNT", "page_size", "journal_mode", "temp_store", "trusted_schema"] {
        assert!(authorize(&pragma_context(name, None), Phase::Preparing).is_ok(), "{name}");
        assert!(authorize(&pragma_context(name, Some("1")), Phase::Preparing).is_err(), "{name} = 1");
    }
}

#[test]
fn unknown_and_global_pragmas_are_refused() {
    for name in
        ["writable_schema", "temp_store_directory", "hard_heap_limit", "soft_heap_limit", "mmap_size", "no_such"]
    {
        assert!(authorize(&pragma_context(name, None), Phase::Preparing).is_err(), "{name}");
    }
}

#[test]
fn only_vacuums_own_nameless_attach_is_allowed_and_only_while_running() {
    let attach =
        |filename| AuthContext { action: AuthAction::Attach { filename }, database_name: None, accessor: None };
    assert!(authorize(&attach(""), Phase::Running).is_ok());
    assert_eq!(authorize(&attach(""), Phase::Preparing), Err("ATTACH".to_owned()));
    assert_eq!(authorize(&attach("x.db"), Phase::Running), Err("VACUUM INTO".to_owned()));
}
