//! The confined shell's network forwarder (see `network.rs`): the tests' stand-in for the
//! `wright` binary's hidden subcommand, which calls the same function.

fn main() -> std::process::ExitCode {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    wright_workspace::forward_main(&arguments)
}
