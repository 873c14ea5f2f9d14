use super::*;

fn scan_in_pieces(text: &str, piece: usize, protocol: &TextProtocol) -> (String, Vec<Scanned>) {
    let mut scanner = Scanner::new(protocol.clone());
    let mut shown = String::new();
    let mut found = Vec::new();
    let characters: Vec<char> = text.chars().collect();
    for chunk in characters.chunks(piece) {
        let chunk: String = chunk.iter().collect();
        for item in scanner.feed(&chunk) {
            match item {
                Scanned::Text(text) => shown.push_str(&text),
                other => found.push(other),
            }
        }
    }
    for item in scanner.finish() {
        match item {
            Scanned::Text(text) => shown.push_str(&text),
            other => found.push(other),
        }
    }
    (shown, found)
}

#[test]
fn delimiters_split_anywhere_are_found_and_the_first_block_ends_generation() {
    let protocol = TextProtocol::default();
    let text = "Sure — «quoted» <||not a call. <||TOOL.CALL>{\"name\": \"f\", \"arguments\": {\"q\": \"<||TOOL.CALL> <|im_end|>\"}}<TOOL.CALL||> \
                after <||TOOL.CALL>{\"name\": \"g\"}<TOOL.CALL||>";
    for piece in 1..=text.chars().count() {
        let (shown, found) = scan_in_pieces(text, piece, &protocol);
        assert_eq!(shown, "Sure — «quoted» <||not a call. ", "piece {piece}");
        assert_eq!(
            found,
            vec![Scanned::Call("{\"name\": \"f\", \"arguments\": {\"q\": \"<||TOOL.CALL> <|im_end|>\"}}".to_owned())],
            "piece {piece}"
        );
    }
}

#[test]
fn a_stop_string_outside_a_block_ends_generation() {
    let (shown, found) = scan_in_pieces("Done.<|im_end|>junk", 2, &TextProtocol::default());
    assert_eq!((shown.as_str(), found), ("Done.", vec![Scanned::Stop]));
}

#[test]
fn an_oversized_block_is_abandoned_and_reported_as_a_broken_call() {
    let protocol = TextProtocol { max_block_bytes: 64, ..TextProtocol::default() };
    let text = format!(
        "<||TOOL.CALL>{{\"name\": \"write\", \"arguments\": {{\"text\": \"{}\"}}}}<TOOL.CALL||>",
        "x".repeat(500)
    );
    let (shown, found) = scan_in_pieces(&text, 7, &protocol);
    assert_eq!(shown, "");
    assert!(matches!(&found[..], [Scanned::Oversized(_)]), "{found:?}");
    let call = call_event(&found[0], &protocol).unwrap();
    assert_eq!(call.name, "write");
    assert!(call.arguments().is_err(), "the loop answers with an invalid-arguments error");
}

#[test]
fn an_unclosed_block_is_a_call_only_when_it_is_whole() {
    let protocol = TextProtocol::default();
    let (_, found) = scan_in_pieces("<||TOOL.CALL>{\"name\": \"f\", \"arguments\": {}}", 3, &protocol);
    assert_eq!(found, vec![Scanned::Call("{\"name\": \"f\", \"arguments\": {}}".to_owned())]);
    let (shown, found) = scan_in_pieces("Hm <||TOOL.CALL>{\"name\": \"f\", \"argu", 3, &protocol);
    assert_eq!((shown.as_str(), found.len()), ("Hm <||TOOL.CALL>{\"name\": \"f\", \"argu", 0));
}

#[test]
fn broken_json_keeps_its_text_and_names_its_tool() {
    let protocol = TextProtocol::default();
    let call = call_event(&Scanned::Call("{\"name\": \"f\", \"arguments\": {oops}}".to_owned()), &protocol).unwrap();
    assert_eq!(call.name, "f");
    assert_eq!(call.arguments(), Err("{\"name\": \"f\", \"arguments\": {oops}}".to_owned()));
}

#[test]
fn the_rewrite_teaches_the_format_and_drops_native_tools() {
    let protocol = TextProtocol::default();
    let request = Request {
        system: "Be brief.".to_owned(),
        tools: Arc::from([ToolSpec {
            name: "f".into(),
            description: "does f".into(),
            parameters: json!({"type": "object"}),
            pauses: None,
            effects: wright_core::Effects::default(),
            policy: Default::default(),
            toolset: None,
        }]),
        ..Request::default()
    };
    let rewritten = protocol.rewrite(&request);
    assert!(rewritten.tools.is_empty());
    assert!(rewritten.system.starts_with("Be brief.\n\n## Tools"));
    assert!(rewritten.system.contains("- f: does f"));
}

fn bash_spec() -> ToolSpec {
    ToolSpec {
        name: "bash".into(),
        description: "runs bash".into(),
        parameters: json!({"type": "object"}),
        pauses: None,
        effects: wright_core::Effects::default(),
        policy: Default::default(),
        toolset: None,
    }
}

#[test]
fn a_seed_003_shell_block_becomes_a_bash_call() {
    let protocol = TextProtocol::default().for_tools(&[bash_spec()]);
    for piece in [1, 3, 7, 100] {
        let (shown, found) =
            scan_in_pieces("Let me check <||SYSTEM.EXEC>ls -la | head<SYSTEM.EXEC||> and more", piece, &protocol);
        assert_eq!(shown, "Let me check ", "piece {piece}");
        assert_eq!(found, vec![Scanned::Shell("ls -la | head".to_owned())], "piece {piece}");
    }
    let call = call_event(&Scanned::Shell("\nls -la\n".to_owned()), &protocol).expect("call");
    assert_eq!((call.name.as_str(), call.arguments_json.as_str()), ("bash", r#"{"command":"ls -la"}"#));
    let (shown, found) = scan_in_pieces("<||SYSTEM.EXEC>rm -rf partial", 4, &protocol);
    assert_eq!(
        (shown.as_str(), found),
        ("<||SYSTEM.EXEC>rm -rf partial", vec![]),
        "an unclosed shell block never runs"
    );
}

#[test]
fn shell_blocks_are_plain_text_without_a_bash_tool() {
    let tool = ToolSpec {
        name: "f".into(),
        description: "does f".into(),
        parameters: json!({"type": "object"}),
        pauses: None,
        effects: wright_core::Effects::default(),
        policy: Default::default(),
        toolset: None,
    };
    let protocol = TextProtocol::default().for_tools(&[tool]);
    let (shown, found) = scan_in_pieces("<||SYSTEM.EXEC>ls<SYSTEM.EXEC||>", 2, &protocol);
    assert_eq!((shown.as_str(), found), ("<||SYSTEM.EXEC>ls<SYSTEM.EXEC||>", vec![]));
    assert!(!protocol.instructions(&[]).contains("SYSTEM.EXEC"));
}

#[test]
fn the_rewrite_teaches_shell_blocks_and_writes_bash_calls_back_as_them() {
    let protocol = TextProtocol::default().for_tools(&[bash_spec()]);
    assert!(protocol.instructions(&[bash_spec()]).contains("<||SYSTEM.EXEC>command<SYSTEM.EXEC||>"));
    assert_eq!(protocol.call_block("bash", &json!({"command": "ls"})), "<||SYSTEM.EXEC>ls<SYSTEM.EXEC||>");
    let with_timeout = protocol.call_block("bash", &json!({"command": "ls", "timeout_ms": 5}));
    assert!(with_timeout.starts_with("<||TOOL.CALL>"), "{with_timeout}");
}
