use wright_sandbox::*;
fn main() {
    let config = SandboxConfig::default();
    for code in ["const a = 1;\nfunction inner() {\n  return null.x;\n}\nreturn inner();",
                 "const a = 1;\nfunction inner() {\n  const o = undefined;\n  return o.x;\n}\nreturn inner();",
                 "const a = 1;\nfunction inner() {\n  notDefined();\n}\nreturn inner();",
                 "const a = 1;\nfunction inner() {\n  throw new Error('x');\n}\nreturn inner();",
                 "const a = 1;\nfunction inner(o) {\n  return o.x.y;\n}\nreturn inner({});",
                 "null.y;", "  let q = 1; q.foo.bar;"] {
        let o = run_in_this_process(&RunRequest::new(code), &config);
        println!("{}", o.to_json());
    }
}
