use rquickjs::{Context, Runtime, Value, Ctx, CatchResultExt, context::EvalOptions};
fn show<'js>(ctx: &Ctx<'js>, v: Value<'js>) -> String {
    if let Some(o) = v.as_object() {
        let m: Option<String> = o.get("message").ok();
        let s: Option<String> = o.get("stack").ok();
        let n: Option<String> = o.get("name").ok();
        let l: Option<i32> = o.get("lineNumber").ok();
        let c: Option<i32> = o.get("columnNumber").ok();
        format!("name={n:?} msg={m:?} line={l:?} col={c:?} stack={s:?}")
    } else { format!("{:?}", v) }
}
fn main() {
    let rt = Runtime::new().unwrap();
    rt.set_memory_limit(16 << 20);
    let t0 = std::time::Instant::now();
    let dl = t0 + std::time::Duration::from_millis(300);
    rt.set_interrupt_handler(Some(Box::new(move || std::time::Instant::now() > dl)));
    let ctx = Context::full(&rt).unwrap();
    ctx.with(|ctx| {
        for src in ["(async function () {let x = ;\n})", "(async function () {\nlet a = 1;\nnull.x;\n})()", "(async function () {\nlet a = 1;\nwhile(true){}\n})()", "(async function () {\nconst a=[]; for(let i=0;;i++) a.push(new Array(65536).fill(i));\n})()", "(async function(){ return 'x'.repeat(1e9) })()", "Object.getOwnPropertyNames(globalThis).join(',')"] {
            let mut o = EvalOptions::default(); o.filename = Some("tool.js".into());
            let r = ctx.eval_with_options::<Value, _>(src, o).catch(&ctx);
            match r {
                Ok(v) => {
                    if let Some(p) = v.as_promise() {
                        while ctx.execute_pending_job() {}
                        let st = p.state();
                        let res: Option<rquickjs::Result<Value>> = p.result();
                        println!("{src:.30} promise {:?} -> {:?}", st, res.map(|r| r.catch(&ctx).map_err(|e| format!("{e}"))).map(|r| r.map(|v| show(&ctx, v))));
                    } else { println!("{src:.30} ok {}", show(&ctx, v.clone())); if let Some(s) = v.as_string() { println!("{}", s.to_string().unwrap()); } }
                }
                Err(e) => println!("{src:.30} ERR {e:?}"),
            }
            
        }
    });
}
