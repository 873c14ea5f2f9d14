use super::*;

#[test]
fn agent_ids_that_are_safe_path_components_parse() {
    for ok in ["default", "a", "research-bot", "x_1", "0day", &"a".repeat(64)] {
        assert_eq!(AgentId::parse(ok).unwrap().as_str(), ok);
    }
}

#[test]
fn agent_ids_that_could_escape_a_directory_are_refused() {
    for bad in ["", "..", "a/b", "A", "-x", "_x", "a b", "a\0", "é", &"a".repeat(65), "a.b"] {
        assert!(AgentId::parse(bad).is_err(), "{bad:?} should be refused");
    }
}

#[test]
fn agent_id_deserialization_validates() {
    assert!(serde_json::from_str::<AgentId>("\"../etc\"").is_err());
    assert_eq!(serde_json::from_str::<AgentId>("\"ok\"").unwrap().as_str(), "ok");
}

#[test]
fn string_enums_round_trip_through_text_and_serde() {
    for author in Author::ALL {
        assert_eq!(Author::parse(author.as_str()).unwrap(), *author);
        let json = serde_json::to_string(author).unwrap();
        assert_eq!(json, format!("\"{}\"", author.as_str()));
    }
    for kind in EventKind::ALL {
        assert_eq!(EventKind::parse(kind.as_str()).unwrap(), *kind);
    }
    assert_eq!(DocumentKind::parse("nope").unwrap_err().to_string(), "unknown document \"nope\"");
}

#[test]
fn iso_from_ms_matches_known_dates() {
    assert_eq!(iso_from_ms(0), "1970-01-01T00:00:00.000Z");
    // 2024-02-29 (a leap day) 12:34:56.789 UTC.
    assert_eq!(iso_from_ms(1_709_210_096_789), "2024-02-29T12:34:56.789Z");
    assert_eq!(iso_from_ms(1_798_761_599_999), "2026-12-31T23:59:59.999Z");
    assert_eq!(iso_from_ms(-1), "1969-12-31T23:59:59.999Z");
}

#[test]
fn fixed_clock_moves_only_when_told() {
    let clock = FixedClock::at(1_000);
    assert_eq!(clock.now_ms(), 1_000);
    clock.advance_ms(500);
    assert_eq!(clock.now_ms(), 1_500);
    for layer in MemoryLayer::ALL {
        assert_eq!(MemoryLayer::parse(layer.as_str()).unwrap(), *layer);
    }
}

#[test]
fn a_waiting_call_is_shown_by_its_tools_presentation_or_as_an_approval() {
    use serde_json::json;
    let question = json!({"question": "Which one?", "options": ["a", "b"]});
    assert_eq!(
        Shown::of(PendingKind::Question, Some(Presentation::Question), "ask_user", &question, &Value::Null),
        Some(Shown::Question { question: "Which one?".into(), options: vec!["a".into(), "b".into()] })
    );
    let render = json!({"name": "Chart", "version": 3, "compiled_js": "…"});
    let component = json!({"component": "Chart", "props": {"n": 1}, "title": "Pick"});
    assert_eq!(
        Shown::of(PendingKind::Question, Some(Presentation::Component), "render_and_wait", &component, &render),
        Some(Shown::Component {
            name: Some("Chart".into()),
            version: Some(3),
            title: Some("Pick".into()),
            props: json!({"n": 1})
        })
    );
    // An approval is shown as one whatever the tool, with the call's arguments.
    let arguments = json!({"path": "/tmp/x"});
    assert_eq!(
        Shown::of(PendingKind::Approval, None, "file_write", &arguments, &Value::Null),
        Some(Shown::Approval { tool: "file_write".into(), arguments: arguments.clone(), reason: None })
    );
    assert_eq!(Shown::of(PendingKind::Question, None, "gone", &arguments, &Value::Null), None);
    // One serde form, tagged by `type`.
    let form = Shown::of(
        PendingKind::Question,
        Some(Presentation::Form),
        "render_blocks",
        &json!({"blocks": [{"type": "form"}]}),
        &Value::Null,
    );
    assert_eq!(
        serde_json::to_value(form).unwrap(),
        json!({"type": "form", "title": null, "blocks": [{"type": "form"}]})
    );
}
