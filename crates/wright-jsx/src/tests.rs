use super::*;

#[test]
fn jsx_and_typescript_compile_to_create_element_calls() {
    let source = "import { useState } from 'react';\n\
        type Props = { label: string };\n\
        export default function Counter({ label }: Props) {\n\
          const [count, setCount] = useState<number>(0);\n\
          return <button onClick={() => setCount(count + 1)}>{label}: {count}</button>;\n\
        }\n";
    let output = compile(source).unwrap();
    assert!(output.contains("React.createElement(\"button\""), "{output}");
    assert!(!output.contains("type Props") && !output.contains("<number>"), "{output}");
    assert!(output.contains("export default function Counter"), "{output}");
}

#[test]
fn fragments_use_react_fragment() {
    let output = compile("export default () => <><b>a</b></>;").unwrap();
    assert!(output.contains("React.Fragment"), "{output}");
}

#[test]
fn syntax_errors_carry_line_and_column() {
    let error = compile("export default function A() {\n  const x = ;\n  return <div/>;\n}\n").unwrap_err();
    let JsxError::Syntax { line, column, .. } = &error else { panic!("{error:?}") };
    assert_eq!(*line, 2, "{error}");
    assert_eq!(*column, 13, "{error}");
    assert!(error.to_string().starts_with("syntax error at line 2"), "{error}");
}

#[test]
fn imports_other_than_the_frame_modules_are_refused() {
    for source in [
        "import x from 'https://evil.example/x.js';\nexport default () => null;",
        "export * from 'fs';\nexport default () => null;",
        "export { a } from './a';\nexport default () => null;",
    ] {
        let error = compile(source).unwrap_err();
        assert!(matches!(error, JsxError::ForbiddenImport { .. }), "{source}: {error:?}");
        assert!(error.to_string().contains("may import only react, wright"), "{error}");
    }
    assert!(compile("import React, { useEffect } from 'react';\nexport default () => null;").is_ok());
}

#[test]
fn a_component_must_have_a_default_export() {
    assert_eq!(compile("const A = () => <div/>;").unwrap_err(), JsxError::NoDefaultExport);
}

#[test]
fn oversized_and_hostile_sources_fail_cleanly() {
    assert!(matches!(compile(&"a".repeat(MAX_SOURCE_BYTES + 1)), Err(JsxError::TooLarge(_))));
    let deep = format!("export default () => {}1{}", "(".repeat(5000), ")".repeat(5000));
    assert!(compile(&deep).unwrap_err().to_string().contains("nesting deeper than 256"));
    let deep_jsx = format!("export default () => {}{}", "<b>".repeat(400), "</b>".repeat(400));
    assert!(compile(&deep_jsx).is_err());
    let shallow = format!("export default () => {}1{}", "(".repeat(200), ")".repeat(200));
    assert!(compile(&shallow).is_ok());
    // Nesting without brackets: long unary and conditional chains within the size limit.
    for chain in ["!".repeat(200_000), "- ".repeat(100_000), "a ? b : ".repeat(20_000)] {
        let source = format!("export default () => {chain}1;");
        // Compiles or errors; the process survives either way.
        let _outcome = compile(&source[..source.len().min(MAX_SOURCE_BYTES)]);
    }
    assert!(compile("\u{0}\u{FFFF}").is_err());
    assert_eq!(line_column("ab\ncd", 4), (2, 2));
}
