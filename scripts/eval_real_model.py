#!/usr/bin/env python3
"""The real-model evaluation behind scripts/eval-real-model.sh (read its header).

Each task is a message to a fresh conversation of the default agent, with an optional setup
through Wright's API (state, a table, a tool) and an optional answer to a call that waits for
the person (ask_user, render_blocks). Its check reads what Wright stored through the API; the
model's wording is never looked at. Prompt tokens and time to first token come from the
llama.cpp server's own log (`n_prompt_tokens`, `prompt eval time`), the server's accounting of
every request.
"""
import argparse, datetime, http.server, json, os, re, shutil, signal, socket, subprocess, sys, tempfile, threading, time
import urllib.error, urllib.request

TOKEN = "eval-token"
SECRET_WORD = "periwinkle"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Api:
    def __init__(self, url):
        self.url = url

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method,
                                         headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                text = response.read()
                return response.status, (json.loads(text) if text else None)
        except urllib.error.HTTPError as error:
            text = error.read()
            return error.code, (json.loads(text) if text else None)

    def state(self, key):
        return self.call("GET", f"/api/agents/default/state/{key}")[1]["value"]

    def invoke(self, tool, args):
        return self.call("POST", f"/api/agents/default/tools/{tool}/invoke", args)

    def document(self, kind):
        return self.call("GET", f"/api/agents/default/documents/{kind}")[1]

    def executions(self, tool):
        return self.call("GET", f"/api/agents/default/executions?tool={tool}")[1]


def text_of(value):
    return json.dumps(value).lower() if not isinstance(value, str) else value.lower()


def db_rows(api, sql):
    status, result = api.invoke("db_sql", {"sql": sql})
    return result.get("rows", []) if status == 200 and isinstance(result, dict) else []


def any_success(api, tool, predicate=lambda args: True):
    return any(e["success"] and predicate(e["args"]) for e in api.executions(tool) or [] if e["caller"] == "agent")


# name, message, setup(api), answer(pending) -> answer value or None, check(api) -> bool
TASKS = [
    ("note_preference", "Remember in your learned notes that I prefer tea over coffee.",
     None, None, lambda api: "tea" in text_of(api.document("learned_notes"))),
    ("state_set", "Save my favourite colour, green, in your state under the key favourite_colour.",
     None, None, lambda api: "green" in text_of(api.state("favourite_colour"))),
    ("state_read", "Read the value stored in your state under the key city and tell me what it is.",
     lambda api: api.call("PUT", "/api/agents/default/state/city", "Oslo"), None,
     lambda api: any_success(api, "get_state", lambda a: a.get("key") == "city")),
    ("state_delete", "Delete the key temp from your state.",
     lambda api: api.call("PUT", "/api/agents/default/state/temp", 1), None,
     lambda api: api.state("temp") is None),
    ("db_create_table", "Create a table called books with the columns title and author in your database.",
     None, None, lambda api: any(r for r in db_rows(api, "SELECT name FROM sqlite_master WHERE name = 'books'"))),
    ("db_insert_query", "Add the book Dune by Frank Herbert to the books table in your database.",
     lambda api: api.invoke("db_sql", {"sql": "CREATE TABLE IF NOT EXISTS books (title TEXT, author TEXT)"}), None,
     lambda api: bool(db_rows(api, "SELECT 1 FROM books WHERE title LIKE '%Dune%'"))),
    ("tool_write", "Create a tool called add_numbers that takes two numbers a and b and returns their sum.",
     None, None, lambda api: any(t["name"] == "add_numbers" for t in api.call("GET", "/api/agents/default/agent-tools")[1])),
    ("tool_call", "Use your tool double to double the number 21.",
     lambda api: (api.invoke("create_tool", {"name": "double", "description": "Doubles a number n.",
                                             "parameter_schema": {"type": "object", "properties": {"n": {"type": "number"}}, "required": ["n"]},
                                             "code": "return args.n * 2;"}),
                  api.invoke("enable_tool", {"name": "double"})), None,
     lambda api: any_success(api, "double")),
    ("sandbox_code", "Use run_sandbox_code to compute 17 * 23, then save the result in your state under the key product.",
     None, None, lambda api: "391" in text_of(api.state("product"))),
    ("edit_prompt", "Add the sentence 'Always answer in English.' to the end of your system prompt.",
     None, None, lambda api: "always answer in english" in text_of(api.document("system_prompt"))),
    ("ask_user", "Ask me with ask_user which city I live in, then save my answer in your state under the key home_city.",
     None, lambda pending: {"answer": "Bergen"}, lambda api: "bergen" in text_of(api.state("home_city"))),
    ("form", "Show me a form with render_blocks that asks for my name.",
     None, lambda pending: {"action": "submit", "data": {"name": "Ada"}} if pending["tool_name"] == "render_blocks" else {"answer": "Ada"},
     lambda api: FORM_SEEN.get("seen", False)),
    ("fetch_local", "Fetch the page {page_url} and save the single word on it in your state under the key secret.",
     None, None, lambda api: SECRET_WORD in text_of(api.state("secret"))),
]
FORM_SEEN = {}


def schedule_at(api, prefixes):
    """A live schedule whose next run starts with one of `prefixes` (UTC, `YYYY-MM-DDTHH:MM`)."""
    status, schedules = api.call("GET", "/api/agents/default/schedules")
    return status == 200 and any((s.get("next_run_at") or "").startswith(tuple(prefixes)) for s in schedules)


def next_monday(today):
    days = (7 - today.weekday()) % 7 or 7
    return [(today + datetime.timedelta(days=d)).isoformat() for d in (days, days + 7)]


TODAY = datetime.datetime.now(datetime.timezone.utc).date()
# Issue 32: tasks that need the date (Wright's zone is UTC by default, as on this machine) and
# two-step tasks of other shapes than the suite's (compute then save, read then note).
TASKS += [
    ("remind_tomorrow", "Remind me tomorrow at 9:00 to call the dentist.",
     None, None, lambda api: schedule_at(api, [f"{TODAY + datetime.timedelta(days=1)}T09:00"])),
    ("remind_next_monday", "Remind me next Monday at 8:30 to send the weekly report.",
     None, None, lambda api: schedule_at(api, [f"{d}T08:30" for d in next_monday(TODAY)])),
    ("date_today", "What is today's date? Save it in your state under the key today, written as YYYY-MM-DD.",
     None, None, lambda api: TODAY.isoformat() in text_of(api.state("today"))),
    ("compute_save", "Compute 12 * 12 with run_sandbox_code, then save the result in your state under the key gross.",
     None, None, lambda api: "144" in text_of(api.state("gross"))),
    ("read_then_note", "Read the key town from your state, then add it to your learned notes as my home town.",
     lambda api: api.call("PUT", "/api/agents/default/state/town", "Tromso"), None,
     lambda api: "tromso" in text_of(api.document("learned_notes"))),
]


class Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = f"<html><body><p>{SECRET_WORD}</p></body></html>".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class LlamaServer:
    def __init__(self, args, log_path):
        self.port = free_port()
        self.log_path = log_path
        self.log = open(log_path, "w")
        env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")
        self.process = subprocess.Popen([args.python, args.serve, args.model, str(self.port), "16384", "2"],
                                        stdout=self.log, stderr=subprocess.STDOUT, env=env)
        for _ in range(480):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except Exception:
                pass
            if self.process.poll() is not None:
                raise SystemExit(f"the model server exited: {open(log_path).read()[-2000:]}")
            time.sleep(0.25)
        raise SystemExit("the model server did not become healthy")

    def offset(self):
        self.log.flush()
        return os.path.getsize(self.log_path)

    def requests_since(self, offset):
        """(n_prompt_tokens, prompt_eval_ms, prompt_eval_tokens) of every request since offset."""
        with open(self.log_path, errors="replace") as f:
            f.seek(offset)
            text = f.read()
        prompts = [int(n) for n in re.findall(r"(?:task\.n_tokens|n_prompt_tokens) = (\d+)", text)]
        evals = [(float(ms), int(n)) for ms, n in re.findall(r"prompt eval time =\s+([\d.]+) ms /\s+(\d+) tokens", text)]
        return prompts, evals

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()


class Wright:
    def __init__(self, args, llama, mode, config_toml):
        self.dir = tempfile.mkdtemp(prefix="wright-eval-")
        with open(os.path.join(self.dir, "config.toml"), "w") as f:
            f.write(config_toml)
        env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", ""), "WRIGHT_TOKEN": TOKEN,
               "OPENAI_BASE_URL": f"http://127.0.0.1:{llama.port}/v1", "WRIGHT_MODEL": "openai-compatible/qwen"}
        if mode == "text":
            env["WRIGHT_TOOL_CALLS"] = "text"
        if args.temperature:
            env["WRIGHT_TEMPERATURE"] = args.temperature
        self.log = open(os.path.join(self.dir, "serve.log"), "w")
        self.process = subprocess.Popen([args.wright, "--data-dir", self.dir, "serve", "--bind", "127.0.0.1:0"],
                                        stdout=subprocess.PIPE, stderr=self.log, env=env, text=True)
        for line in self.process.stdout:
            found = re.search(r"http://[0-9.:]+", line)
            if found:
                self.api = Api(found.group(0))
                break
        threading.Thread(target=lambda: [None for _ in self.process.stdout], daemon=True).start()

    def stop(self):
        if self.process.poll() is not None:
            # Wright is not supposed to exit on its own: keep its log and say where it is.
            print(f"wright serve exited ({self.process.returncode}); its log: {self.dir}/serve.log", flush=True)
            return
        self.process.terminate()
        self.process.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)


def run_task(api, task, page_url, timeout, dump):
    name, message, setup, answer, check = task
    if setup:
        setup(api)
    status, created = api.call("POST", "/api/agents/default/conversations", {"title": name})
    cid = created["id"]
    api.call("POST", f"/api/conversations/{cid}/messages", {"text": message.format(page_url=page_url)})
    started = time.time()
    answered = set()
    while True:
        time.sleep(1)
        detail = api.call("GET", f"/api/conversations/{cid}")[1]
        status = detail["conversation"]["status"]
        events = detail["events"]
        if name == "form" and any(e["kind"] == "tool_call" and e.get("name") == "render_blocks"
                                  and "form" in json.dumps(e.get("arguments")) for e in events):
            FORM_SEEN["seen"] = True
        if status == "waiting":
            pending = [p for p in detail.get("pending", []) if p["tool_call_id"] not in answered]
            if pending and answer:
                p = pending[0]
                answered.add(p["tool_call_id"])
                api.call("POST", f"/api/conversations/{cid}/pending/{p['tool_call_id']}", {"answer": answer(p)})
                continue
            if not pending or not answer:
                break
        elif status != "running" and events and events[-1]["kind"] != "user":
            break
        if time.time() - started > timeout:
            api.call("POST", f"/api/conversations/{cid}/cancel", {})
            time.sleep(2)
            detail = api.call("GET", f"/api/conversations/{cid}")[1]
            break
    wall = time.time() - started
    with open(dump, "w") as f:
        json.dump(detail, f, indent=1)
    events = detail["events"]
    turns = sum(1 for e in events if e["kind"] == "assistant")
    calls = [e.get("name") for e in events if e["kind"] == "tool_call"]
    try:
        ok = bool(check(api))
    except Exception as error:  # a check that cannot read its data is a failure, with the reason
        ok = False
        calls.append(f"check failed: {error}")
    return ok, turns, calls, wall, detail["conversation"]["status"]


def measure(args, out):
    """Time to first token with the defaults: the first message of a first conversation, the
    first message of a second conversation after it (the shared prefix is cached), and the second
    message of that conversation. From the llama.cpp server's own log: prompt tokens, tokens it
    had to read (not cached), and its prompt-eval time, after which the first token comes."""
    rows = []
    llama = LlamaServer(args, os.path.join(out, "llama-measure.log"))
    wright = Wright(args, llama, "native", "")
    try:
        steps = [("first message, first conversation", "Hello! What can you do?", True),
                 ("first message, second conversation", "Save my favourite colour, green, in your state under the key favourite_colour.", True),
                 ("second message, same conversation", "What is my favourite colour?", False)]
        cid = None
        for label, text, new in steps:
            if new:
                cid = wright.api.call("POST", "/api/agents/default/conversations", {"title": "m"})[1]["id"]
            offset = llama.offset()
            sent = time.time()
            wright.api.call("POST", f"/api/conversations/{cid}/messages", {"text": text})
            while True:
                time.sleep(0.5)
                detail = wright.api.call("GET", f"/api/conversations/{cid}")[1]
                if detail["conversation"]["status"] != "running" or time.time() - sent > 600:
                    break
            wall = time.time() - sent
            prompts, evals = llama.requests_since(offset)
            first_eval = evals[0] if evals else (None, None)
            rows.append((label, prompts[0] if prompts else None, first_eval[1], first_eval[0] and first_eval[0] / 1000,
                         len(prompts), wall))
            print(rows[-1], flush=True)
    finally:
        wright.stop()
        llama.stop()
    return rows


def main():
    parser = argparse.ArgumentParser()
    for name in ["size", "modes", "tasks", "model", "python", "serve", "wright"]:
        parser.add_argument(f"--{name}", required=True)
    parser.add_argument("--measure", default="1")
    parser.add_argument("--task-timeout", type=int, default=420)
    parser.add_argument("--temperature", default="")
    parser.add_argument("--agent-config", default="")
    parser.add_argument("--suffix", default="")
    args = parser.parse_args()
    out = tempfile.mkdtemp(prefix="wright-eval-logs-")
    page_port = free_port()
    page_server = http.server.ThreadingHTTPServer(("127.0.0.1", page_port), Page)
    threading.Thread(target=page_server.serve_forever, daemon=True).start()
    page_url = f"http://127.0.0.1:{page_port}/"
    config = f'[egress]\nallow = ["127.0.0.1:{page_port}"]\n'
    if args.agent_config:
        config += "\n[agent]\n" + args.agent_config.replace(";", "\n") + "\n"
    selected = [t for t in TASKS if not args.tasks or t[0] in args.tasks.split(",")]
    date = datetime.date.today().isoformat()
    lines = [f"# Real-model evaluation, {date}", "",
             f"Model: Qwen2.5-Coder-{args.size.upper()}-Instruct Q4_K_M on llama.cpp (xllamacpp, 2 threads, n_ctx 16384), "
             f"default agent with default tool settings. Script: `scripts/eval-real-model.sh {args.size}`. "
             "Success is judged from what Wright stored; prompt tokens are the llama.cpp server's own count, "
             "summed over the task's requests (most of it served from its prompt cache). Sampling temperature: "
             + (f"{args.temperature} (`WRIGHT_TEMPERATURE`)." if args.temperature else "as the model profile chose (no setting)."),
             f"Machine load (1/5/15 min) at the start: {' '.join(open('/proc/loadavg').read().split()[:3])}."
             + (f" `[agent]` settings: `{args.agent_config}`." if args.agent_config else ""), ""]
    if args.measure == "1":
        lines += ["## First requests and the prompt cache (native, defaults)", "",
                  "| message | prompt tokens (first request) | tokens read (not cached) | prompt eval = time to first token (s) | requests | wall (s) |",
                  "|---|---|---|---|---|---|"]
        for label, tokens, read, eval_s, requests, wall in measure(args, out):
            lines.append(f"| {label} | {tokens} | {read} | {eval_s and round(eval_s, 1)} | {requests} | {wall:.0f} |")
            print(lines[-1], flush=True)
        lines.append("")
    for mode in args.modes.split(","):
        llama = LlamaServer(args, os.path.join(out, f"llama-{mode}.log"))
        wright = Wright(args, llama, mode, config)
        results = []
        try:
            for task in selected:
                offset = llama.offset()
                dump = os.path.join(out, f"{mode}-{task[0]}.json")
                ok, turns, calls, wall, status = run_task(wright.api, task, page_url, args.task_timeout, dump)
                prompts, _ = llama.requests_since(offset)
                results.append((task[0], ok, turns, sum(prompts), len(prompts), wall, status, calls))
                print(mode, results[-1], flush=True)
        finally:
            wright.stop()
            llama.stop()
        passed = sum(1 for r in results if r[1])
        lines += [f"## {mode} tool calls: {passed}/{len(results)} ({100 * passed // max(len(results), 1)} %)", "",
                  "| task | success | turns | requests | prompt tokens | wall (s) | end status | calls |",
                  "|---|---|---|---|---|---|---|---|"]
        for name, ok, turns, tokens, requests, wall, status, calls in results:
            lines.append(f"| {name} | {'yes' if ok else 'no'} | {turns} | {requests} | {tokens} | {wall:.0f} | {status} | {', '.join(map(str, calls))} |")
        lines.append("")
    lines.append(f"Machine load (1/5/15 min) at the end: {' '.join(open('/proc/loadavg').read().split()[:3])}.")
    path = f"docs/eval-real-model-{args.size}-{date}{args.suffix}.md"
    with open(path, "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))
    print(f"written to {path}; llama.cpp logs in {out}")


if __name__ == "__main__":
    main()
