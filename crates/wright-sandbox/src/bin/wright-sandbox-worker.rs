//! A sandbox worker process: the pool starts it, talks to it over stdin/stdout, and kills it when
//! a call overruns. Used by tests and benchmarks; the `wright` binary has the same behind a
//! hidden subcommand.

fn main() {
    wright_sandbox::worker_main();
}
