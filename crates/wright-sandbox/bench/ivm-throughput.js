"use strict";
// isolated-vm's throughput on the peers' workloads from several processes at once, to set
// against `sandbox_run --concurrency C` (a pool of C workers):
//
//   node --no-node-snapshot ivm-throughput.js PEERS_DIR WORKLOAD [PROCESSES=2] [CALLS=2000] [MODE=cold|warm]
//
// Each process runs the peers' own `ivm-cold` (new Isolate + context + compile + run + dispose
// per call) or `ivm-warm` (one Isolate, new context per call) code path, with the peers' program
// text and limits (harness/lib.js), checks every result against expected/, warms up, waits
// for the others, then runs CALLS/PROCESSES calls. Prints {"calls_per_s", ...} as JSON.
const path = require("path");
const { fork } = require("child_process");

const [peersDir, workload, processesArg, callsArg, modeArg] = process.argv.slice(2);
const processes = Number(processesArg || 2);
const calls = Number(callsArg || 2000);
const mode = modeArg || "cold";
const lib = require(path.join(path.resolve(peersDir), "harness", "lib.js"));

if (process.send) {
  // A child: one caller.
  const ivm = require(path.join(path.resolve(peersDir), "node_modules", "isolated-vm"));
  const w = lib.loadWorkload(workload);
  let isolate = mode === "warm" ? new ivm.Isolate({ memoryLimit: lib.LIMITS.memoryMB }) : null;
  let nonce = 0;
  const once = () => {
    const own = mode === "warm" ? isolate : new ivm.Isolate({ memoryLimit: lib.LIMITS.memoryMB });
    const context = own.createContextSync();
    let script;
    try {
      script = own.compileScriptSync(lib.valueProgram(w, `${process.pid}-${nonce++}`));
      const out = script.runSync(context, { timeout: lib.LIMITS.runTimeoutMs });
      if (out !== w.expected) throw new Error(`wrong result: ${String(out).slice(0, 80)}`);
    } finally {
      if (script) script.release();
      context.release();
      if (mode !== "warm") own.dispose();
    }
  };
  const mine = Number(process.env.IVM_CALLS);
  for (let i = 0; i < Math.min(200, mine); i++) once();
  process.send({ ready: true });
  process.on("message", () => {
    const started = process.hrtime.bigint();
    for (let i = 0; i < mine; i++) once();
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    process.send({ done: true, ms, calls: mine });
    process.exit(0);
  });
} else {
  const children = [];
  let ready = 0;
  const results = [];
  let started;
  for (let i = 0; i < processes; i++) {
    const share = Math.floor(calls / processes) + (i < calls % processes ? 1 : 0);
    const child = fork(__filename, process.argv.slice(2), {
      execArgv: ["--no-node-snapshot"],
      env: { ...process.env, IVM_CALLS: String(share) },
    });
    child.on("message", (message) => {
      if (message.ready && ++ready === processes) {
        // Everyone warmed up: start together, time from here to the last one done.
        started = process.hrtime.bigint();
        for (const c of children) c.send({ go: true });
      }
      if (message.done) {
        results.push(message);
        if (results.length === processes) {
          const seconds = Number(process.hrtime.bigint() - started) / 1e9;
          console.log(JSON.stringify({ peer: `ivm-${mode}`, workload, processes, calls, seconds, calls_per_s: calls / seconds }));
        }
      }
    });
    children.push(child);
  }
}
