#!/usr/bin/env python3
"""The learning evaluation behind scripts/eval-learning.sh (read its header).

Task families, each with paraphrased variants split into a training half and a held-out half.
Every variant is a message and a check judged by Wright itself from stored data (a case's
check: state, notes, the agent's database, a tool that succeeded, a file, a call that waits).
Each variant uses its own key, table, file or value, so a check never passes on what an
earlier variant left.

1. The training variants run as real conversations of a fresh agent; each is labelled with
   its check (a case made from the conversation: the check, judged on the data the run left,
   becomes the run's outcome).
2. The held-out variants become cases from their message alone.
3. One learning round: candidates from the training runs, the held-out cases replayed (at
   temperature 0, in scratch copies of the agent's data) before, with each candidate, and
   after with every accepted one.
4. The report: held-out passes before and after, regressions (a case that passed before and
   fails after), the items accepted and the tokens they add to a request, the round's time.
"""
import argparse, datetime, json, os, shutil, signal, socket, subprocess, sys, tempfile, threading, time
import urllib.error, urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from eval_real_model import Api, LlamaServer, TOKEN  # noqa: E402

# (family, [(message, check)]): the first half of each list trains, the second is held out.
FAMILIES = [
    ("preference in state", [
        ("Remember that my favourite colour is green. Save it in your state under favourite_colour.",
         {"type": "state_equals", "key": "favourite_colour", "value": "green"}),
        ("Please store my shoe size, 42, in your key-value state as shoe_size.",
         {"type": "state_equals", "key": "shoe_size", "value": 42}),
        ("Keep in your state that my favourite drink is tea (key favourite_drink).",
         {"type": "state_equals", "key": "favourite_drink", "value": "tea"}),
        ("Save my home city, Lyon, to your state under the key home_city.",
         {"type": "state_equals", "key": "home_city", "value": "Lyon"}),
    ]),
    ("typed state value", [
        ("Set the state key daily_steps_goal to the number 8000.",
         {"type": "state_equals", "key": "daily_steps_goal", "value": 8000}),
        ("Store true under the state key newsletter_opt_in.",
         {"type": "state_equals", "key": "newsletter_opt_in", "value": True}),
        ("Put the list [\"milk\", \"eggs\"] in state under shopping_list.",
         {"type": "state_equals", "key": "shopping_list", "value": ["milk", "eggs"]}),
        ("Save the number 3 as state key kids_count.",
         {"type": "state_equals", "key": "kids_count", "value": 3}),
    ]),
    ("a table and rows", [
        ("Create a table expenses (item TEXT, amount REAL) in your database and add coffee costing 3.5.",
         {"type": "db_count", "sql": "SELECT COUNT(*) FROM expenses", "min": 1}),
        ("Make a database table books (title TEXT) and insert the book Dune.",
         {"type": "db_count", "sql": "SELECT COUNT(*) FROM books", "min": 1}),
        ("In your database, create a table plants (name TEXT) and record a fern.",
         {"type": "db_count", "sql": "SELECT COUNT(*) FROM plants", "min": 1}),
        ("Create a workouts table (kind TEXT, minutes INTEGER) and log a 30 minute run.",
         {"type": "db_count", "sql": "SELECT COUNT(*) FROM workouts", "min": 1}),
    ]),
    ("a note in the learned notes", [
        ("Add to your learned notes that I prefer metric units.",
         {"type": "notes_contain", "text": "metric"}),
        ("Write in your learned notes that I am vegetarian.",
         {"type": "notes_contain", "text": "vegetarian"}),
        ("Note in your learned notes that my timezone is Europe/Paris.",
         {"type": "notes_contain", "text": "Europe/Paris"}),
        ("Put in your learned notes that I like short answers.",
         {"type": "notes_contain", "text": "short"}),
    ]),
    ("code as a calculator", [
        ("Use run_sandbox_code to compute 1234 * 5678 and tell me the result.",
         {"type": "tool_succeeded", "tool": "run_sandbox_code"}),
        ("Run JavaScript in the sandbox to sum the numbers 1 to 100.",
         {"type": "tool_succeeded", "tool": "run_sandbox_code"}),
        ("Calculate 2 to the power of 20 with run_sandbox_code.",
         {"type": "tool_succeeded", "tool": "run_sandbox_code"}),
        ("Use code in the sandbox to find 17 factorial.",
         {"type": "tool_succeeded", "tool": "run_sandbox_code"}),
    ]),
    ("a file in the workspace", [
        ("Write a file todo.txt in your workspace containing the line buy bread.",
         {"type": "file_contains", "path": "todo.txt", "text": "buy bread"}),
        ("Create notes.md in the workspace with the text hello world.",
         {"type": "file_contains", "path": "notes.md", "text": "hello world"}),
        ("Save a file called plan.txt in your workspace that says call mom.",
         {"type": "file_contains", "path": "plan.txt", "text": "call mom"}),
        ("Put the word banana in a new workspace file fruit.txt.",
         {"type": "file_contains", "path": "fruit.txt", "text": "banana"}),
    ]),
    ("a question with buttons", [
        ("Ask me with ask_user whether I want tea or coffee, with both as options.",
         {"type": "pending_call", "tool": "ask_user"}),
        ("Use ask_user to ask if I prefer the beach or the mountains (give options).",
         {"type": "pending_call", "tool": "ask_user"}),
        ("Ask me, with buttons via ask_user, whether to book the train or the plane.",
         {"type": "pending_call", "tool": "ask_user"}),
        ("Use ask_user to let me pick red or blue.",
         {"type": "pending_call", "tool": "ask_user"}),
    ]),
    ("a schedule", [
        ("Schedule a reminder every day at 8:00 to drink water.",
         {"type": "tool_succeeded", "tool": "schedule"}),
        ("Set up a schedule every Monday at 9:00 to review my week.",
         {"type": "tool_succeeded", "tool": "schedule"}),
        ("Create a daily 22:00 schedule reminding me to go to bed.",
         {"type": "tool_succeeded", "tool": "schedule"}),
        ("Schedule a weekly Friday 17:00 reminder to water the plants.",
         {"type": "tool_succeeded", "tool": "schedule"}),
    ]),
    ("a tool written and used", [
        ("Create a tool named double that returns twice its number argument n, then call it with 21.",
         {"type": "tool_succeeded", "tool": "double"}),
        ("Write a tool greet that returns 'hi ' plus a name argument, then use it for Ada.",
         {"type": "tool_succeeded", "tool": "greet"}),
        ("Make a tool celsius_to_f converting argument c to Fahrenheit and call it with 100.",
         {"type": "tool_succeeded", "tool": "celsius_to_f"}),
        ("Create a tool shout that uppercases its text argument and use it on hello.",
         {"type": "tool_succeeded", "tool": "shout"}),
    ]),
]


def settle(api, cid, timeout):
    started = time.time()
    while True:
        time.sleep(1)
        detail = api.call("GET", f"/api/conversations/{cid}")[1]
        status, events = detail["conversation"]["status"], detail["events"]
        if status == "waiting" or (status != "running" and events and events[-1]["kind"] != "user"):
            return time.time() - started
        if time.time() - started > timeout:
            api.call("POST", f"/api/conversations/{cid}/cancel", {})
            time.sleep(2)
            return time.time() - started


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--python", required=True)
    parser.add_argument("--serve", required=True)
    parser.add_argument("--wright", required=True)
    parser.add_argument("--families", default="", help="comma-separated family numbers (1-based); all by default")
    parser.add_argument("--task-timeout", type=int, default=420)
    parser.add_argument("--round-timeout", type=int, default=14400)
    parser.add_argument("--temperature", default="")
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    chosen = [FAMILIES[int(n) - 1] for n in args.families.split(",") if n] if args.families else FAMILIES

    work = tempfile.mkdtemp(prefix="wright-eval-learning-")
    llama = LlamaServer(args, os.path.join(work, "llama.log"))
    data = os.path.join(work, "data")
    os.makedirs(data)
    with open(os.path.join(data, "config.toml"), "w") as f:
        # Every replay gets as long as a task; the round looks at every training run.
        f.write(f"[learning]\nreplay_timeout_secs = {args.task_timeout}\nrecent_runs = 200\nmax_candidates = {2 * len(chosen)}\n")
    env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", ""), "WRIGHT_TOKEN": TOKEN,
           "OPENAI_BASE_URL": f"http://127.0.0.1:{llama.port}/v1", "WRIGHT_MODEL": "openai-compatible/qwen"}
    if args.temperature:
        env["WRIGHT_TEMPERATURE"] = args.temperature
    log = open(os.path.join(work, "serve.log"), "w")
    process = subprocess.Popen([args.wright, "--data-dir", data, "serve", "--bind", "127.0.0.1:0"],
                               stdout=subprocess.PIPE, stderr=log, env=env, text=True)
    api = None
    for line in process.stdout:
        if "http://" in line:
            api = Api(line.strip().rsplit(" ", 1)[-1])
            break
    threading.Thread(target=lambda: [None for _ in process.stdout], daemon=True).start()
    rows = []
    trained = []
    load_at_start = " ".join(open("/proc/loadavg").read().split()[:3])
    started_training = time.time()
    try:
        # 1. Training variants, run and labelled with their checks.
        for family, variants in chosen:
            half = len(variants) // 2
            for message, check in variants[:half]:
                cid = api.call("POST", "/api/agents/default/conversations", {"title": family})[1]["id"]
                api.call("POST", f"/api/conversations/{cid}/messages", {"text": message})
                wall = settle(api, cid, args.task_timeout)
                status, case = api.call("POST", "/api/agents/default/cases", {"conversation_id": cid, "check": check})
                outcome = api.call("GET", f"/api/conversations/{cid}/outcomes")[1]
                passed = bool(outcome) and outcome[0]["outcome"] == "success"
                print(f"train  {family:28} {'pass' if passed else 'fail'} {wall:6.0f}s  {message[:60]}", flush=True)
                trained.append((message, passed))
            # 2. Held-out variants, as cases from their message.
            for message, check in variants[half:]:
                api.call("POST", "/api/agents/default/cases", {"message": message, "check": check})
        # 3. One round.
        training_time = time.time() - started_training
        started = time.time()
        status, round_ = api.call("POST", "/api/agents/default/learning/rounds")
        rid = round_["id"]
        while True:
            time.sleep(5)
            detail = api.call("GET", f"/api/agents/default/learning/rounds/{rid}")[1]
            if detail["round"]["status"] != "running" or time.time() - started > args.round_timeout:
                break
            print(f"round {rid}: {detail['round']['replays_done']} of {detail['round']['replays_total']} replays", flush=True)
        round_time = time.time() - started
        r = detail["round"]
        # The held-out variants only: a training run's case stays in the round's held-out set
        # when no candidate was learned from it, but it is not held out for this evaluation.
        held_messages = {message for _, variants in chosen for message, _ in variants[len(variants) // 2:]}
        cases = [c for c in detail["cases"] if c["message"] in held_messages]
        before = sum(1 for c in cases if c["before"])
        after = sum(1 for c in cases if (c["after"] if c["after"] is not None else c["before"]))
        regressions = [c for c in cases if c["before"] and c["after"] is False]
        accepted = [c for c in detail["candidates"] if c["decision"] in ("accepted", "awaiting_approval")]
        tokens = sum(c["added_tokens"] for c in accepted)
        total = len(cases)
        pct = lambda n: f"{100 * n / total:.0f}%" if total else "—"
        date = datetime.date.today().isoformat()
        lines = [
            f"# Learning evaluation, {date}, Qwen2.5-Coder {args.size}",
            "",
            f"Round {rid} ({r['status']}{', ' + r['error'] if r.get('error') else ''}): {len(chosen)} families, "
            f"{total} held-out cases, {len(detail['candidates'])} candidates, {len(accepted)} accepted.",
            "",
            "| held-out before | held-out after | regressions | accepted items | added tokens | round time |",
            "|---|---|---|---|---|---|",
            f"| {before}/{total} ({pct(before)}) | {after}/{total} ({pct(after)}) | {len(regressions)} | {len(accepted)} | {tokens} | {round_time:.0f} s |",
            "",
            "| candidate | kind | decision | reason |",
            "|---|---|---|---|",
        ]
        for c in detail["candidates"]:
            text = c["item"]["text"].replace("|", "\\|").replace("\n", " ")[:90]
            lines.append(f"| #{c['item']['id']} {text} | {c['item']['kind']} | {c['decision']} | {(c['reason'] or '').replace('|', '/')} |")
        lines += ["", "| held-out case | before | after (every accepted item) |", "|---|---|---|"]
        for c in cases:
            after = c["after"] if c["after"] is not None else "(as before: nothing accepted)"
            lines.append(f"| {c['message'][:70]} | {c['before']} | {after} |")
        lines += ["", "| training run | check |", "|---|---|"] + [f"| {m[:70]} | {'pass' if p else 'fail'} |" for m, p in trained]
        lines += ["", f"Machine load (1/5/15 min) at the start: {load_at_start}; training took {training_time:.0f} s."]
        report = "\n".join(lines) + "\n"
        print(report)
        out = args.out or os.path.join("docs", f"eval-learning-{date}-{args.size}.md")
        with open(out, "w") as f:
            f.write(report)
        print(f"written to {out}")
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
        llama.stop()
        print(f"logs in {work}", flush=True)


if __name__ == "__main__":
    main()
